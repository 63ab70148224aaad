import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { assertAgentAllowed, requirePrincipal } from '../auth.js';
import { ApiError } from '../errors.js';
import type { ApiContext } from '../options.js';
import { checkGrants, checkRunRequest } from '../run-request.js';
import {
  CreateRunHeaders,
  CreateSessionBody,
  MessageBody,
  RunView,
  SessionDetailView,
  SessionParams,
  SessionView,
  newSessionId,
} from '@agent-reach/protocol';
import { responses } from '../responses.js';
import { admitToSession, sessionForCaller } from '../session-access.js';
import { startRun } from '../start-run.js';
import { sessionAgent } from '../handoff-doors.js';

const OWNERSHIP =
  'A session belongs to the key that created it and to one agent: only that key, or a key for every agent, may read it or post to it (any other key gets 404), and only for that agent.';

type CreateRoute = { Body: { session_id?: string; agent?: string; grants?: string[] } | undefined };
type SessionRoute = { Params: { id: string } };
type MessageRoute = {
  Params: { id: string };
  Body: MessageBody;
  Headers: { 'idempotency-key'?: string; traceparent?: string };
};

/** `/v1/sessions`: a session carries history, summary and task stack from one run to the next. */
export function sessionRoutes(app: FastifyInstance, ctx: ApiContext): void {
  app.post<CreateRoute>(
    '/v1/sessions',
    {
      schema: CREATE_SCHEMA,
      // The body is optional: no body means a generated id.
      preValidation: async (request) => {
        request.body ??= {};
      },
    },
    (request, reply) => createSession(ctx, request, reply),
  );
  app.get<SessionRoute>('/v1/sessions/:id', { schema: GET_SCHEMA }, (request) => getSession(ctx, request));
  app.post<MessageRoute>('/v1/sessions/:id/messages', { schema: MESSAGE_SCHEMA }, (request, reply) =>
    postMessage(ctx, request, reply),
  );
}

const CREATE_SCHEMA = {
  tags: ['sessions'],
  summary: 'Create a session (a client-chosen id, or a generated one); 409 CONFLICT if it exists',
  description: `${OWNERSHIP} Without \`agent\`, the first message binds it. \`grants\` (tools the agent lists that require a grant) hold for every run of the session; they need \`agent\`.`,
  body: CreateSessionBody,
  response: responses({ 201: SessionView }),
};

const GET_SCHEMA = {
  tags: ['sessions'],
  summary: "A session: its agent and runs (404 unless it is the caller's)",
  description: OWNERSHIP,
  params: SessionParams,
  response: responses({ 200: SessionDetailView }),
};

const MESSAGE_SCHEMA = {
  tags: ['sessions'],
  summary: "Send a message: starts a run of the agent that continues the session's history",
  description: `${OWNERSHIP} A message for another agent than the session's is a 409 CONFLICT.`,
  params: SessionParams,
  headers: CreateRunHeaders,
  body: MessageBody,
  response: responses({ 200: RunView, 201: RunView }),
};

/** `POST /v1/sessions`: a session of the caller's key, bound to its agent now or by its first message. */
async function createSession(ctx: ApiContext, request: FastifyRequest<CreateRoute>, reply: FastifyReply) {
  const principal = requirePrincipal(ctx.auth, request);
  const agent = request.body?.agent;
  if (agent !== undefined) {
    assertAgentAllowed(principal, agent);
    if (!ctx.deps.agents.agents.has(agent)) throw new ApiError('UNKNOWN_AGENT', `unknown agent "${agent}"`);
  }
  const grants = request.body?.grants ?? [];
  if (grants.length > 0 && agent === undefined)
    throw new ApiError('VALIDATION_FAILED', 'grants need the session\'s agent: give "agent" too', [
      { in: 'body', path: '/grants' },
    ]);
  if (agent !== undefined) checkGrants(ctx, agent, grants);
  const sessionId = request.body?.session_id ?? newSessionId();
  const owner = { principal: principal.id, tenant: principal.tenant, ...(agent ? { agent } : {}) };
  // Session ids are per tenant: only a session of the key's own tenant can be in the way.
  if (!(await ctx.deps.sessions.create(sessionId, owner)))
    throw new ApiError('CONFLICT', `session ${sessionId} already exists`);
  await ctx.deps.sessions.addGrants(sessionId, grants, principal.tenant);
  ctx.log.info({ sessionId, key: principal.name }, 'session created');
  return reply.code(201).send({ session_id: sessionId, ...(agent ? { agent } : {}) });
}

/** `GET /v1/sessions/:id`: the session's agent and runs. */
async function getSession(ctx: ApiContext, request: FastifyRequest<SessionRoute>) {
  const principal = requirePrincipal(ctx.auth, request);
  const info = await sessionForCaller(ctx, principal, request.params.id);
  return {
    session_id: info.sessionId,
    ...(info.agent ? { agent: info.agent } : {}),
    ...(info.lastAgent ? { last_agent: info.lastAgent } : {}),
    runs: info.runs,
    created_at: info.createdAt ?? 0,
    updated_at: info.updatedAt,
  };
}

/** `POST /v1/sessions/:id/messages`: a run of the session's agent that continues its history. */
async function postMessage(ctx: ApiContext, request: FastifyRequest<MessageRoute>, reply: FastifyReply) {
  const principal = requirePrincipal(ctx.auth, request);
  checkRunRequest(ctx, request.body);
  const { agent, inCharge } = await sessionAgent(ctx, principal, request.params.id, request.body.agent);
  await admitToSession(ctx, principal, request.params.id, agent);
  const { run, created } = await startRun(
    ctx,
    principal,
    { ...request.body, agent, session_id: request.params.id, ...(inCharge ? { in_charge: inCharge } : {}) },
    request.headers['idempotency-key'],
    request.headers.traceparent,
  );
  return reply.code(created ? 201 : 200).send(run);
}
