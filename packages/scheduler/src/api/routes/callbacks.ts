import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { requirePrincipal } from '../auth.js';
import { ApiError, notFound } from '../errors.js';
import type { ApiContext } from '../options.js';
import { responses } from '../responses.js';

const DeadLetter = Type.Object({
  id: Type.String({ description: 'the delivery id, sent as webhook-id' }),
  run_id: Type.String({ description: 'the run (or workflow) whose event it is' }),
  event: Type.String({ description: 'run.finished, run.awaiting_approval or workflow.finished' }),
  url: Type.String({ description: 'where it went, without query or fragment' }),
  attempts: Type.Integer(),
  last_error: Type.String(),
  dead_lettered_at: Type.Number({ description: 'epoch ms' }),
});

const DeadLetterList = Type.Object({ dead_letters: Type.Array(DeadLetter) });

const DeadLettersQuery = Type.Object(
  { limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })) },
  { additionalProperties: false },
);

const DeliveryParams = Type.Object(
  { id: Type.String({ pattern: '^msg_[0-9a-f]{32}$', description: 'a delivery id' }) },
  { additionalProperties: false },
);

type ListRoute = { Querystring: Static<typeof DeadLettersQuery> };
type RedeliverRoute = { Params: Static<typeof DeliveryParams> };

/** `/v1/callbacks`: the dead letters of the key's callbacks, across runs, and delivering one again. */
export function callbackRoutes(app: FastifyInstance, ctx: ApiContext): void {
  app.get<ListRoute>('/v1/callbacks/dead-letters', { schema: LIST_SCHEMA }, (request) =>
    listDeadLetters(ctx, request),
  );
  app.post<RedeliverRoute>('/v1/callbacks/:id/redeliver', { schema: REDELIVER_SCHEMA }, (request, reply) =>
    redeliver(ctx, request, reply),
  );
}

const LIST_SCHEMA = {
  tags: ['callbacks'],
  summary: "Dead-lettered callback deliveries of this key's runs and workflows, newest first",
  description:
    'A delivery belongs to the key whose secret signs it (the key that asked for the callback). Deliveries of runs started through Redis, without a key, are seen in Bull Board. Empty without callbacks.',
  querystring: DeadLettersQuery,
  response: responses({ 200: DeadLetterList }),
};

const REDELIVER_SCHEMA = {
  tags: ['callbacks'],
  summary: 'Queue a dead-lettered delivery again, with all its attempts (202)',
  description:
    'The same webhook-id and body are sent, so a receiver that took it after all can tell it apart. 404 for a delivery of another key; 409 INVALID_STATE unless it is dead-lettered.',
  params: DeliveryParams,
  response: responses({ 202: Type.Object({ id: Type.String(), state: Type.Literal('pending') }) }),
};

async function listDeadLetters(ctx: ApiContext, request: FastifyRequest<ListRoute>) {
  const principal = requirePrincipal(ctx.auth, request);
  const deliveries = ctx.deps.callbacks?.deliveries;
  const letters = deliveries ? await deliveries.deadLetters(principal.name, request.query.limit ?? 50) : [];
  return { dead_letters: letters };
}

async function redeliver(ctx: ApiContext, request: FastifyRequest<RedeliverRoute>, reply: FastifyReply) {
  const principal = requirePrincipal(ctx.auth, request);
  const { id } = request.params;
  const deliveries = ctx.deps.callbacks?.deliveries;
  const outcome = deliveries ? await deliveries.redeliver(id, principal.name) : 'not_found';
  if (outcome === 'not_found') throw notFound(`callback delivery ${id}`);
  if (outcome === 'not_dead_lettered')
    throw new ApiError(
      'INVALID_STATE',
      `callback delivery ${id} is not dead-lettered: it is pending or delivered`,
    );
  ctx.log.info({ deliveryId: id, key: principal.name }, 'dead-lettered callback delivery queued again');
  return reply.code(202).send({ id, state: 'pending' });
}
