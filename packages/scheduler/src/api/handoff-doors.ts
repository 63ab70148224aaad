import {
  agentToolTargets,
  handoffTargets,
  reachRefusal,
  type AgentSpec,
  type AgentsFile,
} from '@agent-reach/shared';
import type { Principal } from './auth.js';
import { ApiError } from './errors.js';
import type { ApiContext } from './options.js';
import { sessionForCaller } from './session-access.js';

/**
 * The reach rule of handoffs and agents called as tools (docs/handoffs.md#reach, docs/agent-tools.md): a
 * key limited to some agents may start a run that reaches an agent outside its list — by a handoff or by
 * a call of an agent tool, which starts a child run of it under the same key — only through agents whose
 * `handoff_reach` is `configured`. Every agent the run could reach that way, from `agent` on and through
 * children's handoffs and calls alike, is looked at against the configuration in force: an edge from an
 * agent of the default reach (`key`) to an agent the key may not use refuses the run (403), naming the
 * path. A key of every agent passes. A run's scheduler checks each handoff and agent-tool call again, against
 * the configuration in force at that call (agent-loop/handoffs.ts).
 */
export function assertHandoffReach(principal: Principal, agent: string, agents: AgentsFile): void {
  const allowed = principal.agents;
  if (!allowed) return;
  const paths = new Map<string, string[]>([[agent, [agent]]]);
  const queue = [agent];
  for (let from = queue.shift(); from !== undefined; from = queue.shift()) {
    const spec = agents.agents.get(from);
    if (!spec) continue;
    const path = paths.get(from) ?? [from];
    for (const { to, how } of reachedFrom(spec)) {
      if (!agents.agents.has(to)) continue;
      // Every edge is checked, also one to an agent already reached another way.
      const rule = reachRefusal(spec, to, how.edge, allowed);
      if (rule)
        throw new ApiError(
          'FORBIDDEN',
          `this key may not use agent "${to}", which a run of "${agent}" may reach ${how.phrase} ` +
            `(${[...path, to].join(' → ')}); ${rule}`,
        );
      if (paths.has(to)) continue;
      paths.set(to, [...path, to]);
      queue.push(to);
    }
  }
}

const BY_HANDOFF = { phrase: 'by handoff', edge: 'handoff' };

/** The agents an agent reaches in one step: its handoff targets and the agents it calls as tools. */
function reachedFrom(spec: AgentSpec): Array<{ to: string; how: { phrase: string; edge: string } }> {
  return [
    ...handoffTargets(spec).map(({ agent }) => ({ to: agent, how: BY_HANDOFF })),
    ...agentToolTargets(spec).map(({ agent, name }) => ({
      to: agent,
      how: { phrase: `as an agent tool (${name})`, edge: `agent tool ${name}` },
    })),
  ];
}

/**
 * The agent of a session's next message and the agent in charge at its start: the one the caller names
 * (its run starts with it), else the session's agent, going on with the agent its last run handed off to.
 */
export async function sessionAgent(
  ctx: ApiContext,
  principal: Principal,
  sessionId: string,
  named: string | undefined,
): Promise<{ agent: string; inCharge?: string }> {
  if (named !== undefined) return { agent: named };
  const info = await sessionForCaller(ctx, principal, sessionId, [principal.tenant]);
  if (!info.agent)
    throw new ApiError(
      'VALIDATION_FAILED',
      `session ${sessionId} has no agent yet: name one with "agent" in its first message`,
      [{ in: 'body', path: '/agent' }],
    );
  return { agent: info.agent, ...(info.lastAgent ? { inCharge: info.lastAgent } : {}) };
}
