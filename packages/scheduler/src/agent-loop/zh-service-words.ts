/**
 * The everyday Chinese words of service requests in some thirty customer-service and business domains,
 * with their English equivalents (space-separated): what a request in Chinese says when the agent's
 * tools are described in English. A table, one domain to a block and one word to a line ("银行 bank"),
 * read once into `ZH_SERVICE_WORDS`; `glossary.ts` joins it to the words of its own. General language of
 * each domain, from no one agent: an agent's tools, topics and examples still decide what it is for.
 */

const DOMAINS: Readonly<Record<string, string>> = {
  banking: `
    银行 bank
    银行卡 bank card
    储蓄卡 debit card
    借记卡 debit card
    存款 deposit savings
    取款 withdrawal cash
    取钱 withdrawal cash
    存钱 deposit
    转账 transfer
    汇款 transfer remittance
    余额 balance
    利息 interest
    利率 interest rate
    贷款 loan
    房贷 mortgage loan
    车贷 loan car
    还款 repayment repay
    分期 instalment installment
    额度 limit credit
    挂失 lost card block
    冻结卡 freeze card block
    解冻 unfreeze unblock
    流水 statement transaction
    对账单 statement
    交易 transaction
    明细 detail statement transaction
    开户 open account
    销户 close account
    网银 online banking
    手机银行 mobile banking
    验证码 verification code
    柜台 counter branch
    网点 branch
    理财 investment wealth
    基金 fund investment
    股票 shares equities
    汇率 exchange rate
    外币 currency foreign
    换汇 currency exchange
    支票 cheque check
    信用 credit
    积分 points reward loyalty
    手续费 fee charge
    年费 annual fee
    盗刷 fraud
    诈骗 fraud scam
  `,
  insurance: `
    保单 policy insurance
    投保 insure insurance policy
    理赔 claim
    索赔 claim
    报案 claim report
    保费 premium
    续保 renew renewal policy
    退保 cancel policy surrender
    车险 car insurance
    医疗险 health insurance
    意外险 accident insurance
    寿险 life insurance
    受益人 beneficiary
    免赔额 deductible excess
    保额 coverage cover
    承保 cover coverage
    定损 assessment claim damage
    事故 accident incident
  `,
  'travel, airlines': `
    机票 flight ticket
    航班 flight
    飞机 flight plane
    起飞 departure flight
    降落 arrival landing
    登机 boarding
    登机牌 boarding pass
    值机 check in
    登机口 gate
    行李 baggage luggage
    托运 baggage checked
    行李箱 luggage suitcase
    延误 delay delayed
    改签 change rebook
    退票 refund ticket
    座位号 seat
    靠窗 window seat
    靠过道 aisle seat
    经济舱 economy class
    商务舱 business class
    头等舱 first class
    里程 miles mileage
    护照 passport
    签证 visa
    航站楼 terminal
    转机 connection transfer
    中转 connection transfer
    目的地 destination
    出发 departure depart
    到达 arrival arrive
    往返 return round trip
    单程 one way
    旅游 travel trip tour
    旅行 travel trip
    行程 itinerary trip
    跟团 tour group
    导游 guide tour
    景点 attraction sight
    门票 ticket admission
  `,
  'rail and transport': `
    火车 train
    高铁 train
    动车 train
    车票 ticket
    火车票 train ticket
    车次 train number
    二等座 second class seat
    一等座 first class seat
    卧铺 sleeper berth
    硬座 seat
    站台 platform
    车站 station
    火车站 station
    车厢 carriage coach
    检票 ticket gate
    候车 waiting
    地铁 metro subway
    公交 bus
    巴士 bus
    打车 taxi
    出租车 taxi
    司机 driver
  `,
  hotels: `
    前台 front desk reception
    客房 room
    空房 availability room vacancy
    订房 room booking
    押金 deposit
    房卡 key card room
    叫醒 wake up call
    洗衣 laundry
    停车 parking
    停车场 parking car park
    停车位 parking space
    泳池 pool
    无线网 wifi
    空调 air conditioner air conditioning
    热水 hot water
    噪音 noise noisy
    吵 noise noisy
    隔音 noise
  `,
  restaurants: `
    餐馆 restaurant
    饭店 restaurant
    订座 table booking
    订位 table booking
    包间 private room
    人数 party size people
    外卖 delivery takeaway
    堂食 dine in
    打包 takeaway
    点餐 order food
    点菜 order food menu
    菜品 dish menu
    菜 dish menu food
    素食 vegetarian
    清真 halal
    过敏 allergy
    辣 spicy
    招牌菜 dish special
    套餐 set menu plan package
    排队 queue wait
    等位 wait table queue
    晚餐 dinner
    晚饭 dinner
    午餐 lunch
    午饭 lunch
    饮料 drink
    咖啡 coffee
    酒水 drink wine
    生日 birthday
    蛋糕 cake
  `,
  'retail and e-commerce': `
    商品 product item
    产品 product
    货 goods item stock
    价格 price
    价钱 price
    多少钱 price cost
    优惠 discount offer
    优惠券 coupon discount
    折扣 discount
    打折 discount sale
    促销 sale promotion
    满减 discount
    购物车 cart basket
    下单 order place
    购买 purchase buy
    买 buy purchase
    退货 return refund
    换货 exchange return
    退换 return exchange
    尺码 size
    尺寸 size
    颜色 colour color
    型号 model
    缺货 out of stock
    有货 in stock available
    补货 restock stock
    保修 warranty
    质保 warranty
    发错 wrong item
    少发 missing item
    漏发 missing item
    破损 damaged broken
    收货 receive delivery
    签收 delivered signed
    评价 review rating
    售后 after sales support
    客服 support service
    投诉 complaint
  `,
  'delivery and logistics': `
    配送 delivery
    送货 delivery deliver
    派送 delivery
    运费 shipping fee
    运单 waybill tracking
    单号 tracking number
    快递单号 tracking number
    追踪 tracking track
    跟踪 tracking track
    物流信息 tracking shipping
    到货 arrival delivery
    寄 send ship
    寄件 send parcel shipment
    收件 receive parcel
    取件 pickup parcel collect
    上门取件 pickup collection
    驿站 pickup point
    快递柜 parcel locker
    仓库 warehouse
    货运 freight shipment
    集装箱 container
    清关 customs clearance
    海关 customs
    运输 transport shipment
    签收人 recipient
    收件人 recipient
    地址 address
    收货地址 delivery address
    丢件 lost parcel
  `,
  telecoms: `
    手机 phone mobile
    电话 phone call
    号码 number phone
    手机号 phone number
    话费 phone bill credit
    流量 data
    套餐外 extra charge
    宽带 broadband internet
    光纤 fibre broadband
    信号 signal coverage
    通话 call
    短信 sms text message
    充值 top up recharge
    携号转网 port number
    停机 suspended service
    复机 reactivate service
    漫游 roaming
    路由器 router
    网速 speed internet
    上网 internet data
    月租 monthly fee plan
    合约 contract plan
    合约期 contract term
    流量包 data pack
    通话时长 call minutes
    时长 duration minutes
    用量 usage
    已用 used usage
    超出 over exceeded
    超额 overage extra charge
    降档 downgrade plan
    升档 upgrade plan
    降级 downgrade
    国际漫游 international roaming
    境外 abroad international overseas
    国外 abroad overseas
    海外 overseas abroad
    出国 abroad travel
    出境 abroad travel
    停号 suspend line
    补卡 replacement sim card
    换卡 replacement sim card
    销号 close line cancel
  `,
  utilities: `
    水费 water bill
    电费 electricity bill
    燃气费 gas bill
    燃气 gas
    煤气 gas
    停电 power outage
    停水 water outage
    水表 water meter
    电表 electricity meter
    抄表 meter reading
    缴费 pay payment bill
    交费 pay payment bill
    物业费 property fee
    暖气 heating
    供暖 heating
    漏水 leak water
  `,
  'health and pharmacy': `
    医院 hospital
    诊所 clinic
    看病 see doctor appointment
    就诊 visit appointment clinic
    看医生 doctor appointment
    体检 check-up checkup exam
    检查 exam check-up test
    病历 medical record
    症状 symptom
    发烧 fever
    咳嗽 cough
    头疼 headache
    头痛 headache
    疼 pain
    感冒 cold flu
    住院 admission hospital
    急诊 emergency
    护士 nurse
    疫苗 vaccine vaccination
    接种 vaccination
    打针 injection vaccination
    药店 pharmacy
    药房 pharmacy
    药品 medicine medication drug
    药物 medicine medication drug
    剂量 dose dosage
    副作用 side effect
    医保 health insurance
    牙医 dentist dental
    洗牙 dental cleaning
    视力 eye vision
  `,
  pets: `
    宠物 pet
    狗 dog pet
    猫 cat pet
    狗狗 dog pet
    猫咪 cat pet
    兽医 vet
    洗澡 bath grooming
    美容 grooming
    驱虫 deworming
    绝育 neuter
  `,
  education: `
    学校 school
    学生 student
    老师 teacher instructor
    教授 professor instructor
    大学 university college
    学期 term semester
    上学期 last term semester
    下学期 next term semester
    本学期 this term semester
    必修课 required course
    选修课 elective course
    通识课 general course
    候补 waitlist
    退选 drop course withdraw
    加选 add course enrol
    成绩单 transcript grades
    绩点 gpa grade
    课程表 timetable schedule
    课堂 class
    上课 class lesson
    选课 course enrol
    退课 drop course
    学费 tuition fee
    学分 credit course
    成绩 grade score result
    考试 exam test
    补考 resit exam
    作业 homework assignment
    论文 thesis paper
    毕业 graduation
    毕业证 diploma certificate
    学位 degree
    证书 certificate
    录取 admission
    入学 enrolment admission
    报到 registration enrolment
    奖学金 scholarship
    宿舍 dorm dormitory
    食堂 canteen
    教室 classroom
    校园卡 campus card
  `,
  'government services': `
    身份证 id card identity
    户口 household registration
    居住证 residence permit
    办证 permit certificate
    证件 id document
    材料 document
    手续 procedure process
    窗口 counter
    社区 community
    街道 district
    营业执照 business licence license
    公积金 housing fund
    纳税 tax
    税务 tax
    退税 tax refund
    驾照 driving licence license
    驾驶证 driving licence license
    车牌 plate registration
    年检 inspection
    违章 violation fine traffic
    罚单 fine ticket
    结婚 marriage
    出生 birth
    预约号 appointment number
  `,
  HR: `
    人事 hr
    员工 employee staff
    入职 onboarding
    离职 resignation leave
    辞职 resignation quit
    转正 probation
    试用期 probation
    合同 contract
    劳动合同 employment contract
    绩效 performance review
    考勤 attendance
    打卡 attendance clock
    迟到 late
    调休 time off leave
    婚假 marriage leave
    丧假 bereavement leave
    陪产假 paternity leave
    奖金 bonus
    补贴 allowance
    津贴 allowance
    公积 housing fund
    体检报告 health report
    招聘 recruitment hiring
    面试 interview
    简历 resume cv
    工作 work job
    上班 work
    下班 work
    同事 colleague
    领导 manager
    经理 manager
    部门 department
    手册 handbook
  `,
  'it helpdesk': `
    权限 access permission
    开通 enable access activate
    账号锁定 locked account
    忘了密码 password forgot
    忘记 forgot
    键盘 keyboard
    鼠标 mouse
    显示器 monitor screen
    耳机 headset
    摄像头 camera
    系统 system
    更新 update
    升级 upgrade update
    病毒 virus security
    黑屏 screen black
    卡顿 slow
    很慢 slow
    太慢 slow
    没网 network offline
    掉线 disconnect network
    插座 socket power
    充电器 charger
    硬盘 disk drive
    文件 file
    共享盘 shared drive
  `,
  'real estate': `
    房子 house home property
    房屋 house property
    租房 rent flat
    房租 rent
    房东 landlord
    租客 tenant
    看房 viewing
    买房 buy house property
    卖房 sell property
    中介 agent agency
    公寓 apartment flat
    小区 estate community
    物业 property management
    装修 renovation
    面积 area size
    户型 layout
    押一付三 deposit rent
    合租 shared flat
  `,
  automotive: `
    汽车 car
    车 car vehicle train bus
    车子 car vehicle
    车辆 vehicle car
    租车 car rental
    还车 return car
    取车 pick up car
    提车 pick up car
    保养 service maintenance
    修车 repair car
    轮胎 tyre tire
    加油 fuel petrol
    油费 fuel
    充电桩 charging
    洗车 car wash
    试驾 test drive
    座椅 seat
    儿童座椅 child seat
    自动挡 automatic
    手动挡 manual
    七座 seven seats
  `,
  'driving school': `
    驾校 driving school
    学车 driving lesson learner
    练车 driving lesson practice
    教练车 car lesson
    路考 road test driving test
    科目一 theory test
    科目二 driving test
    科目三 road test driving test
  `,
  legal: `
    律师 lawyer legal
    法律 legal law
    咨询 consultation advice
    起诉 lawsuit sue
    诉讼 lawsuit litigation
    仲裁 arbitration
    赔偿 compensation
    纠纷 dispute
    维权 rights complaint
    公证 notary
    遗嘱 will
    协议 agreement contract
    条款 terms clause
    隐私 privacy
  `,
  events: `
    门票价格 ticket price
    演出 show performance
    音乐会 concert
    展览 exhibition
    座位图 seating
    入场 entry admission
    签到 check in
    报名费 registration fee
    会场 venue
    场地 venue space
    婚礼 wedding
  `,
  fitness: `
    健身房 gym
    游泳 swimming pool
    跑步机 treadmill
    更衣室 locker room
    储物柜 locker
    体测 assessment
    减肥 weight loss
  `,
  libraries: `
    借阅 borrow loan
    归还 return
    续期 renew
    预留 hold reserve
    借书证 library card
    读者证 library card
    电子书 e-book ebook
    作者 author
    书名 title
    杂志 magazine journal
    检索 search
    复印 copy print
    打印 print printing
    扫描 scan
  `,
  'coworking and facilities': `
    工位 desk seat
    办公桌 desk
    椅子 chair
    桌子 desk table
    楼层 floor
    灯 light
    门禁 access card door
    钥匙 key
    会议间 meeting room
  `,
  'personal care': `
    理发 haircut hair salon
    剪发 haircut hair
    美发 hair salon
    烫发 hair perm salon
    染发 hair dye salon
    美甲 manicure nails
    美容 beauty salon
    按摩 massage
    足疗 foot massage
    洗牙 dental cleaning
    美容院 beauty salon
    理发店 barber hair salon
  `,
  'home services': `
    家政 housekeeping cleaning home service
    保洁 cleaning cleaner
    搬家 moving removal
    水管 plumbing pipe
    漏水 leak plumbing
    水电工 plumber electrician
    电工 electrician
    开锁 locksmith lock
    疏通 unblock drain plumbing
    电梯 elevator lift
    上门维修 repair visit technician
  `,
  'entertainment and venues': `
    电影 movie film cinema
    电影票 movie ticket cinema
    影院 cinema
    场次 showtime session
    取票 collect ticket
    选座 choose seat
    博物馆 museum
    展馆 exhibition hall
    讲解 guided tour guide
    球场 court pitch
    羽毛球 badminton
    网球 tennis
    篮球 basketball
    足球 football
    游泳池 pool swimming
  `,
  'parking and charging': `
    停车场 car park parking
    车位 parking space
    月租车位 parking permit monthly
    充电 charging charge
    充电桩 charging point charger
  `,
  'childcare and tutoring': `
    托管 childcare after school care
    托儿所 nursery childcare
    幼儿园 kindergarten nursery
    家教 tutor tutoring
    辅导 tutoring lesson
    保姆 nanny babysitter
    月嫂 maternity nurse
  `,
  'opticians and photography': `
    眼镜 glasses spectacles
    隐形眼镜 contact lenses
    验光 eye test
    配镜 glasses fitting
    摄影 photography photo shoot
    写真 photo shoot
    证件照 id photo
  `,
  'general service words': `
    订单号 order number
    预订号 booking reference
    确认号 confirmation number
    编号 number id reference
    确认 confirm confirmation
    确认单 confirmation
    凭证 receipt voucher
    收据 receipt
    发票抬头 invoice
    价目 price
    报价 quote price
    预算 budget
    截止 deadline due
    期限 period due
    租期 rental period dates
    日期 date
    时间段 time slot
    时段 time slot
    空位 availability available seat
    位置 seat place table location
    名额 place slot
    排期 schedule
    日程 schedule calendar
    安排 schedule arrange
    提醒 reminder
    通知 notification notice
    进度 progress status
    审批 approval approve
    批准 approval approve
    审核 review approval
    账 account bill
    登记 register registration
    注册 register sign up
    注销 close account
    会员费 membership fee
    退订 cancel unsubscribe
    续费 renew renewal
    自动续费 auto renew renewal
    扣费 charge
    收费 charge fee
    免费 free
    赔 compensation refund
    押金退还 deposit refund
    剩 left remaining
    还剩 left remaining
    剩下 left remaining
    剩余 remaining left
    慢 slow
    丢 lost
    丢了 lost
    弄丢 lost
    寄丢 lost parcel
    收到 received receive
    没收到 not received missing
    派人 engineer technician visit
    师傅 engineer technician
    上门 home visit doorstep
    取个件 pickup parcel collect
    寄个件 send parcel shipment
  `,
};

