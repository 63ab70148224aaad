import { cjkBigrams, conceptWords, latinWords } from './noisy-lexicon.js';
import type { ChatRequest } from './request-validation.js';

/** One argument of an offered tool, as the noisy model reads its schema. */
export interface NoisyProperty {
  name: string;
  /** JSON Schema `type` (the first one when several are listed). */
  type: string | undefined;
  /** String enum values, when the argument has an enum. */
  enum: string[] | undefined;
  pattern: string | undefined;
  description: string;
  /** `examples` of the argument's schema. */
  examples: unknown[];
  default: unknown;
  required: boolean;
}

/** An offered tool, with what the model reads of it. */
export interface NoisyTool {
  name: string;
  description: string;
  properties: NoisyProperty[];
  /** Examples anywhere in the tool: its schema's `examples`, or "e.g." / "例如" in its description. */
  showsExamples: boolean;
  /** Argument names that the parameters' own `examples` (whole argument objects) show a value of. */
  exampleFields: Set<string>;
  /** Words that tell this tool apart, for matching a request to it. */
  vocabulary: { nameWords: Set<string>; words: Set<string>; bigrams: Set<string> };
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const EXAMPLE_WORDS = /\b(e\.g\.|for example|for instance|examples?:)|例如|比如|示例|举例/i;
/** Words saying that other forms of a value are accepted and which value they stand for. */
const ALIAS_WORDS =
  /\b(alias(es)?|synonyms?|map(s|ped)?\b.{0,40}\bto\b|stands? for|same as)|别名|同义|统一(转换|写成|为)|转换为|映射/i;

function readProperty(name: string, raw: unknown, required: boolean): NoisyProperty {
  const schema = isObj(raw) ? raw : {};
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  const values = Array.isArray(schema.enum) ? schema.enum.filter((v) => typeof v === 'string') : [];
  const examples = Array.isArray(schema.examples) ? schema.examples : [];
  return {
    name,
    type: typeof type === 'string' ? type : values.length > 0 ? 'string' : undefined,
    enum: values.length > 0 ? (values as string[]) : undefined,
    pattern: typeof schema.pattern === 'string' ? schema.pattern : undefined,
    description: typeof schema.description === 'string' ? schema.description : '',
    examples,
    default: schema.default,
    required,
  };
}

function readTool(raw: unknown): NoisyTool | undefined {
  const fn = isObj(raw) && isObj(raw.function) ? raw.function : undefined;
  if (fn === undefined || typeof fn.name !== 'string') return undefined;
  const params = isObj(fn.parameters) ? fn.parameters : {};
  const required = Array.isArray(params.required) ? params.required : [];
  const props = isObj(params.properties) ? params.properties : {};
  const properties = Object.entries(props).map(([k, v]) => readProperty(k, v, required.includes(k)));
  const description = typeof fn.description === 'string' ? fn.description : '';
  const examples = Array.isArray(params.examples) ? params.examples.filter(isObj) : [];
  const text = [description, ...properties.map((p) => `${p.name} ${p.description}`)].join(' ');
  return {
    name: fn.name,
    description,
    properties,
    showsExamples:
      EXAMPLE_WORDS.test(description) ||
      examples.length > 0 ||
      properties.some((p) => p.examples.length > 0 || EXAMPLE_WORDS.test(p.description)),
    exampleFields: new Set(examples.flatMap((e) => Object.keys(e))),
    vocabulary: {
      nameWords: new Set(latinWords(fn.name)),
      words: conceptWords(text),
      bigrams: cjkBigrams(text),
    },
  };
}

/** The function tools a request offers, read for the noisy model. */
export function offeredNoisyTools(request: ChatRequest): NoisyTool[] {
  return (request.tools ?? []).flatMap((t) => {
    const tool = readTool(t);
    return tool === undefined ? [] : [tool];
  });
}

/** Tools known only by name (a planning request lists them in its system prompt). */
export function namedOnlyTools(names: string[]): NoisyTool[] {
  return names.flatMap((name) => readTool({ function: { name } }) ?? []);
}

/**
 * True when the request shows the model how to fill this enum argument beyond the bare enum: examples
 * for it (its own or the parameters' whole-call `examples`), or a description that names another form of one of its values (`广州市` beside `广州`) or says
 * that aliases map to the values.
 */
export function enumHinted(tool: NoisyTool, prop: NoisyProperty): boolean {
  if (prop.examples.length > 0 || tool.exampleFields.has(prop.name) || EXAMPLE_WORDS.test(prop.description))
    return true;
  const text = `${tool.description}\n${prop.description}`;
  if (ALIAS_WORDS.test(text)) return true;
  return (prop.enum ?? []).some((value) => aliasFormsIn(text, value, prop.enum ?? []).length > 0);
}

/** Suffixes people add to a place name that an enum of bare names leaves out (市 city, 省 province …). */
export const PLACE_SUFFIXES = ['市', '省', '区', '县'] as const;

/**
 * Other forms of `value` written in `text`: a Chinese value with a place suffix (`广州省` for `广州`), a
 * Latin one in another case or with spaces for underscores (`Error Rate` for `error_rate`).
 */
export function aliasFormsIn(text: string, value: string, values: readonly string[]): string[] {
  const escaped = value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const pattern = /[\u4e00-\u9fff]/.test(value)
    ? new RegExp(`${escaped}[${PLACE_SUFFIXES.join('')}]`, 'g')
    : new RegExp(`\\b${escaped.replace(/_/g, '[ _-]')}\\b`, 'gi');
  const found = text.match(pattern) ?? [];
  return found.filter((w) => w !== value && !values.includes(w));
}
