import { DEFAULT_TENANT } from '@agent-reach/protocol';
import { sessionKeyId, type SessionInfo } from '../runs/sessions.js';
import { assertAgentAllowed, seesTenant, type Principal } from './auth.js';
import { ApiError, notFound } from './errors.js';
import type { ApiContext } from './options.js';

/** The tenants whose sessions a key reads, in the order an id is looked up: its own first. */
const readOrder = (principal: Principal) => [
  principal.tenant,
  ...[...principal.tenants].filter((t) => t !== principal.tenant).sort(),
];

/**
 * A session the caller may use: one created by the same key, or any session for a key that may use
 * every agent of the session's tenant. A key limited to some agents also needs the session's agent among
 * them. Session ids are per tenant: the id is looked up in `tenants` (default: the key's own tenant, then
 * the others it sees). Every refusal is the 404 of a missing session, so a key learns nothing of sessions
 * that are not its own.
 */
export async function sessionForCaller(
  ctx: ApiContext,
  principal: Principal,
  sessionId: string,
  tenants: readonly string[] = readOrder(principal),
): Promise<SessionInfo> {
  for (const tenant of tenants) {
    if (!seesTenant(principal, tenant)) continue;
    const info = await ctx.deps.sessions.info(sessionId, tenant);
    if (info === undefined) continue;
    const mine =
      principal.agents === undefined ||
      (info.principal === principal.id && (info.agent === undefined || principal.agents.has(info.agent)));
    if (mine) return { ...info, tenant };
  }
  throw notFound(`session ${sessionId}`);
}

/**
 * Admits a run of `agent` into a session: the caller may use the session (else 404) and the agent (else
 * 403), and a session holds the runs of one agent — the first message binds it, another agent is a 409.
 * The run is created in the key's own tenant, so the session is one of that tenant's. An unknown agent
 * is left to run creation (422 UNKNOWN_AGENT) and binds nothing.
 */
export async function admitToSession(
  ctx: ApiContext,
  principal: Principal,
  sessionId: string,
  agent: string,
): Promise<void> {
  assertAgentAllowed(principal, agent);
  const info = await sessionForCaller(ctx, principal, sessionId, [principal.tenant]);
  if (!ctx.deps.agents.agents.has(agent)) return;
  const bound = info.agent ?? (await ctx.deps.sessions.bindAgent(sessionId, agent, principal.tenant));
  if (bound !== agent)
    throw new ApiError(
      'CONFLICT',
      `session ${sessionId} belongs to agent "${bound}"; start another session for agent "${agent}"`,
    );
}

/**
 * Which of these sessions of `tenant` the caller may not see: for a key limited to some agents, every
 * session it did not create (one without an owner included); none for a key that may use every agent.
 */
export async function hiddenSessions(
  ctx: ApiContext,
  principal: Principal,
  sessionIds: readonly string[],
  tenant?: string,
): Promise<ReadonlySet<string>> {
  if (principal.agents === undefined || sessionIds.length === 0) return new Set();
  const owners = await ctx.deps.sessions.owners(sessionIds, tenant);
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
  if (principal.agents === undefined) return ours;
  // Session ids are per tenant: each tenant's are looked up among its own.
  const tenants = new Set(ours.map((r) => r.tenant ?? DEFAULT_TENANT));
  const hidden = new Set<string>();
  for (const tenant of tenants) {
    const ids = ours.flatMap((r) =>
      (r.tenant ?? DEFAULT_TENANT) === tenant && r.sessionId ? [r.sessionId] : [],
    );
    for (const id of await hiddenSessions(ctx, principal, ids, tenant)) hidden.add(sessionKeyId(id, tenant));
  }
  return ours.filter((r) => !r.sessionId || !hidden.has(sessionKeyId(r.sessionId, r.tenant)));
}
