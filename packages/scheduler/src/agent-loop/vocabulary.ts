/**
 * An agent's vocabulary: what its tools (names, descriptions, parameter names, enum values), its topics
 * and its labelled example requests say, as one bag of terms per label (a tool or a topic). A request is
 * scored against it without a model call: which labels it names, and how much of it the agent knows.
 *
 * Terms are English words (split at `_`, `-` and camelCase, stop words out, a light stem) and, for Chinese,
 * pairs of neighbouring characters (no word segmenter needed). Each term weighs its inverse document
 * frequency over the labels, so a word every tool shares says little about which one is meant.
 */

/** A tool as the vocabulary reads it. */
export interface VocabularyTool {
  name: string;
  description?: string;
  /** The tool's JSON Schema: property names, their descriptions and enum values join its terms. */
  parameters?: Record<string, unknown>;
}

export interface VocabularySource {
  tools: readonly VocabularyTool[];
  topics?: readonly string[];
  /** Example requests by label (a tool's or a topic's name). */
  examples?: Readonly<Record<string, readonly string[]>>;
}

/** How much a request is about one label, 0–1: the share of its terms' weight that the label knows. */
export interface LabelScore {
  label: string;
  kind: 'tool' | 'topic';
  score: number;
}

export interface RequestScore {
  /** Labels with a score above zero, best first. */
  labels: LabelScore[];
  /** Share of the request's terms the vocabulary knows at all, 0–1 (1 for a request with no terms). */
  coverage: number;
  /** The request's terms the vocabulary knows, for the run's events (at most 10). */
  known: string[];
}

export interface Vocabulary {
  readonly tools: readonly string[];
  readonly topics: readonly string[];
  score(text: string): RequestScore;
  /**
   * The labels of `kind` a request names, best first: the best-scoring one, then each next one only for
   * the request's words the ones before it do not explain (a word several tools share names one of them),
   * each needing at least `minScore` of the request's weight.
   */
  named(text: string, kind: 'tool' | 'topic', minScore: number): string[];
}

/** English words that say nothing about a domain: function words and the verbs of any request. */
const STOP_WORDS = new Set(
  (
    'a an the and or but if of to in on at for from by with about into over under as is are was were be ' +
    'been being am do does did done have has had having i me my mine we our us you your yours he she it ' +
    'its they them their this that these those there here what which who whom whose when where why how ' +
    'can could would should will shall may might must not no yes please pls thanks thank hi hello hey ' +
    'tell show give let make get got need want like just also any some all each every one two more most ' +
    'very much many so than then too up out now today tomorrow yesterday e.g eg ie etc per via use used ' +
    'using only same other another own new old right know see look find help check'
  ).split(' '),
);

/** Chinese characters that carry no topic on their own (particles, pronouns, request verbs). */
const STOP_CHARS = new Set(
  '的了吗呢吧啊呀么我你您他她它们这那哪个是在有和与及或也都就还要想请帮给把被让对从到为以于一下些点儿么什怎样多少能会可'.split(
    '',
  ),
);

