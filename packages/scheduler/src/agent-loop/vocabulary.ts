import { requestActions, toolAction, WRITES, type Action } from './verb-senses.js';
import { sharedWithFleet, termsOf, toolTerms, type FleetTerms, type VocabularyTool } from './fleet-terms.js';
import { SHARED_TERMS } from './glossary.js';
import { stem, words, type Word } from './vocabulary-words.js';

/**
 * An agent's vocabulary: what its tools (names, descriptions, parameter names, enum values), its topics
 * and its labelled example requests say, as one bag of terms per label (a tool or a topic). A request is
 * scored against it without a model call: which labels it names, and how much of it the agent knows.
 *
 * A request is read as words (see `vocabulary-words.ts`). Labels are ranked by the inverse document
 * frequency of the words they know, so a word every tool shares says little about which one is meant.
 * A request is within the agent's domain by the share of its words the agent knows, where words many
 * domains share ("stock", "office", "预约") or the fleet's other tools share (see `fleet-terms.ts`)
 * weigh less than those that distinguish it, and words the agent does not know weigh against it: a
 * service word of another domain fully, a name less, a verb not at all.
 */

export type { VocabularyTool } from './fleet-terms.js';

export interface VocabularySource {
  tools: readonly VocabularyTool[];
  topics?: readonly string[];
  /** Example requests by label (a tool's or a topic's name). */
  examples?: Readonly<Record<string, readonly string[]>>;
  /** What the fleet's tools say (see `fleet-terms.ts`); without it, no word is shared with the fleet. */
  fleet?: FleetTerms;
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
  /**
   * How much the request is about the agent's domain, 0–1: the weight of its words that any label knows
   * over the weight of all of them: words many domains or the fleet's other tools share weigh
   * `SHARED_WORD_WEIGHT`; unknown ones 0 (a verb), `SERVICE_WORD_WEIGHT` (a glossary word),
   * `ZH_UNKNOWN_WORD_WEIGHT` (another Chinese word) or `UNKNOWN_WORD_WEIGHT`; others 1.
   */
  domain: number;
  /** Share of the request's terms the vocabulary knows at all, 0–1 (1 for a request with no terms). */
  coverage: number;
  /** The request's terms the vocabulary knows, for the run's events (at most 10). */
  known: string[];
  /**
   * How many words the request has that may carry a topic: 0 for one of nothing but words that carry
   * none (greetings, thanks, "好的", "帮我", "can you").
   */
  words: number;
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
  /** What a tool does to a thing, by its name (see `verb-senses.ts`). */
  actionOf(tool: string): Action | undefined;
}

/** Weight in a request's domain share of a known word that many domains, or the fleet's other tools, share. */
const SHARED_WORD_WEIGHT = 0.25;
/** Weight in a request's domain share of an English word the agent does not know (a known distinct word: 1). */
const UNKNOWN_WORD_WEIGHT = 0.6;
/**
 * Weight in a request's domain share of a Chinese word neither the agent nor the glossary knows: most
 * are names and pieces of names ("王", "宏观经济"), the segmenter's cut of words it does not know either.
 */
const ZH_UNKNOWN_WORD_WEIGHT = 0.5;
/**
 * Weight in a request's domain share of a glossary word (a service word of some domain: "机票", "理发")
 * the agent does not know: a word of another domain, it weighs against the agent's as much as a known
 * distinct word weighs for it.
 */
const SERVICE_WORD_WEIGHT = 1;
/** How much more a term weighs for a label whose own name holds it ("log" for `get_recent_logs`). */
const NAME_TERM_BOOST = 1.5;
/** A tool's score when it takes another action than the request asks for (cancel for "change"). */
const OTHER_ACTION_FACTOR = 0.5;
/** A further label a request names needs this many times the first one's smallest share. */
const FURTHER_LABEL_FACTOR = 2;

/** The term of an action, as tools that take it and requests that ask for it hold it. */
const actionTerm = (action: Action) => `~${action}`;

/** The actions a request asks for, as words. */
const actionWords = (text: string): Word[] =>
  [...requestActions(text)].map((action) => ({ alts: [actionTerm(action)], shared: false, action }));

/** A request put as a question: a question mark, or words that ask. */
const QUESTION =
  /[?？吗呢]\s*$|^\s*(?:is there|are there|do you have|how (?:much|many)|what|which|when|where)\b|有没有|多少|几/i;