/**
 * Places (cities) a request names: where a booking is for, like a date or a number, so they neither place
 * a request within an agent's domain nor weigh against it. Read as words so that no neighbour takes
 * one of their characters.
 */
export const ZH_PLACE_NAMES: ReadonlySet<string> = new Set(
  '北京 上海 广州 深圳 天津 重庆 成都 杭州 南京 武汉 西安 苏州 长沙 郑州 青岛 厦门 大连 宁波 沈阳 昆明 合肥 济南 福州 哈尔滨 三亚 香港 澳门 台北'.split(
    ' ',
  ),
);

/**
 * Countries and regions a request names: a place (see `ZH_PLACE_NAMES`) that is also abroad, so an agent
 * whose tools speak of travel abroad (roaming, international shipping) knows it by that.
 */
export const ZH_COUNTRY_NAMES: ReadonlySet<string> = new Set(
  (
    '日本 韩国 泰国 越南 新加坡 马来西亚 印尼 印度尼西亚 菲律宾 印度 美国 加拿大 墨西哥 巴西 英国 法国 德国 ' +
    '意大利 西班牙 葡萄牙 荷兰 瑞士 瑞典 挪威 丹麦 芬兰 希腊 土耳其 俄罗斯 澳大利亚 澳洲 新西兰 埃及 迪拜 ' +
    '欧洲 美洲 非洲 东南亚 中东'
  ).split(' '),
);

