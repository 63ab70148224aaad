import type { FastifyInstance } from 'fastify';
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

const OWNERSHIP =
  'A session belongs to the key that created it and to one agent: only that key, or a key for every agent, may read it or post to it (any other key gets 404), and only for that agent.';

/** `/v1/sessions`: a session carries history, summary and task stack from one run to the next. */
export function sessionRoutes(app: FastifyInstance, ctx: ApiContext): void {
  app.post<{ Body: { session_id?: string; agent?: string; grants?: string[] } | undefined }>(
    '/v1/sessions',
    {
      schema: {
        tags: ['sessions'],
        summary: 'Create a session (a client-chosen id, or a generated one); 409 CONFLICT if it exists',
        description: `${OWNERSHIP} Without \`agent\`, the first message binds it. \`grants\` (tools the agent lists that require a grant) hold for every run of the session; they need \`agent\`.`,
        body: CreateSessionBody,
        response: responses({ 201: SessionView }),
      },
      // The body is optional: no body means a generated id.
      preValidation: async (request) => {
        request.body ??= {};
      },
    },
    async (request, reply) => {
      const principal = requirePrincipal(ctx.auth, request);
      const agent = request.body?.agent;
      if (agent !== undefined) {
        assertAgentAllowed(principal, agent);
        if (!ctx.deps.agents.agents.has(agent))
          throw new ApiError('UNKNOWN_AGENT', `unknown agent "${agent}"`);
      }
      const grants = request.body?.grants ?? [];
      if (grants.length > 0 && agent === undefined)
        throw new ApiError('VALIDATION_FAILED', 'grants need the session\'s agent: give "agent" too', [
          { in: 'body', path: '/grants' },
        ]);
      if (agent !== undefined) checkGrants(ctx, agent, grants);
      const sessionId = request.body?.session_id ?? newSessionId();
      const owner = { principal: principal.id, tenant: principal.tenant, ...(agent ? { agent } : {}) };
      if (!(await ctx.deps.sessions.create(sessionId, owner)))
        throw new ApiError('CONFLICT', `session ${sessionId} already exists`);
      await ctx.deps.sessions.addGrants(sessionId, grants);
      ctx.log.info({ sessionId, key: principal.name }, 'session created');
      return reply.code(201).send({ session_id: sessionId, ...(agent ? { agent } : {}) });
    },
  );

  app.get<{ Params: { id: string } }>(
    '/v1/sessions/:id',
    {
      schema: {
        tags: ['sessions'],
        summary: "A session: its agent and runs (404 unless it is the caller's)",
        description: OWNERSHIP,
        params: SessionParams,
        response: responses({ 200: SessionDetailView }),
      },
    },
    async (request) => {
      const principal = requirePrincipal(ctx.auth, request);
      const info = await sessionForCaller(ctx, principal, request.params.id);
      return {
        session_id: info.sessionId,
        ...(info.agent ? { agent: info.agent } : {}),
        runs: info.runs,
        created_at: info.createdAt ?? 0,
        updated_at: info.updatedAt,
      };
    },
  );

  app.post<{
    Params: { id: string };
    Body: MessageBody;
    Headers: { 'idempotency-key'?: string; traceparent?: string };
  }>(
    '/v1/sessions/:id/messages',
    {
      schema: {
        tags: ['sessions'],
        summary: "Send a message: starts a run of the agent that continues the session's history",
        description: `${OWNERSHIP} A message for another agent than the session's is a 409 CONFLICT.`,
        params: SessionParams,
        headers: CreateRunHeaders,
        body: MessageBody,
        response: responses({ 200: RunView, 201: RunView }),
      },
    },
    async (request, reply) => {
      const principal = requirePrincipal(ctx.auth, request);
      checkRunRequest(ctx, request.body);
      await admitToSession(ctx, principal, request.params.id, request.body.agent);
      const { run, created } = await startRun(
        ctx,
        principal,
        { ...request.body, session_id: request.params.id },
        request.headers['idempotency-key'],
        request.headers.traceparent,
      );
      return reply.code(created ? 201 : 200).send(run);
    },
  );
}
