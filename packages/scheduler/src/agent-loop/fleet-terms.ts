import { terms, words } from './vocabulary-words.js';

/**
 * What the tools of a whole fleet say, term by term, so that an agent's vocabulary can tell the words
 * that distinguish its domain from those it shares with the fleet's other agents: "schedule" is what a
 * billing desk, a driving school and a courier all do, and alone places a request within none of them,
 * where "invoice" places it on the billing desk (an agent's core word, one a third of its tools and
 * topics know, stays its own: see `vocabulary.ts`). Read from the tool catalog (every tool the fleet
 * serves), again only when one of its entries changed.
 */

/** A tool as the vocabulary reads it. */
export interface VocabularyTool {
  name: string;
  description?: string;
  /** The tool's JSON Schema: property names, their descriptions and enum values join its terms. */
  parameters?: Record<string, unknown>;
}

/** How many of the fleet's tools know each term. */
export interface FleetTerms {
  /** The fleet's tools, by name. */
  readonly tools: ReadonlySet<string>;
  /** For each term, how many of the fleet's tools know it. */
  readonly df: ReadonlyMap<string, number>;
}

/** The terms of a text: its English terms and the terms of its words (see `vocabulary-words.ts`). */
export const termsOf = (text: string): string[] => [...terms(text), ...words(text).flatMap((w) => w.alts)];

/** The terms a tool's name, description and schema give it. */
export function toolTerms(tool: VocabularyTool): Set<string> {
  const text = [tool.name, tool.description ?? '', ...schemaText(tool.parameters)];
  return new Set(text.flatMap(termsOf));
}

/** How many of the fleet's tools know each term. */
export function fleetTerms(tools: Iterable<VocabularyTool>): FleetTerms {
  const names = new Set<string>();
  const df = new Map<string, number>();
  for (const tool of tools) {
    if (names.has(tool.name)) continue;
    names.add(tool.name);
    for (const t of toolTerms(tool)) df.set(t, (df.get(t) ?? 0) + 1);
  }
  return { tools: names, df };
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

/** Least share of the fleet's other tools that know a term for it to be shared with the fleet. */
const FLEET_SHARED_MIN_SHARE = 0.1;
/** Least number of the fleet's other tools that know a term for it to be shared with the fleet. */
const FLEET_SHARED_MIN_TOOLS = 2;

/**
 * The terms an agent shares with the rest of the fleet: known to at least `FLEET_SHARED_MIN_SHARE` of
 * the fleet's other tools (and at least `FLEET_SHARED_MIN_TOOLS` of them). None without a fleet.
 */
export function sharedWithFleet(
  fleet: FleetTerms | undefined,
  own: ReadonlyMap<string, ReadonlySet<string>>,
): (term: string) => boolean {
  if (!fleet) return () => false;
  const mine = [...own].filter(([name]) => fleet.tools.has(name)).map(([, t]) => t);
  const others = fleet.tools.size - mine.length;
  const needed = Math.max(FLEET_SHARED_MIN_TOOLS, FLEET_SHARED_MIN_SHARE * others);
  return (term) => {
    const outside = (fleet.df.get(term) ?? 0) - mine.filter((t) => t.has(term)).length;
    return outside >= needed;
  };
}
