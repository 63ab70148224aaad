import type { CreateRunInput } from './client-api.js';
import { call, idempotencyHeaders, type ClientContext } from './request.js';
import { runBody } from './runs.js';
import type { Run } from './types.js';

export const createSession = (ctx: ClientContext, sessionId?: string) =>
  call<{ session_id: string }>(ctx, 'POST', '/v1/sessions', {
    body: sessionId ? { session_id: sessionId } : {},
  });

export const sendMessage = (
  ctx: ClientContext,
  sessionId: string,
  i: Omit<CreateRunInput, 'sessionId' | 'agent'> & { agent?: string },
) =>
  call<Run>(ctx, 'POST', `/v1/sessions/${encodeURIComponent(sessionId)}/messages`, {
    body: i.agent ? runBody({ ...i, agent: i.agent }) : withoutAgent(runBody({ ...i, agent: '' })),
    ...idempotencyHeaders(i.idempotencyKey),
  });

/** A message's body that names no agent: the session's goes on (see docs/handoffs.md#sessions). */
function withoutAgent<T extends { agent: string }>(body: T): Omit<T, 'agent'> {
  const { agent: _agent, ...rest } = body;
  return rest;
}
