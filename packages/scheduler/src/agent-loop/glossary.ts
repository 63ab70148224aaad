import { readTable, ZH_SERVICE_WORDS } from './zh-service-words.js';

/**
 * What the vocabulary knows beyond an agent's own words: a bilingual glossary of the words users of
 * service desks write in Chinese, with their English equivalents (tools are mostly described in
 * English), the Chinese words that carry no topic, and the words many domains share (so one of them
 * alone does not place a request within an agent's topics). General service language, not any one
 * agent's: an agent's own tools, topics and examples stay what decides its domain.
 */

/** The words of the first desks (accounts, services, pay, money, library, lab, hotel, health, fitness). */
const DESK_WORDS: Readonly<Record<string, string>> = {
  // Accounts, computers, networks
  密码: 'password',
  账号: 'account',
  账户: 'account',
  登录: 'login account',
  登不上: 'login',
  锁了: 'locked',
  重置: 'reset',
  邮箱: 'email mail',
  电脑: 'computer laptop',
  笔记本电脑: 'laptop',
  屏幕: 'screen',
  蓝屏: 'screen crash broken computer',
  死机: 'crash broken computer',
  坏了: 'broken',
  坏: 'broken',
  报修: 'ticket repair broken',
  维修: 'repair broken',
  修: 'repair fix',
  投影仪: 'projector',
  会议室: 'meeting room',
  会议: 'meeting',
  开不了机: 'computer boot',
  打印机: 'printer',
  卡纸: 'printer jam',
  软件: 'software',
  安装: 'install',
  许可证: 'licence license',
  网络: 'network',
  内网: 'network',
  断网: 'network outage',
  连不上: 'connect',
  故障: 'outage failure incident',
  工单: 'ticket',
  // Services, deployments
  服务: 'service',
  健康: 'healthy health',
  状态: 'status',
  正常: 'healthy status',
  重启: 'restart',
  日志: 'log',
  报错: 'error',
  错误: 'error',
  发布: 'release deployment deploy',
  上线: 'release deploy',
  部署: 'deployment deploy',
  回滚: 'rollback revert',
  版本: 'release version',
  告警: 'alert',
  监控: 'monitoring',
  延迟: 'latency delay',
  生产环境: 'prod production',
  测试环境: 'staging',
  网关: 'gateway',
  // Work, pay, leave
  请假: 'leave',
  休假: 'leave',
  年假: 'annual leave',
  病假: 'sick leave',
  产假: 'parental leave',
  事假: 'unpaid leave',
  假期: 'leave vacation holiday',
  工资: 'salary pay payslip',
  工资单: 'payslip salary',
  薪水: 'salary pay',
  扣税: 'tax',
  个税: 'tax',
  社保: 'insurance benefit',
  保险: 'insurance',
  福利: 'benefit',
  报销: 'expense',
  加班: 'overtime',
  远程办公: 'remote work',
  在家办公: 'remote work home',
  规定: 'rule policy',
  制度: 'policy rule',
  政策: 'policy',
  培训: 'training workshop course',
  讲座: 'talk lecture event',
  活动: 'event',
  // Money
  发票: 'invoice',
  账单: 'bill invoice',
  付款: 'payment pay',
  支付: 'payment pay',
  付钱: 'pay payment',
  未付: 'unpaid',
  欠费: 'unpaid owe',
  欠: 'owe unpaid',
  钱: 'money fee pay',
  到期: 'due expiry expire',
  金额: 'amount',
  退款: 'refund credit',
  退钱: 'refund credit',
  退给: 'refund credit',
  多收: 'charged overcharged',
  多扣: 'charged overcharged',
  扣款: 'charge payment',
  信用卡: 'credit card',
  银行转账: 'bank transfer',
  付款方式: 'payment method',
  罚款: 'fine fee',
  滞纳金: 'fine fee late overdue',
  逾期: 'overdue late',
  费用: 'fee cost charge',
  // Library
  图书馆: 'library',
  借书: 'borrow book loan',
  借: 'borrow loan',
  还书: 'return book',
  续借: 'renew loan',
  书: 'book',
  图书: 'book',
  期刊: 'journal',
  文献: 'journal article literature',
  馆藏: 'catalogue collection',
  自习室: 'study room',
  研讨室: 'study room group',
  座位: 'seat',
  阅览室: 'reading room',
  // Lab
  实验: 'experiment',
  实验室: 'lab laboratory',
  实验记录: 'notebook experiment',
  试剂: 'reagent',
  库存: 'stock inventory',
  仪器: 'instrument',
  离心机: 'centrifuge',
  显微镜: 'microscope',
  测序仪: 'sequencer',
  培养箱: 'incubator',
  冰箱: 'fridge freezer',
  冰柜: 'freezer',
  温度: 'temperature',
  湿度: 'humidity',
  传感器: 'sensor',
  // Hotel
  酒店: 'hotel',
  入住: 'check in stay',
  退房: 'check out checkout',
  离店: 'check out departure',
  续住: 'extend stay night',
  住: 'stay',
  房间: 'room',
  房型: 'room type',
  大床房: 'double room',
  双床房: 'twin room',
  套房: 'suite',
  毛巾: 'towel',
  浴巾: 'towel',
  枕头: 'pillow',
  被子: 'blanket',
  打扫: 'clean cleaning',
  清洁: 'clean cleaning',
  早餐: 'breakfast',
  送餐: 'room service food',
  // Health
  挂号: 'appointment book',
  医生: 'doctor',
  专家: 'doctor specialist',
  门诊: 'clinic appointment',
  内科: 'general department',
  儿科: 'pediatrics pediatrician',
  皮肤科: 'dermatology dermatologist',
  眼科: 'ophthalmology eye',
  牙科: 'dental dentist',
  心内科: 'cardiology',
  复诊: 'appointment',
  坐诊: 'doctor see patient',
  出诊: 'doctor see patient',
  化验: 'lab test',
  抽血: 'blood test',
  报告: 'report result',
  结果: 'result',
  处方: 'prescription',
  药: 'medication medicine',
  开药: 'prescription medication',
  续开: 'refill renew',
  // Fitness
  会员: 'membership member',
  会员卡: 'membership card',
  年卡: 'membership plan',
  次卡: 'pass visit',
  冻结: 'freeze suspend',
  暂停: 'pause suspend freeze',
  课: 'class',
  课程: 'class course',
  团课: 'group class',
  团体课: 'group class',
  课表: 'timetable class',
  私教: 'personal trainer',
  教练: 'trainer',
  健身: 'fitness gym',
  瑜伽: 'yoga',
  普拉提: 'pilates',
  单车: 'spinning',
  搏击: 'boxing',
  // Shops and restaurants
  营业: 'open opening hours',
  营业时间: 'opening hours',
  开门: 'open opening',
  关门: 'close closing',
  餐厅: 'restaurant',
  菜单: 'menu',
  桌: 'table',
  位子: 'seat table',
  // Orders and shipping
  订单: 'order',
  快递: 'parcel shipping delivery',
  包裹: 'parcel',
  发货: 'shipped shipping',
  物流: 'shipping delivery',
  // Actions
  预约: 'book reserve appointment',
  预订: 'book reserve reservation',
  订: 'book reserve',
  订阅: 'subscribe subscription',
  取消: 'cancel',
  申请: 'request apply',
  查询: 'check',
  改成: 'change',
  换成: 'change',
  修改: 'change',
  延长: 'extend',
  报名: 'sign up book',
  记录: 'record log note',
  记到: 'record note',
};