/** A tool that reads (by its name's first word). */
const reads = (label: string) =>
  /^(?:get|list|search|check|query|show|find|read|lookup|fetch|view)(?:_|$)/.test(label);

/** Builds an agent's vocabulary; labels with no terms of their own are kept (they score nothing). */
export function buildVocabulary(source: VocabularySource): Vocabulary {
  const docs = new Map<string, { kind: 'tool' | 'topic'; terms: Set<string> }>();
  // The terms of a label's own name: what the label is, beyond what its description mentions.
  const named = new Map<string, Set<string>>();
  // What each tool does (see `verb-senses.ts`), and the verb of its name that says so.
  const actions = new Map(source.tools.map((tool) => [tool.name, toolAction(tool)]));
  const own = new Map(source.tools.map((tool) => [tool.name, toolTerms(tool)]));
  for (const tool of source.tools) {
    const action = actions.get(tool.name)?.action;
    const extra = action ? [actionTerm(action)] : [];
    docs.set(tool.name, { kind: 'tool', terms: new Set([...(own.get(tool.name) ?? []), ...extra]) });
    named.set(tool.name, new Set([...termsOf(tool.name), ...extra]));
  }
  // A verb another tool's name holds as its object ("book" of `book_table`, "booking" of
  // `get_table_booking`) says what each is about, not which: it weighs as a word of the description.
  for (const [tool, taken] of actions) {
    const verb = taken?.verb === undefined ? undefined : stem(taken.verb);
    const elsewhere = (other: string) => other !== tool && actions.get(other)?.verb !== taken?.verb;
    if (verb && [...named].some(([other, own]) => elsewhere(other) && own.has(verb))) {
      named.get(tool)?.delete(verb);
    }
  }
  for (const topic of source.topics ?? []) {
    if (!docs.has(topic)) docs.set(topic, { kind: 'topic', terms: new Set(termsOf(topic)) });
    if (!named.has(topic)) named.set(topic, new Set(termsOf(topic)));
  }
  const inSomeName = new Set([...named.values()].flatMap((t) => [...t]));
  for (const [label, examples] of Object.entries(source.examples ?? {})) {
    const doc = docs.get(label);
    if (doc) for (const t of examples.flatMap(termsOf)) doc.terms.add(t);
  }
  const fleetShared = sharedWithFleet(source.fleet, own);
  const df = new Map<string, number>();
  for (const doc of docs.values()) for (const t of doc.terms) df.set(t, (df.get(t) ?? 0) + 1);
  const n = docs.size;
  // A term no label knows weighs as one every label knows: it tells nothing about which label is meant.
  const idf = (t: string) => Math.log(1 + n / (df.get(t) ?? n));
  const knows = (terms: Set<string>, w: Word) => w.alts.some((t) => terms.has(t));
  const known = (w: Word) => w.alts.some((t) => df.has(t));
  /**
   * A word's weight for a label: its most distinctive term the label knows, more when the label's name
   * holds it (any label: `all`).
   */
  const weight = (w: Word, label: string | 'all') => {
    const doc = docs.get(label);
    const names = named.get(label) ?? (label === 'all' ? inSomeName : undefined);
    const weights = w.alts
      .filter((t) => label === 'all' || doc?.terms.has(t))
      .map((t) => idf(t) * (names?.has(t) ? NAME_TERM_BOOST : 1));
    return Math.max(0, ...weights);
  };
  // A shared word that a third of the agent's labels know is its core ("order" on an orders desk).
  const central = (w: Word) => w.alts.some((t) => (df.get(t) ?? 0) * 3 >= n);
  // A place the agent does not know is where, not what: it neither places a request nor displaces it.
  const read = (text: string) => words(text).filter((w) => !w.place || known(w));
  const weigh = (query: Word[], label: string | 'all', keep: (w: Word) => boolean = () => true) =>
    query.reduce((sum, w) => sum + (keep(w) ? weight(w, label) : 0), 0);
  // A tool that takes another action than the request asks for is named only on much more of it.
  const otherAction = (label: string, query: Word[]) => {
    const does = actions.get(label)?.action;
    return does !== undefined && query.some((w) => w.action) && !query.some((w) => w.action === does);
  };
  const actionFactor = (label: string, query: Word[]) =>
    otherAction(label, query) ? OTHER_ACTION_FACTOR : 1;
  return {
    tools: source.tools.map((t) => t.name),
    topics: [...(source.topics ?? [])],
    score(text) {
      const query = read(text);
      if (query.length === 0) return { labels: [], domain: 1, coverage: 1, known: [], words: 0 };
      // What the request asks to do weighs for the tools that do it, and for nothing else.
      const asked = [...query, ...actionWords(text)];
      const total = weigh(asked, 'all');
      const labels: LabelScore[] = [];
      for (const [label, doc] of docs) {
        const matched = weigh(asked, label);
        const score = (matched / total) * actionFactor(label, asked);
        if (matched > 0) labels.push({ label, kind: doc.kind, score: round(score) });
      }
      // Between labels a request fits equally, a question asks to read, not to change anything.
      const asks = QUESTION.test(text);
      labels.sort(
        (a, b) => b.score - a.score || (asks ? Number(reads(b.label)) - Number(reads(a.label)) : 0),
      );
      const knownWords = query.filter(known);
      const domainWeight = (w: Word) => {
        if (!known(w)) {
          if (w.verb) return 0;
          return w.service ? SERVICE_WORD_WEIGHT : w.han ? ZH_UNKNOWN_WORD_WEIGHT : UNKNOWN_WORD_WEIGHT;
        }
        // A word the fleet's other tools share is shared too, unless it is this agent's core.
        const shared = (w.shared || w.alts.some((t) => df.has(t) && fleetShared(t))) && !central(w);
        return shared ? SHARED_WORD_WEIGHT : 1;
      };
      const all = query.reduce((sum, w) => sum + domainWeight(w), 0);
      const inDomain = knownWords.reduce((sum, w) => sum + domainWeight(w), 0);
      return {
        labels,
        // A request of nothing but verbs ("call it off") has no word to place it elsewhere.
        domain: all === 0 ? 1 : round(inDomain / all),
        coverage: round(knownWords.length / query.length),
        known: knownWords.map((w) => w.alts[0] as string).slice(0, 10),
        words: query.length,
      };
    },
    named(text, kind, minScore) {
      const query = [...read(text), ...actionWords(text)];
      const total = weigh(query, 'all', (w) => !w.action);
      const explained = new Set<Word>();
      const named: string[] = [];
      const candidates = [...docs].filter(([, doc]) => doc.kind === kind);
      for (;;) {
        let best: { label: string; gain: number; terms: Set<string> } | undefined;
        for (const [label, doc] of candidates) {
          if (named.includes(label)) continue;
          // A further tool is named only by words other domains do not share ("服务", "search").
          const keep = (w: Word) => !explained.has(w) && (named.length === 0 || !sharedSense(w));
          // The action asked for names no tool by itself: it adds to the words that name one. A further
          // tool takes an action asked for: another action on the same thing is not asked for, and a
          // second change asked for on it names the tool that makes it by the thing's words.
          const further = named.length > 0;
          const does = actions.get(label)?.action;
          const writes = does !== undefined && WRITES.has(does);
          const newAction = further && writes && query.some((w) => w.action === does && !explained.has(w));
          const said = weigh(query, label, (w) => !w.action && (newAction || keep(w)));
          const gain =
            said > 0 && !(further && otherAction(label, query))
              ? weigh(query, label, keep) * actionFactor(label, query)
              : 0;
          if (gain > (best?.gain ?? 0)) best = { label, gain, terms: doc.terms };
        }
        // Each further tool needs twice the share: an incidental word of its examples does not name it.
        const needed = minScore * (named.length === 0 ? 1 : FURTHER_LABEL_FACTOR);
        if (!best || total === 0 || best.gain / total < needed) return named;
        named.push(best.label);
        for (const w of query) if (knows(best.terms, w)) explained.add(w);
      }
    },
    actionOf: (tool) => actions.get(tool)?.action,
  };
}

/** A word many domains share, or one of whose senses is ("书" is a "book", and so is booking one). */
const sharedSense = (w: Word) => w.shared || w.alts.some((t) => SHARED_TERMS.has(t));

const round = (x: number) => Math.round(x * 1000) / 1000;
