import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import { DEFAULT_TENANT } from '@agent-reach/protocol';
import {
  EventRefused,
  verifyEvent,
  type InboundEvent,
  type InboundEventsConfig,
} from '../../triggers/inbound-events.js';
import { renderTemplate } from '../../triggers/template.js';
import { createTriggerMetrics } from '../../triggers/trigger-metrics.js';
import { idempotencyScope, type Principal } from '../auth.js';
import { admitRun } from '../tenant-admission.js';
import { keyedWorkflowId } from './workflows.js';
import { ApiError } from '../errors.js';
import type { ApiContext } from '../options.js';
import { responses } from '../responses.js';
import { startRun } from '../start-run.js';

type EventRoute = { Params: { name: string }; Body: Buffer };

const EventAccepted = Type.Object({
  event: Type.String(),
  event_id: Type.String(),
  /** True when this id was seen before: nothing was started. */
  duplicate: Type.Boolean(),
  run_ids: Type.Array(Type.String()),
  workflow_ids: Type.Array(Type.String()),
});

/**
 * `POST /v1/events/:name`: an event another system sends, signed by it (no API key). Its signature and
 * timestamp are checked over the raw body, its id claimed once (SET NX, kept `dedupTtlS`), then the runs
 * the events file maps it to are started with the payload in their input.
 */
export async function inboundEventRoutes(
  app: FastifyInstance,
  ctx: ApiContext,
  config: InboundEventsConfig,
): Promise<void> {
  const metrics = ctx.deps.metricsRegistry ? createTriggerMetrics(ctx.deps.metricsRegistry) : undefined;
  // A scope of its own: the body is read raw (the signature covers its bytes), up to the events' limit.
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser(
      '*',
      { parseAs: 'buffer', bodyLimit: config.maxBodyBytes },
      (_req, body, done) => done(null, body),
    );
    scope.post<EventRoute>(
      '/v1/events/:name',
      {
        bodyLimit: config.maxBodyBytes,
        schema: {
          tags: ['events'],
          summary:
            'Receive a signed event: start the runs the events file maps it to (202); a repeated id starts nothing (200)',
          description:
            'Signed per Standard Webhooks or by an HMAC header as configured. 401 SIGNATURE_INVALID for a missing or wrong signature, 400 EVENT_STALE for a timestamp more than 5 min away, 413 BODY_TOO_LARGE over the limit, 404 UNKNOWN_EVENT for a name the file does not declare.',
          params: Type.Object({ name: Type.String({ pattern: '^[A-Za-z0-9_.-]{1,100}$' }) }),
          response: responses({ 200: EventAccepted, 202: EventAccepted }),
        },
      },
      async (request, reply) => {
        // Labelled by declared names only: a sender's made-up names stay one label value.
        const event = config.events.has(request.params.name) ? request.params.name : 'undeclared';
        try {
          const sent = await receiveEvent(ctx, config, request, reply);
          metrics?.events.inc({ event, outcome: reply.statusCode === 200 ? 'duplicate' : 'started' });
          return sent;
        } catch (err) {
          metrics?.events.inc({ event, outcome: err instanceof ApiError ? err.code : 'INTERNAL' });
          throw err;
        }
      },
    );
  });
}

async function receiveEvent(
  ctx: ApiContext,
  config: InboundEventsConfig,
  request: FastifyRequest<EventRoute>,
  reply: FastifyReply,
) {
  const { name } = request.params;
  const event = config.events.get(name);
  if (!event) throw new ApiError('UNKNOWN_EVENT', `no event "${name}" is declared`);
  const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
  let id: string;
  try {
    id = verifyEvent(event, request.headers, body, Date.now(), config.toleranceS);
  } catch (err) {
    if (err instanceof EventRefused) throw new ApiError(err.code, err.message);
    throw err;
  }
  let payload: unknown;
  try {
    payload = body.length === 0 ? {} : JSON.parse(body.toString('utf8'));
  } catch {
    throw new ApiError('MALFORMED_JSON');
  }
  const { redis, keys } = ctx.deps;
  const seen = `${keys.prefix}:{events}:seen:${name}:${id}`;
  const first = await redis.set(seen, '1', 'EX', config.dedupTtlS, 'NX');
  if (first !== 'OK') {
    ctx.log.info({ event: name, eventId: id }, 'repeated event ignored');
    return reply
      .code(200)
      .send({ event: name, event_id: id, duplicate: true, run_ids: [], workflow_ids: [] });
  }
  try {
    const { runIds, workflowIds } = await startEventRuns(ctx, event, id, payload);
    ctx.log.info({ event: name, eventId: id, runIds, workflowIds }, 'event received');
    return await reply
      .code(202)
      .send({ event: name, event_id: id, duplicate: false, run_ids: runIds, workflow_ids: workflowIds });
  } catch (err) {
    // Nothing claimed for good: the sender's retry is taken (its runs' ids derive from the event id).
    await redis.del(seen).catch(() => undefined);
    throw err;
  }
}

/** Starts each run or workflow the event maps to, as a principal of the event's tenant, idempotent per event id. */
async function startEventRuns(
  ctx: ApiContext,
  event: InboundEvent,
  id: string,
  payload: unknown,
): Promise<{ runIds: string[]; workflowIds: string[] }> {
  const principal: Principal = {
    id: `event-${event.name}`,
    name: `event:${event.name}`,
    agents: undefined,
    tenant: event.tenant,
    tenants: new Set([event.tenant ?? DEFAULT_TENANT]),
    variants: false,
  };
  const values = { payload, event: { name: event.name, id } };
  const started = { runIds: [] as string[], workflowIds: [] as string[] };
  for (const [i, r] of event.runs.entries()) {
    const metadata = {
      ...Object.fromEntries(Object.entries(r.metadata ?? {}).map(([k, v]) => [k, renderTemplate(v, values)])),
      event: event.name,
      event_id: id,
    };
    const input = renderTemplate(r.input, values);
    const key = `event:${event.name}:${id}:${i}`;
    if (r.workflow !== undefined) {
      started.workflowIds.push(
        await startEventWorkflow(ctx, principal, r.workflow, { input, metadata, key }),
      );
      continue;
    }
    const { run } = await startRun(
      ctx,
      principal,
      { agent: String(r.agent), input, metadata, ...(r.model !== undefined ? { model: r.model } : {}) },
      key,
    );
    started.runIds.push(run.run_id);
  }
  return started;
}

/** Starts a workflow of the workflows file for an event, its id derived from the event's (a repeat converges). */
async function startEventWorkflow(
  ctx: ApiContext,
  principal: Principal,
  name: string,
  req: { input: string; metadata: Record<string, string>; key: string },
): Promise<string> {
  const wf = ctx.deps.workflows;
  const definition = wf?.resolve(name);
  if (!wf || !definition)
    throw new ApiError('UNKNOWN_WORKFLOW', wf?.unknown(name) ?? `unknown workflow "${name}"`);
  await admitRun(ctx, principal.tenant, undefined);
  const { workflowId } = await wf.start({
    workflow: name,
    definition,
    input: req.input,
    workflowId: keyedWorkflowId(`event:${idempotencyScope(principal)}`, req.key),
    metadata: req.metadata,
    tenant: principal.tenant,
  });
  return workflowId;
}
