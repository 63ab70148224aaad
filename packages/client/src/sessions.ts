import type { CreateRunInput } from './client-api.js';
import { call, idempotencyHeaders, type ClientContext } from './request.js';
import { runBody } from './runs.js';
import type { Run } from './types.js';

export const createSession = (ctx: ClientContext, sessionId?: string) =>
  call<{ session_id: string }>(ctx, 'POST', '/v1/sessions', {
    body: sessionId ? { session_id: sessionId } : {},
  });

export const sendMessage = (ctx: ClientContext, sessionId: string, i: Omit<CreateRunInput, 'sessionId'>) =>
  call<Run>(ctx, 'POST', `/v1/sessions/${encodeURIComponent(sessionId)}/messages`, {
    body: runBody(i),
    ...idempotencyHeaders(i.idempotencyKey),
  });
