import { createHash } from 'node:crypto';
import {
  AgentReachError,
  VARIANT_AGENT_FIELDS,
  VARIANT_OVERRIDE_KEYS,
  type RunVariant,
  type VariantOverrides,
} from '@agent-reach/protocol';
import { aliasProblems } from '../tools/reach-policy.js';
import { closestName } from '../tools/suggest.js';
import { parseAgents, type AgentSpec, type AgentsFile } from './agents.js';
import { variantLimitProblems, type VariantCeilings } from './variant-limits.js';

/**
 * A run's variant over its agent: the agent as the run sees it (its fields replaced by the variant's, its
 * `loop` settings merged field by field), and the checks a variant passes before a run may start with it.
 * The agents file in force is never changed: a merged agent exists only in its run.
 */

const OVERRIDE_KEYS: ReadonlySet<string> = new Set(VARIANT_OVERRIDE_KEYS);

/** The agent as a run of `variant` sees it; the agent itself when there is no variant. */
export function variantAgent(agent: AgentSpec, overrides: VariantOverrides | undefined): AgentSpec {
  if (!overrides) return agent;
  const merged: Record<string, unknown> = { ...agent };
  for (const field of VARIANT_AGENT_FIELDS) {
    if (!Object.hasOwn(overrides, field) || overrides[field] === undefined) continue;
    merged[field] = field === 'loop' ? { ...agent.loop, ...overrides.loop } : overrides[field];
  }
  return merged as unknown as AgentSpec;
}

/** Where a variant may be checked: the agents in force and, optionally, the tools' argument schemas. */
export interface VariantCheckContext {
  agents: Pick<AgentsFile, 'agents' | 'document'>;
  /** The JSON Schema of a tool's arguments, when the fleet serves it (its aliases are checked against it). */
  parametersOf?: (tool: string) => unknown;
  /** The fleet's limits of an agent that sets none, which no variant may exceed. Default: the defaults'. */
  ceilings?: Readonly<VariantCeilings>;
}

/**
 * What is wrong with a variant for a run of `agentName`, each problem naming the key, the tool or the
 * field: a key a variant may not hold, a tool the agent does not list, aliases for an argument the tool
 * does not have (or a value outside its enum), a limit raised past what the agent may use (see
 * `variant-limits.ts`), and every problem the agents file's checks find in the merged agent. Empty when the variant may be used. Models are the caller's to check (what is declared
 * depends on the providers in force).
 */
export function variantProblems(ctx: VariantCheckContext, agentName: string, variant: RunVariant): string[] {
  const agent = ctx.agents.agents.get(agentName);
  if (!agent) return [`agent "${agentName}" is not declared`];
  const overrides = (variant.overrides ?? {}) as Record<string, unknown>;
  const problems: string[] = [];
  for (const key of Object.keys(overrides)) {
    if (OVERRIDE_KEYS.has(key)) continue;
    const guess = closestName(key, OVERRIDE_KEYS);
    problems.push(
      `overrides.${key} is not something a variant may override${guess ? ` (did you mean "${guess}"?)` : ''}; it may override: ${VARIANT_OVERRIDE_KEYS.join(', ')}`,
    );
  }
  problems.push(...toolProblems(ctx, agent, variant.overrides.tools));
  problems.push(...variantLimitProblems(agent, variant.overrides, ctx.ceilings));
  if (problems.length > 0) return problems;
  return mergedAgentProblems(ctx, agent, variant);
}

/** Tools a variant names that its agent does not list, and aliases its tool's schema does not allow. */
function toolProblems(
  ctx: VariantCheckContext,
  agent: AgentSpec,
  tools: VariantOverrides['tools'],
): string[] {
  const problems: string[] = [];
  const listed = new Set(agent.tools);
  for (const [tool, override] of Object.entries(tools ?? {})) {
    if (!listed.has(tool)) {
      const guess = closestName(tool, listed);
      problems.push(
        `overrides.tools.${tool}: agent "${agent.name}" does not list tool "${tool}"${guess ? ` (did you mean "${guess}"?)` : ''}; its tools: ${agent.tools.join(', ')}`,
      );
      continue;
    }
    const parameters = override.aliases ? ctx.parametersOf?.(tool) : undefined;
    if (parameters === undefined) continue;
    for (const problem of aliasProblems(override.aliases, parameters))
      problems.push(`overrides.tools.${tool}.aliases.${problem}`);
  }
  return problems;
}

/** Merged-agent verdicts by document in force, then by agent and overrides (an eval repeats a variant). */
const verdicts = new WeakMap<object, Map<string, string[]>>();
const MAX_VERDICTS = 200;

/** The agents file's checks of the agent merged with the variant (its other agents as they are). */
function mergedAgentProblems(ctx: VariantCheckContext, agent: AgentSpec, variant: RunVariant): string[] {
  const byDocument = verdicts.get(ctx.agents.document) ?? new Map<string, string[]>();
  verdicts.set(ctx.agents.document, byDocument);
  // A digest, not the text: a cached verdict holds 64 characters whatever the size of the overrides.
  const key = createHash('sha256')
    .update(JSON.stringify([agent.name, variant.name, variant.overrides]))
    .digest('hex');
  const known = byDocument.get(key);
  if (known) return [...known];
  const problems = checkMerged(ctx, agent, variant);
  if (byDocument.size >= MAX_VERDICTS) byDocument.clear();
  byDocument.set(key, problems);
  return problems;
}

function checkMerged(ctx: VariantCheckContext, agent: AgentSpec, variant: RunVariant): string[] {
  const merged = variantAgent(agent, variant.overrides);
  // The agents alone: a variant changes no tool group, so their sources (documents, servers) are not
  // checked again on every request.
  const candidate = {
    agents: ctx.agents.document.agents.map((a) => (a.name === agent.name ? merged : a)),
  };
  try {
    parseAgents(JSON.stringify(candidate), `variant "${variant.name}"`);
    return [];
  } catch (err) {
    if (!(err instanceof AgentReachError)) throw err;
    const details = err.details.length > 0 ? [...err.details] : [err.message];
    // Only the merged agent's problems: the others were in force already.
    const own = details.filter((d) => d.includes(`agent "${agent.name}"`));
    return own.length > 0 ? own : details;
  }
}
