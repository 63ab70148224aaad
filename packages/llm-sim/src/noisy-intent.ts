import { cjkBigrams, conceptWords } from './noisy-lexicon.js';
import { aliasFormsIn, type NoisyTool } from './noisy-tools.js';

/** One step of the task as the noisy model understands it: a tool to call for a part of the request. */
export interface NoisyStep {
  tool: string;
  /** The part of the request this step serves (its arguments are read from it first). */
  clause: string;
  /** An enum argument fixed by the clause, when it names several values (one step per value). */
  pinned?: { field: string; value: string };
}

/** Where a request moves on to another action: "然后", "再", "then", "; " … */
const CLAUSE_BREAK =
  /然后|接着|之后|随后|最后|并且|并把|同时|再(?=[把帮写查给存发算订看])|[，,；;。！!？?\n]|\b(?:and then|then|after that|afterwards|finally|next)\b/i;
/** Smallest score at which a clause is about a tool. */
const MIN_SCORE = 3;

/** Enum values of the tool's arguments named in `text` (a value's alias forms count), longest first. */
export function enumValuesIn(tool: NoisyTool, text: string): Array<{ field: string; value: string }> {
  const out: Array<{ field: string; value: string; at: number }> = [];
  for (const prop of tool.properties) {
    for (const value of prop.enum ?? []) {
      const at = text.toLowerCase().indexOf(value.toLowerCase());
      const alias = at < 0 ? aliasFormsIn(text, value, prop.enum ?? [])[0] : undefined;
      if (at >= 0) out.push({ field: prop.name, value, at });
      else if (alias !== undefined) out.push({ field: prop.name, value, at: text.indexOf(alias) });
    }
  }
  return out.sort((a, b) => a.at - b.at).map(({ field, value }) => ({ field, value }));
}

/** How strongly a clause is about a tool: its name's words weigh most, then values only it accepts. */
export function toolScore(tool: NoisyTool, clause: string): number {
  const words = conceptWords(clause);
  let score = 0;
  for (const w of words) {
    if (tool.vocabulary.nameWords.has(w)) score += 3;
    else if (tool.vocabulary.words.has(w)) score += 1;
  }
  for (const b of cjkBigrams(clause)) if (tool.vocabulary.bigrams.has(b)) score += 1;
  if (enumValuesIn(tool, clause).length > 0) score += 4;
  for (const prop of tool.properties) {
    if (prop.pattern !== undefined && patternMatch(prop.pattern, clause) !== undefined) score += 4;
  }
  return score;
}

/** The first part of `text` matching a schema pattern (anchors dropped), if any. */
export function patternMatch(pattern: string, text: string): string | undefined {
  try {
    return new RegExp(pattern.replace(/^\^/, '').replace(/\$$/, '')).exec(text)?.[0];
  } catch {
    return undefined;
  }
}

function bestTool(tools: readonly NoisyTool[], clause: string): NoisyTool | undefined {
  let best: { tool: NoisyTool; score: number } | undefined;
  for (const tool of tools) {
    const score = toolScore(tool, clause);
    if (score >= MIN_SCORE && (best === undefined || score > best.score)) best = { tool, score };
  }
  return best?.tool;
}

/**
 * The task's steps, in the order the request asks for them: each clause about a tool is a step (one per
 * enum value when a clause names several, "北京和上海" → two calls); a clause continuing the same tool
 * without a new value joins the step before it. A request about no tool has no steps.
 */
export function taskSteps(text: string, tools: readonly NoisyTool[]): NoisyStep[] {
  const clauses = text
    .split(CLAUSE_BREAK)
    .map((c) => (c ?? '').trim())
    .filter((c) => c.length > 0);
  const steps: NoisyStep[] = [];
  for (const clause of clauses) {
    const tool = bestTool(tools, clause);
    if (tool === undefined) continue;
    const values = enumValuesIn(tool, clause);
    const previous = steps.at(-1);
    if (values.length === 0) {
      if (previous?.tool !== tool.name) steps.push({ tool: tool.name, clause });
      continue;
    }
    const firstField = values[0]?.field;
    for (const pin of values.filter((v) => v.field === firstField)) {
      steps.push({ tool: tool.name, clause, pinned: pin });
    }
  }
  if (steps.length === 0 && clauses.length > 1) {
    const tool = bestTool(tools, text);
    if (tool !== undefined) steps.push({ tool: tool.name, clause: text });
  }
  return steps;
}
