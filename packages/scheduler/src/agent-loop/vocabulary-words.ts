import { EN_SENSES } from './en-senses.js';
import { SHARED_TERMS, ZH_GLOSSARY, ZH_STOP_WORDS } from './glossary.js';
import { cueWords, requestActions, type Action } from './verb-senses.js';
import { EN_CITY_NAMES, EN_COUNTRY_NAMES, ZH_COUNTRY_NAMES, ZH_PLACE_NAMES } from './zh-service-words.js';

/**
 * How the vocabulary reads text: English words (split at `_`, `-` and camelCase, stop words out, a light
 * stem); Chinese text cut into words by the bilingual glossary (longest match) and, between its words,
 * by `Intl.Segmenter`. A Chinese word also matches through its neighbouring-character pairs and its
 * glossary's English equivalents, so "滞纳金" meets a tool described as "overdue fines".
 */

/** English words that say nothing about a domain: function words and the verbs of any request. */
const STOP_WORDS = new Set(
  (
    'a an the and or but if of to in on at for from by with about into over under as is are was were be ' +
    'been being am do does did done have has had having i me my mine we our us you your yours he she it ' +
    'its they them their this that these those there here what which who whom whose when where why how ' +
    'can could would should will shall may might must not no yes please pls thanks thank hi hello hey ' +
    'ok okay bye cheers ' +
    'tell show give let make get got need want like just also any some all each every one two more most ' +
    'very much many so than then too up out now today tomorrow yesterday e.g eg ie etc per via use used ' +
    'using only same other another own new old right know see look find help check still again back ' +
    'already yet ever ' +
    // Words of when and how many, of anything: like a date, they carry no topic.
    'monday tuesday wednesday thursday friday saturday sunday mon tue wed thu fri sat sun morning ' +
    'afternoon evening night tonight day weekend week month year hour minute next last three four five six ' +
    'seven eight nine ten twenty hundred first second third half ' +
    // Verbs and adverbs of any request, and the pieces of contractions ("don't", "I'll").
    'since while way far nothing something anything come came coming said say take took bring put go ' +
    'going went try set thing lot bit really maybe don doesn didn isn won ll ve re'
  ).split(' '),
);

/** Chinese characters that carry no topic on their own (particles, pronouns, request verbs). */
const STOP_CHARS = new Set(
  '的了吗呢吧啊呀么我你您他她它们这那哪个是在有和与及或也都就还要想请帮给把被让对从到为以于一下些点儿么什怎样多少能会可'.split(
    '',
  ),
);

const CJK = /[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+/g;

/** A number with its unit of weight, length or volume ("20kg", "3m"): how much, of anything. */
const MEASURE = /^\d+(?:\.\d+)?(?:kg|kgs|lb|lbs|oz|km|mi|m|cm|mm|ml|l)$/;

/** The terms of a text, with repeats. */
export function terms(text: string): string[] {
  const out: string[] = [];
  const latin = text
    .replace(CJK, ' ')
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/);
  for (const word of latin) {
    if (word.length < 2 || STOP_WORDS.has(word) || /^\d+$/.test(word) || MEASURE.test(word)) continue;
    // A stop word with an ending ("whats", "weeks") is one too.
    const stemmed = stem(word);
    if (!STOP_WORDS.has(stemmed)) out.push(stemmed);
  }
  for (const run of text.match(CJK) ?? []) {
    const chars = [...run];
    if (chars.length === 1 && !STOP_CHARS.has(run)) out.push(run);
    for (let i = 0; i + 1 < chars.length; i += 1) {
      const a = chars[i] as string;
      const b = chars[i + 1] as string;
      if (STOP_CHARS.has(a) && STOP_CHARS.has(b)) continue;
      out.push(a + b);
    }
  }
  return out;
}

/** A light English stem: plurals and the common verb endings, so "orders" meets "order". */
export function stem(word: string): string {
  if (word.length <= 3) return word;
  if (word.endsWith('ies') && word.length > 4) return `${word.slice(0, -3)}y`;
  if (word.endsWith('sses')) return word.slice(0, -2);
  // "boxes", "branches", "wishes": the plural adds -es.
  if (/(?:x|ch|sh)es$/.test(word)) return word.slice(0, -2);
  // A plural of an -ing or -ed word ("trainings") meets the word: the plural goes first.
  const single =
    word.endsWith('s') && !word.endsWith('ss') && !word.endsWith('us') ? word.slice(0, -1) : word;
  if (single.endsWith('ing') && single.length > 5) return single.slice(0, -3);
  if (single.endsWith('ed') && single.length > 4) return single.slice(0, -2);
  return single;
}

/** One word of a request: the terms it matches by (itself, its character pairs, its translations). */
export interface Word {
  alts: string[];
  shared: boolean;
  /** A place the request names (see `ZH_PLACE_NAMES`): it counts only where the agent knows it. */
  place?: boolean;
  /**
   * A word that asks for an action ("推迟", "换成", "留个": a cue of `verb-senses.ts`): unknown to the
   * agent, it says what to do, not about what, so it does not weigh against the agent's domain.
   */
  verb?: boolean;
  /** A word of the glossary (see `glossary.ts`): a service word of some domain. */
  service?: boolean;
  /** A Chinese word. */
  han?: boolean;
  /** An action the request asks for (see `verb-senses.ts`): it says which tool, not which domain. */
  action?: Action;
}

