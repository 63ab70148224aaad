/**
 * What the noisy model knows of language: Chinese words (and a few English ones) mapped to the English
 * words tool names and descriptions use, so that "查一下上海天气" is about `query_weather` and "存成 md
 * 文件" about `write_markdown_file`. A capable model knows far more; this is enough for tools named in
 * English with Chinese or English requests.
 */
const LEXICON: ReadonlyArray<readonly [RegExp, readonly string[]]> = [
  [/天气|气温|温度|下雨|降雨|晴|阴天|预报|冷不冷|热不热/g, ['weather', 'forecast', 'temperature']],
  [/空气|污染|雾霾|pm2\.?5/gi, ['air', 'quality', 'aqi', 'pollution']],
  [/订单|单号|下单/g, ['order']],
  [/状态|进度|到哪|物流|发货/g, ['status', 'shipping', 'tracking']],
  [/文件|文档|存成|保存|存为|写入|导出|落盘/g, ['file', 'save', 'write', 'document']],
  [/\bmd\b|markdown/gi, ['markdown', 'md']],
  [/写|撰写|起草|生成/g, ['write', 'create', 'draft']],
  [/报告|总结|汇总/g, ['report', 'summary']],
  [/历史|记录/g, ['history']],
  [/库存|存货/g, ['inventory', 'stock']],
  [/退款|退货/g, ['refund']],
  [/邮件|邮箱/g, ['email', 'mail', 'send']],
  [/发送|发给|通知/g, ['send', 'notify']],
  [/搜索|查找|检索/g, ['search', 'find']],
  [/汇率|换算|兑换/g, ['exchange', 'rate', 'currency', 'convert']],
  [/航班|机票|飞机/g, ['flight']],
  [/火车|高铁|车票/g, ['train', 'ticket']],
  [/酒店|住宿/g, ['hotel', 'booking']],
  [/预订|预定|订一|订个|订张/g, ['book', 'booking', 'reserve']],
  [/取消/g, ['cancel']],
  [/提醒|闹钟/g, ['reminder', 'remind']],
  [/日程|会议|日历/g, ['calendar', 'event', 'meeting']],
  [/翻译/g, ['translate']],
  [/计算|算一下/g, ['calculate', 'compute']],
  [/指标|监控|错误率|延迟/g, ['metrics', 'metric', 'monitor']],
  [/用户/g, ['user']],
  [/价格|多少钱/g, ['price']],
  [/地址|位置/g, ['address', 'location']],
  [/天数|几天|\d+\s*天|[一两二三四五六七]天/g, ['days']],
];

/** Words too common to tell one tool from another. */
const STOPWORDS = new Set([
  'a',
  'an',
  'and',
  'the',
  'of',
  'to',
  'for',
  'in',
  'on',
  'by',
  'or',
  'is',
  'it',
  'one',
  'with',
  'from',
  'this',
  'that',
  'not',
  'no',
  'tool',
  'demo',
  'data',
  'get',
  'query',
  'e',
  'g',
]);

/** Lower-cased words of Latin text, `snake_case` and `camelCase` split, stopwords left out. */
export function latinWords(text: string): string[] {
  return text
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w.length > 0 && !STOPWORDS.has(w));
}

/** The English concept words a text names: its own Latin words plus what the lexicon maps its words to. */
export function conceptWords(text: string): Set<string> {
  const words = new Set(latinWords(text));
  for (const [pattern, meaning] of LEXICON) {
    pattern.lastIndex = 0;
    if (pattern.test(text)) for (const w of meaning) words.add(w);
  }
  return words;
}

/** Pairs of adjacent Chinese characters in a text (how Chinese descriptions are matched). */
export function cjkBigrams(text: string): Set<string> {
  const out = new Set<string>();
  for (const run of text.match(/[\u4e00-\u9fff]+/g) ?? []) {
    for (let i = 0; i + 1 < run.length; i += 1) out.add(run.slice(i, i + 2));
  }
  return out;
}