const CJK = /[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+/g;

/** The terms of a text, with repeats. */
export function terms(text: string): string[] {
  const out: string[] = [];
  const latin = text
    .replace(CJK, ' ')
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/);
  for (const word of latin) {
    if (word.length < 2 || STOP_WORDS.has(word) || /^\d+$/.test(word)) continue;
    out.push(stem(word));
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
function stem(word: string): string {
  if (word.length <= 3) return word;
  if (word.endsWith('ies') && word.length > 4) return `${word.slice(0, -3)}y`;
  if (word.endsWith('sses')) return word.slice(0, -2);
  if (word.endsWith('ing') && word.length > 5) return word.slice(0, -3);
  if (word.endsWith('ed') && word.length > 4) return word.slice(0, -2);
  if (word.endsWith('s') && !word.endsWith('ss') && !word.endsWith('us')) return word.slice(0, -1);
  return word;
}

/** The text a tool's schema contributes: property names, descriptions, enum and example values. */
function schemaText(schema: unknown, depth = 0): string[] {
  if (!schema || typeof schema !== 'object' || depth > 4) return [];
  const s = schema as Record<string, unknown>;
  const out: string[] = [];
  if (typeof s.description === 'string') out.push(s.description);
  for (const key of ['enum', 'examples'] as const) {
    const values = s[key];
    if (Array.isArray(values)) out.push(...values.filter((v) => typeof v === 'string').slice(0, 100));
  }
  if (typeof s.const === 'string') out.push(s.const);
  const props = s.properties;
  if (props && typeof props === 'object') {
    for (const [name, sub] of Object.entries(props as Record<string, unknown>)) {
      out.push(name, ...schemaText(sub, depth + 1));
    }
  }
  for (const key of ['items', 'anyOf', 'oneOf', 'allOf'] as const) {
    const sub = s[key];
    for (const one of Array.isArray(sub) ? sub : [sub]) out.push(...schemaText(one, depth + 1));
  }
  return out;
}

/** Builds an agent's vocabulary; labels with no terms of their own are kept (they score nothing). */
export function buildVocabulary(source: VocabularySource): Vocabulary {
  const docs = new Map<string, { kind: 'tool' | 'topic'; terms: Set<string> }>();
  for (const tool of source.tools) {
    const text = [tool.name, tool.description ?? '', ...schemaText(tool.parameters)];
    docs.set(tool.name, { kind: 'tool', terms: new Set(text.flatMap(terms)) });
  }
  for (const topic of source.topics ?? []) {
    if (!docs.has(topic)) docs.set(topic, { kind: 'topic', terms: new Set(terms(topic)) });
  }
  for (const [label, examples] of Object.entries(source.examples ?? {})) {
    const doc = docs.get(label);
    if (doc) for (const t of examples.flatMap(terms)) doc.terms.add(t);
  }
  const df = new Map<string, number>();
  for (const doc of docs.values()) for (const t of doc.terms) df.set(t, (df.get(t) ?? 0) + 1);
  const n = docs.size;
  // A term no label knows weighs as one every label knows: it tells nothing about which label is meant.
  const idf = (t: string) => Math.log(1 + n / (df.get(t) ?? n));
  const weigh = (query: string[], keep: (t: string) => boolean) =>
    query.reduce((sum, t) => sum + (keep(t) ? idf(t) : 0), 0);
  const queryOf = (text: string) => [...new Set(terms(text))];
  return {
    tools: source.tools.map((t) => t.name),
    topics: [...(source.topics ?? [])],
    score(text) {
      const query = queryOf(text);
      if (query.length === 0) return { labels: [], coverage: 1, known: [] };
      const total = weigh(query, () => true);
      const labels: LabelScore[] = [];
      for (const [label, doc] of docs) {
        const matched = weigh(query, (t) => doc.terms.has(t));
        if (matched > 0) labels.push({ label, kind: doc.kind, score: round(matched / total) });
      }
      labels.sort((a, b) => b.score - a.score);
      const known = query.filter((t) => df.has(t));
      return { labels, coverage: round(known.length / query.length), known: known.slice(0, 10) };
    },
    named(text, kind, minScore) {
      const query = queryOf(text);
      const total = weigh(query, () => true);
      const explained = new Set<string>();
      const named: string[] = [];
      const candidates = [...docs].filter(([, doc]) => doc.kind === kind);
      for (;;) {
        let best: { label: string; gain: number; terms: Set<string> } | undefined;
        for (const [label, doc] of candidates) {
          if (named.includes(label)) continue;
          const gain = weigh(query, (t) => doc.terms.has(t) && !explained.has(t));
          if (gain > (best?.gain ?? 0)) best = { label, gain, terms: doc.terms };
        }
        if (!best || total === 0 || best.gain / total < minScore) return named;
        named.push(best.label);
        for (const t of query) if (best.terms.has(t)) explained.add(t);
      }
    },
  };
}

const round = (x: number) => Math.round(x * 1000) / 1000;
