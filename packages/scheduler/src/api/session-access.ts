import type { SessionInfo } from '../runs/sessions.js';
import { assertAgentAllowed, seesTenant, type Principal } from './auth.js';
import { ApiError, notFound } from './errors.js';
import type { ApiContext } from './options.js';

/**
 * A session the caller may use: one created by the same key, or any session for a key that may use
 * every agent of the session's tenant. A key limited to some agents also needs the session's agent among them. Every refusal is
 * the 404 of a missing session, so a key learns nothing of sessions that are not its own.
 */
export async function sessionForCaller(
  ctx: ApiContext,
  principal: Principal,
  sessionId: string,
): Promise<SessionInfo> {
  const info = await ctx.deps.sessions.info(sessionId);
  const mine =
    info !== undefined &&
    seesTenant(principal, info.tenant) &&
    (principal.agents === undefined ||
      (info.principal === principal.id && (info.agent === undefined || principal.agents.has(info.agent))));
  if (!info || !mine) throw notFound(`session ${sessionId}`);
  return info;
}

/**
 * Admits a run of `agent` into a session: the caller may use the session (else 404) and the agent (else
 * 403), and a session holds the runs of one agent — the first message binds it, another agent is a 409.
 * An unknown agent is left to run creation (422 UNKNOWN_AGENT) and binds nothing.
 */
export async function admitToSession(
  ctx: ApiContext,
  principal: Principal,
  sessionId: string,
  agent: string,
): Promise<void> {
  assertAgentAllowed(principal, agent);
  const info = await sessionForCaller(ctx, principal, sessionId);
  if (!ctx.deps.agents.agents.has(agent)) return;
  const bound = info.agent ?? (await ctx.deps.sessions.bindAgent(sessionId, agent));
  if (bound !== agent)
    throw new ApiError(
      'CONFLICT',
      `session ${sessionId} belongs to agent "${bound}"; start another session for agent "${agent}"`,
    );
}

/**
 * Which of these sessions the caller may not see: for a key limited to some agents, every session it did
 * not create (one without an owner included); none for a key that may use every agent.
 */
export async function hiddenSessions(
  ctx: ApiContext,
  principal: Principal,
  sessionIds: readonly string[],
): Promise<ReadonlySet<string>> {
  if (principal.agents === undefined || sessionIds.length === 0) return new Set();
  const owners = await ctx.deps.sessions.owners(sessionIds);
  return new Set([...owners].filter(([, owner]) => owner !== principal.id).map(([id]) => id));
}

/**
 * The runs of a listing the caller may see: a run of another tenant, or of a session that is not the
 * caller's, is left out.
 */
export async function visibleRuns<T extends { sessionId?: string; tenant?: string }>(
  ctx: ApiContext,
  principal: Principal,
  runs: readonly T[],
): Promise<T[]> {
  const ours = runs.filter((r) => seesTenant(principal, r.tenant));
  const ids = ours.flatMap((r) => (r.sessionId ? [r.sessionId] : []));
  const hidden = await hiddenSessions(ctx, principal, ids);
  return hidden.size === 0 ? ours : ours.filter((r) => !r.sessionId || !hidden.has(r.sessionId));
}