/** Cities in English, as `terms` reads them: places, like the Chinese ones of `ZH_PLACE_NAMES`. */
export const EN_CITY_NAMES: ReadonlySet<string> = new Set(
  (
    'london paris berlin rome madrid barcelona lisbon amsterdam brussel vienna prague munich milan ' +
    'zurich geneva dublin edinburgh glasgow manchester leed liverpool birmingham bristol oxford ' +
    'cambridge york boston chicago seattle toronto vancouver sydney melbourne tokyo osaka seoul ' +
    'bangkok beijing shanghai hangzhou shenzhen guangzhou dubai istanbul moscow cairo'
  ).split(' '),
);

/** The same countries and regions in English, as `terms` reads them (lower case, stemmed). */
export const EN_COUNTRY_NAMES: ReadonlySet<string> = new Set(
  (
    'japan korea thailand vietnam singapore malaysia indonesia philippine india usa america canada ' +
    'mexico brazil argentina uk britain england france germany italy spain portugal netherland ' +
    'switzerland sweden norway denmark finland greece turkey russia australia zealand egypt dubai ' +
    'europe africa asia'
  ).split(' '),
);

/** The table read: each Chinese word once, the English of every line that has it. */
export const ZH_SERVICE_WORDS: Readonly<Record<string, string>> = readTable(Object.values(DOMAINS));

/** Lines of "中文 english words" into a record; a word on several lines gets the English of each. */
export function readTable(blocks: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of blocks.flatMap((b) => b.split('\n'))) {
    const [word, ...english] = line.trim().split(/\s+/);
    if (!word || english.length === 0) continue;
    out[word] = [...new Set([...(out[word]?.split(' ') ?? []), ...english])].join(' ');
  }
  return out;
}
