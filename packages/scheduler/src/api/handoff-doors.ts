import { handoffTargets, type AgentsFile } from '@agent-reach/shared';
import type { Principal } from './auth.js';
import { ApiError } from './errors.js';
import type { ApiContext } from './options.js';
import { sessionForCaller } from './session-access.js';

/**
 * The reach rule of handoffs (docs/handoffs.md#reach): a key limited to some agents may start a run
 * whose handoffs reach an agent outside its list only through agents whose `handoff_reach` is
 * `configured`. Every agent the run could reach by handoffs, from `agent` on, is looked at against the
 * configuration in force: a handoff from an agent of the default reach (`key`) to an agent the key may
 * not use refuses the run (403), naming the path. A key of every agent passes.
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
    for (const { agent: to } of handoffTargets(spec)) {
      if (paths.has(to) || !agents.agents.has(to)) continue;
      if (!allowed.has(to) && spec.handoff_reach !== 'configured')
        throw new ApiError(
          'FORBIDDEN',
          `this key may not use agent "${to}", which a run of "${agent}" may reach by handoff ` +
            `(${[...path, to].join(' → ')}); the handoff from "${from}" reaches it only with ` +
            `handoff_reach: configured on "${from}"`,
        );
      paths.set(to, [...path, to]);
      queue.push(to);
    }
  }
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