/**
 * Chinese words and their English equivalents (space-separated), longest match first when read: the
 * service words of many domains (`zh-service-words.ts`) and, below, those of the desks the benchmarks
 * began with; a word in both has the English of each.
 */
export const ZH_GLOSSARY: Readonly<Record<string, string>> = readTable([
  ...Object.entries(ZH_SERVICE_WORDS).map(([word, english]) => `${word} ${english}`),
  ...Object.entries(DESK_WORDS).map(([word, english]) => `${word} ${english}`),
]);

/**
 * Chinese words that carry no topic: question words (colloquial ones too: 咋, 啥, 多久), time words,
 * request phrases (帮我, 能不能, 赶紧, 搞定), and politeness and closing phrases (谢谢, 好的, 不好意思),
 * which neither place a request within a domain nor weigh against it.
 */
export const ZH_STOP_WORDS: ReadonlySet<string> = new Set(
  (
    '咋 咋办 咋弄 咋整 咋样 啥 啥时候 为啥 干啥 怎么办 怎么回事 多久 多长时间 几时 是否 行不行 好不好 ' +
    '可以吗 能吗 行吗 对吗 在吗 帮我 帮 给我 替我 请帮 请你 想问 问一下 问问 赶紧 赶快 快点 马上 尽快 ' +
    '搞定 弄 弄一下 搞 整 一下子 下 呗 哈 嘛 啦 咯 就是 那么 这么 这边 那边 我们 你们 他们 自己 所以 ' +
    '因为 但是 如果 然后 而且 或者 比如 其实 应该 必须 得 一定 可能 大概 好的 好吧 行 嗯 哦 噢 ' +
    '明白 了解 没问题 辛苦 辛苦了 不好意思 抱歉 对不起 打扰 打扰了 劳驾 拜托 您好 你好 亲 多谢 感谢 ' +
    '谢啦 谢了 谢谢你 谢谢您 嗯嗯 哦哦 好嘞 好滴 行吧 好了 可以的 知道了 明白了 非常 特别 真的 一般 通常 ' +
    '怎么 怎么样 怎样 如何 多少 什么 哪些 哪个 哪里 哪儿 为什么 是不是 有没有 能不能 可不可以 可以 能否 ' +
    '现在 今天 明天 后天 昨天 前天 最近 刚才 已经 还是 还有 一下 一些 一个 一点 帮忙 麻烦 请问 谢谢 知道 ' +
    '告诉 需要 想要 希望 觉得 时候 上午 下午 晚上 早上 中午 周一 周二 周三 周四 周五 周六 周日 周末 ' +
    '下周 上周 本周 这周 下个月 上个月 这个 那个 这些 那些 之前 之后 一直 总是 没有 不了 出来 过来 ' +
    '再 又 很 太 吧 啊 没 不 好 看 看看 查 查看 找 去 来 用 做 让 说 问 先 里 后 ' +
    '关于 以后 以前 才能 开始 但 别 不要 不去 不用 不想 根本 直接 合适 适合 值得 里面 外面 东西 ' +
    '家里 我家 同一 前后 之间 左右 以上 以下 以内 先把 再把 我去 我没 我不 就行 就好 一起 其他 别的'
  ).split(' '),
);

/**
 * Words many domains share: a request whose only known words are these ("which stocks should I buy",
 * "a sushi place near the office", "实验室的PCR仪怎么预约" on a library desk) is not placed within an
 * agent's topics by them. English stems (as `terms` makes them) and Chinese words.
 */
export const SHARED_TERMS: ReadonlySet<string> = new Set(
  (
    'book booking reserve reservation order stock office place account service system plan table ' +
    'ticket pass card share record store note report time day week month year number list detail ' +
    'information info status problem issue question request change cancel update add send open ' +
    '预约 预订 订 办公室 附近 地方 系统 服务 账户 记录 计划 信息 问题 情况 申请 取消 修改 时间 钱'
  ).split(' '),
);
