import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { requirePrincipal } from '../auth.js';
import { ApiError } from '../errors.js';
import type { ApiContext } from '../options.js';
import {
  CreateRunHeaders,
  CreateSessionBody,
  MessageBody,
  RunView,
  SessionParams,
  SessionView,
  responses,
} from '../schemas.js';
import { startRun } from '../start-run.js';

/** `/v1/sessions`: a session carries history, summary and task stack from one run to the next. */
export function sessionRoutes(app: FastifyInstance, ctx: ApiContext): void {
  app.post<{ Body: { session_id?: string } | undefined }>(
    '/v1/sessions',
    {
      schema: {
        tags: ['sessions'],
        summary: 'Create a session (a client-chosen id, or a generated one); 409 CONFLICT if it exists',
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
      const sessionId = request.body?.session_id ?? `sess_${randomUUID()}`;
      if (!(await ctx.deps.sessions.create(sessionId)))
        throw new ApiError(409, 'CONFLICT', `session ${sessionId} already exists`);
      ctx.log.info({ sessionId, key: principal.name }, 'session created');
      return reply.code(201).send({ session_id: sessionId });
    },
  );

  app.post<{ Params: { id: string }; Body: MessageBody; Headers: { 'idempotency-key'?: string } }>(
    '/v1/sessions/:id/messages',
    {
      schema: {
        tags: ['sessions'],
        summary: "Send a message: starts a run of the agent that continues the session's history",
        params: SessionParams,
        headers: CreateRunHeaders,
        body: MessageBody,
        response: responses({ 200: RunView, 201: RunView }),
      },
    },
    async (request, reply) => {
      const principal = requirePrincipal(ctx.auth, request);
      const { run, created } = await startRun(
        ctx,
        principal,
        { ...request.body, session_id: request.params.id },
        request.headers['idempotency-key'],
      );
      return reply.code(created ? 201 : 200).send(run);
    },
  );
}