const IDENTIFIER = /\b[A-Za-z]{2,}-\d+\b|\bref_\w+/g;

const segmenter = new Intl.Segmenter('zh', { granularity: 'word' });
const GLOSSARY_MAX_CHARS = Math.max(
  ...[...Object.keys(ZH_GLOSSARY), ...ZH_PLACE_NAMES, ...ZH_COUNTRY_NAMES].map((k) => [...k].length),
);
/** A glossary word, or a place name (see `ZH_PLACE_NAMES`). */
const readAsWord = (w: string) =>
  ZH_GLOSSARY[w] !== undefined || ZH_PLACE_NAMES.has(w) || ZH_COUNTRY_NAMES.has(w);
/** What a country means to a service: somewhere abroad. */
const ABROAD = ['abroad', 'international', 'overseas', 'country'];
/**
 * A number with its measure word ("两张", "三天", "第二", "几点"): how many or which, of anything, so it
 * carries no topic.
 */
const NUMBER_WORD =
  /^(?:[零〇一二三四五六七八九十百千万两几半每第多]+[个张间位份次天号点本辆件条趟节周月年日晚夜人台块元分钟小时层楼瓶盒箱双套些部封篇首家段门期杯碗]*|[个张间位份次天号点本辆件条趟节些])$/;

/**
 * A time word ("这周", "下周一", "这几个月", "整天", "小时"): when, of anything, so it carries no topic.
 */
const TIME_WORD =
  /^(?:这|那|上|下|本|每|前|后|整|当|同|隔|今|明|昨|去)?[几一二三四五六七八九十两半多]*个?(?:周[一二三四五六日天末]?|星期[一二三四五六日天]?|礼拜[一二三四五六日天]?|月|月份|年|天|日|小时|钟头|分钟|季度|早|晚|夜)$/;

/** `EN_SENSES` as `terms` reads words: stemmed. */
const SENSES = new Map(
  Object.entries(EN_SENSES).map(([word, senses]) => [stem(word), senses.split(' ').map(stem)]),
);

/** The words of a text, each once. */
export function words(text: string): Word[] {
  const out = new Map<string, Word>();
  const add = (key: string, alts: string[], shared: boolean) => {
    if (!out.has(key)) out.set(key, { alts: [...new Set(alts)], shared });
  };
  // An identifier (ORD-100001, ref_ab12) names a thing, not a domain: it neither places nor displaces.
  const plain = text.replace(IDENTIFIER, ' ');
  const cues = new Set([...cueWords(plain)].map(stem));
  for (const t of terms(plain.replace(CJK, ' '))) {
    add(t, EN_COUNTRY_NAMES.has(t) ? [t, ...ABROAD] : [t, ...(SENSES.get(t) ?? [])], SHARED_TERMS.has(t));
    const word = out.get(t) as Word;
    if (EN_COUNTRY_NAMES.has(t) || EN_CITY_NAMES.has(t)) word.place = true;
    if (cues.has(t)) word.verb = true;
  }
  for (const run of plain.match(CJK) ?? []) {
    for (const w of chineseWords(run)) {
      // A country is somewhere abroad: a place an agent knows when its tools speak of going abroad.
      const english = ZH_COUNTRY_NAMES.has(w) ? ABROAD : (ZH_GLOSSARY[w]?.split(' ').map(stem) ?? []);
      add(w, [w, ...pairs(w), ...english], SHARED_TERMS.has(w));
      if (ZH_PLACE_NAMES.has(w) || ZH_COUNTRY_NAMES.has(w)) (out.get(w) as Word).place = true;
      if (requestActions(w).size > 0) (out.get(w) as Word).verb = true;
      if (ZH_GLOSSARY[w] !== undefined) (out.get(w) as Word).service = true;
      (out.get(w) as Word).han = true;
    }
  }
  return [...out.values()];
}

/** A run of Chinese as words: glossary words by longest match, the text between them segmented. */
function chineseWords(run: string): string[] {
  const chars = [...run];
  const out: string[] = [];
  let rest = '';
  const flush = () => {
    for (const s of segmenter.segment(rest)) {
      if (s.isWordLike && isContentWord(s.segment)) out.push(s.segment);
    }
    rest = '';
  };
  for (let i = 0; i < chars.length;) {
    let len = Math.min(GLOSSARY_MAX_CHARS, chars.length - i);
    for (; len >= 1; len -= 1) if (readAsWord(chars.slice(i, i + len).join(''))) break;
    if (len === 0) {
      rest += chars[i];
      i += 1;
      continue;
    }
    flush();
    out.push(chars.slice(i, i + len).join(''));
    i += len;
  }
  flush();
  return out;
}

const isContentWord = (w: string) =>
  !ZH_STOP_WORDS.has(w) &&
  !NUMBER_WORD.test(w) &&
  !TIME_WORD.test(w) &&
  [...w].some((c) => !STOP_CHARS.has(c));

/** Neighbouring-character pairs of a Chinese word (none for a word of one or two characters). */
function pairs(word: string): string[] {
  const chars = [...word];
  if (chars.length < 3) return [];
  return chars.slice(1).map((c, i) => `${chars[i]}${c}`);
}
