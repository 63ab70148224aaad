/**
 * An agent's handoffs: the agents it may hand a run over to (`transfer_to_<agent>` tools), what of the
 * conversation each target keeps, and whether a handoff may reach an agent the run's API key could not
 * start itself. Parsed as part of the agents document (see `agents.ts`), checked here.
 */

import { agentReferenceList, MAX_TOOL_NAME_CHARS } from './agent-references.js';

/** What of the conversation the target of a handoff keeps. */
export type HandoffInputFilter = 'all' | 'summary' | { readonly last_n: number };

/** One target of an agent's handoffs, as declared (a bare name is `{agent: name}`). */
export interface HandoffSpec {
  readonly agent: string;
  /** Why the model would hand over to this agent; default: the target's `description`. */
  readonly description?: string;
  /** Default `all` (the whole conversation, as the OpenAI Agents SDK does without a filter). */
  readonly input_filter?: HandoffInputFilter;
}

/**
 * Whether an agent's handoffs and agent tools may reach agents outside the run's API key's `agents`:
 * `key` (the default) lets a limited key start the run only when every such target is the key's own;
 * `configured` lets it reach every declared target, the configuration vouching for them.
 */
export type HandoffReach = 'configured' | 'key';

export const HANDOFF_REACHES: readonly HandoffReach[] = ['configured', 'key'];

/**
 * The reach rule of one edge (docs/handoffs.md#who-may-do-what): under a key limited to `keyAgents`, the
 * agent `from` may hand off to `to`, or call it as a tool (`edge` names which), only when the key may use
 * `to` or `from` says `handoff_reach: configured`. Returns the rule that refuses it, or undefined when it
 * may; a key of every agent (`keyAgents` undefined) reaches every agent.
 */
export function reachRefusal(
  from: AgentHandoffs & { readonly name: string },
  to: string,
  edge: string,
  keyAgents: ReadonlySet<string> | undefined,
): string | undefined {
  if (!keyAgents || keyAgents.has(to) || from.handoff_reach === 'configured') return undefined;
  return `the ${edge} from "${from.name}" reaches it only with handoff_reach: configured on "${from.name}"`;
}

/** The handoff fields of an agent's declaration. */
export interface AgentHandoffs {
  readonly handoffs?: ReadonlyArray<string | HandoffSpec>;
  readonly handoff_reach?: HandoffReach;
}

/** The largest `last_n` a filter keeps. */
const MAX_LAST_N = 1000;

/** JSON Schema properties of the handoff fields, merged into the agent's schema. */
export const agentHandoffProperties = {
  handoffs: agentReferenceList({
    input_filter: {
      anyOf: [
        { enum: ['all', 'summary'] },
        {
          type: 'object',
          additionalProperties: false,
          required: ['last_n'],
          properties: { last_n: { type: 'integer', minimum: 1, maximum: MAX_LAST_N } },
        },
      ],
    },
  }),
  handoff_reach: { enum: HANDOFF_REACHES },
} as const;

/** An agent's handoff targets, each as a full spec (bare names expanded), in declared order. */
export function handoffTargets(spec: AgentHandoffs): HandoffSpec[] {
  return (spec.handoffs ?? []).map((h) => (typeof h === 'string' ? { agent: h } : h));
}

/**
 * Problems of the agents' handoffs that the schema cannot see, each naming the agent and the entry: a
 * target that is not a declared agent (with a did-you-mean), an agent handing off to itself, a target
 * listed twice.
 */
export function handoffProblems(
  agents: ReadonlyMap<string, AgentHandoffs>,
  file: string,
  closest: (name: string, among: Iterable<string>) => string | undefined,
): string[] {
  const problems: string[] = [];
  for (const [name, spec] of agents) {
    if (!Array.isArray(spec.handoffs)) continue;
    const seen = new Set<string>();
    spec.handoffs.forEach((entry, j) => {
      const target = typeof entry === 'string' ? entry : (entry as Partial<HandoffSpec> | null)?.agent;
      if (typeof target !== 'string') return;
      const where = `${file}: agent "${name}": handoffs[${j}]`;
      if (target === name) problems.push(`${where} "${target}" hands off to the agent itself`);
      else if (handoffToolName(target).length > MAX_TOOL_NAME_CHARS)
        problems.push(
          `${where} "${target}": the tool ${handoffToolName(target)} is longer than 64 characters`,
        );
      else if (!agents.has(target)) {
        const guess = closest(target, agents.keys());
        problems.push(
          `${where} "${target}" is not a declared agent${guess ? ` (did you mean "${guess}"?)` : ''}`,
        );
      } else if (seen.has(target)) problems.push(`${where} "${target}" is listed twice`);
      seen.add(target);
    });
  }
  return problems;
}

/** The name of the tool that hands a run over to `agent` (agent names are already tool-name safe). */
export function handoffToolName(agent: string): string {
  return `transfer_to_${agent}`;
}
