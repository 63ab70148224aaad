import { constants, type AgentSpec, type ToolCatalogEntry, type TopicPolicy } from '@agent-reach/shared';
import { isSmallTalk } from './intent.js';
import { fleetTerms, type FleetTerms } from './fleet-terms.js';
import { buildVocabulary, type Vocabulary } from './vocabulary.js';

/** How a request stood against its agent's `allowed_topic`, decided once before the first model call. */
export interface TopicCheck {
  verdict: 'on_topic' | 'off_topic';
  /** What the agent's `topic_policy` does with an off-topic request. */
  action: TopicPolicy;
  topics: string[];
  /** How much the request is about the agent's domain, 0–1 (see `RequestScore.domain`), and its best label. */
  score: number;
  best?: string;
}

/** The tool catalog as the vocabulary reads it: a tool by name and, when it can list them, every tool. */
export interface VocabularyCatalog {
  get(name: string): ToolCatalogEntry | undefined;
  /** Every tool the fleet serves: its words shared with other agents' tools weigh less for each agent. */
  names?(): Iterable<string>;
}

/** The vocabulary last built for an agent, and what it was built from. */
const vocabularies = new WeakMap<
  AgentSpec,
  { entries: Array<ToolCatalogEntry | undefined>; fleet: FleetTerms | undefined; vocabulary: Vocabulary }
>();

/** The fleet's terms last read from a catalog, and the entries they were read from. */
const fleets = new WeakMap<object, { entries: ToolCatalogEntry[]; fleet: FleetTerms }>();

/**
 * An agent's vocabulary: its tools as the fleet serves them now (descriptions and parameters from the
 * catalog; a tool no executor serves contributes its name), its topics and its examples, beside what the
 * fleet's tools say (see `fleet-terms.ts`). Built once per agent and catalog entries (the catalog keeps
 * an unchanged entry's identity), not once per run.
 */
export function agentVocabulary(agent: AgentSpec, catalog: VocabularyCatalog): Vocabulary {
  const entries = agent.tools.map((name) => catalog.get(name));
  const fleet = catalogTerms(catalog);
  const built = vocabularies.get(agent);
  if (built && built.fleet === fleet && built.entries.every((entry, i) => entry === entries[i])) {
    return built.vocabulary;
  }
  const vocabulary = buildVocabulary({
    tools: agent.tools.map((name, i) => {
      const entry = entries[i];
      return entry ? { name, description: entry.description, parameters: entry.parameters } : { name };
    }),
    topics: agent.allowed_topic ?? [],
    ...(agent.examples ? { examples: agent.examples } : {}),
    ...(fleet ? { fleet } : {}),
  });
  vocabularies.set(agent, { entries, fleet, vocabulary });
  return vocabulary;
}

/** What the catalog's tools say, read again only when one of its entries changed. */
function catalogTerms(catalog: VocabularyCatalog): FleetTerms | undefined {
  if (!catalog.names) return undefined;
  const entries = [...catalog.names()].flatMap((name) => catalog.get(name) ?? []);
  const read = fleets.get(catalog);
  if (read?.entries.length === entries.length && read.entries.every((e, i) => e === entries[i])) {
    return read.fleet;
  }
  const fleet = fleetTerms(entries);
  fleets.set(catalog, { entries, fleet });
  return fleet;
}

/** Letters the vocabulary reads words of (Latin and Han), and any others (which it cannot read). */
const LATIN_OR_HAN = /[A-Za-z\p{Script=Han}]/gu;
const OTHER_LETTERS = /\p{L}/u;

/**
 * Places a request against the agent's topics: within them when its domain share (its words the agent's
 * tools, topics and examples know, words many domains share weighing less) is at least
 * `DEFAULT_TOPIC_MIN_SCORE` (greetings, and requests of nothing but words that carry no topic, are never
 * off topic; one in a script the vocabulary does not read is placed by its score). Undefined for an agent with no topics.
 */
export function checkTopic(agent: AgentSpec, vocabulary: Vocabulary, input: string): TopicCheck | undefined {
  const topics = agent.allowed_topic ?? [];
  if (topics.length === 0) return undefined;
  const action = agent.topic_policy ?? 'refuse';
  if (isSmallTalk(input)) return { verdict: 'on_topic', action, topics: [...topics], score: 1 };
  const scored = vocabulary.score(input);
  // Nothing but politeness and request phrases ("好的，谢谢", "can you help me") asks for nothing to refuse.
  if (scored.words === 0 && !OTHER_LETTERS.test(input.replace(LATIN_OR_HAN, ''))) {
    return { verdict: 'on_topic', action, topics: [...topics], score: 1 };
  }
  const [best] = scored.labels;
  const score = best ? scored.domain : 0;
  return {
    verdict: score >= constants.DEFAULT_TOPIC_MIN_SCORE ? 'on_topic' : 'off_topic',
    action,
    topics: [...topics],
    score,
    ...(best ? { best: best.label } : {}),
  };
}

/** The answer to a request refused as off topic: it names the topics the agent is for. */
export function offTopicAnswer(topics: readonly string[]): string {
  return (
    `I can only help with these topics: ${topics.join(', ')}. Your request looks like something else, ` +
    'so I have not acted on it. Please ask about one of these topics.'
  );
}
