import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isFinalStatus, MAX_INPUT_CHARS, NAME_PATTERN } from '@agent-reach/protocol';
import { connectionOf } from '../../triggers/connection.js';
import { createScheduleWorker, type ScheduleWorker } from '../../triggers/schedule-worker.js';
import { ScheduleStore } from '../../triggers/schedule-store.js';
import {
  OVERLAP_POLICIES,
  ScheduleInvalid,
  scheduleOf,
  type Schedule,
} from '../../triggers/schedule-spec.js';
import { renderTemplate } from '../../triggers/template.js';
import { createTriggerMetrics } from '../../triggers/trigger-metrics.js';
import { assertAgentAllowed, idempotencyScope, requirePrincipal, type Principal } from '../auth.js';
import { assertHandoffReach } from '../handoff-doors.js';
import { admitRun } from '../tenant-admission.js';
import { keyedWorkflowId } from './workflows.js';
import { ApiError, notFound } from '../errors.js';
import type { ApiContext } from '../options.js';
import { responses } from '../responses.js';
import { checkRunRequest } from '../run-request.js';
import { startRun } from '../start-run.js';
import { randomBytes } from 'node:crypto';

const Metadata = Type.Record(Type.String({ maxLength: 64 }), Type.String({ maxLength: 512 }), {
  maxProperties: 16,
});

const CreateScheduleBody = Type.Object(
  {
    agent: Type.Optional(Type.String({ pattern: NAME_PATTERN.source })),
    workflow: Type.Optional(Type.String({ pattern: NAME_PATTERN.source })),
    input: Type.String({ minLength: 1, maxLength: MAX_INPUT_CHARS }),
    cron: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    timezone: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    every_ms: Type.Optional(Type.Integer({ minimum: 1 })),
    metadata: Type.Optional(Metadata),
    model: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    overlap: Type.Optional(Type.Union(OVERLAP_POLICIES.map((p) => Type.Literal(p)))),
    catchup_window_ms: Type.Optional(Type.Integer({ minimum: 0 })),
  },
  { additionalProperties: false },
);
type CreateScheduleBody = Static<typeof CreateScheduleBody>;

const Firing = Type.Object({
  scheduled_at: Type.Integer(),
  fired_at: Type.Integer(),
  outcome: Type.String(),
  run_id: Type.Optional(Type.String()),
  workflow_id: Type.Optional(Type.String()),
  error: Type.Optional(Type.String()),
});

const ScheduleView = Type.Object({
  schedule_id: Type.String(),
  tenant: Type.String(),
  /** The API key (by name) the schedule's runs start as. */
  key_name: Type.String(),
  agent: Type.Optional(Type.String()),
  workflow: Type.Optional(Type.String()),
  input: Type.String(),
  cron: Type.Optional(Type.String()),
  timezone: Type.Optional(Type.String()),
  every_ms: Type.Optional(Type.Integer()),
  metadata: Type.Optional(Type.Record(Type.String(), Type.String())),
  model: Type.Optional(Type.String()),
  overlap: Type.String(),
  catchup_window_ms: Type.Integer(),
  paused: Type.Boolean(),
  created_at: Type.Integer(),
  next_firing_at: Type.Optional(Type.Integer()),
  firings: Type.Array(Firing),
});

const ScheduleParams = Type.Object({ id: Type.String({ pattern: '^sch_[a-f0-9]{24}$' }) });
type Params = { Params: Static<typeof ScheduleParams> };

const TAGS = ['schedules'];
const one = (summary: string, ok = 200) => ({
  tags: TAGS,
  summary,
  params: ScheduleParams,
  response: responses({ [ok]: ScheduleView }),
});

/** `/v1/schedules`: create, list, get, pause, resume, trigger and delete schedules of the key's tenant. */
export function scheduleRoutes(app: FastifyInstance, ctx: ApiContext): ScheduleStore {
  const store = new ScheduleStore(ctx.deps.redis, ctx.deps.keys);
  app.post<{ Body: CreateScheduleBody }>(
    '/v1/schedules',
    {
      schema: {
        tags: TAGS,
        summary: 'Create a schedule: runs of an agent on a cron expression (in a time zone) or an interval',
        description:
          'A bad cron expression or time zone is a 400 VALIDATION_FAILED naming it. The key must be allowed the agent. `{{scheduled_at}}` in `input` is replaced by the firing time (ISO 8601).',
        body: CreateScheduleBody,
        response: responses({ 201: ScheduleView }),
      },
    },
    (request, reply) => createSchedule(ctx, store, request, reply),
  );
  app.get(
    '/v1/schedules',
    {
      schema: {
        tags: TAGS,
        summary: "The tenant's schedules with their next and last firings",
        response: responses({ 200: Type.Object({ schedules: Type.Array(ScheduleView) }) }),
      },
    },
    async (request) => {
      const principal = requirePrincipal(ctx.auth, request);
      const all = (await store.list()).filter((s) => visible(principal, s));
      return { schedules: await Promise.all(all.map((s) => store.view(s))) };
    },
  );
  app.get<Params>(
    '/v1/schedules/:id',
    { schema: one('A schedule with its next and last firings') },
    async (request) => store.view(await scheduleFor(ctx, store, request)),
  );
  app.post<Params>(
    '/v1/schedules/:id/pause',
    { schema: one('Pause a schedule: no firing until resumed') },
    async (request) => store.view(await store.setPaused(await scheduleFor(ctx, store, request), true)),
  );
  app.post<Params>('/v1/schedules/:id/resume', { schema: one('Resume a paused schedule') }, async (request) =>
    store.view(await store.setPaused(await scheduleFor(ctx, store, request), false)),
  );
  app.post<Params>(
    '/v1/schedules/:id/trigger',
    { schema: one('Fire a schedule now, once, out of its timing (202); its overlap policy applies', 202) },
    async (request, reply) => {
      const schedule = await scheduleFor(ctx, store, request);
      await store.trigger(schedule.id, Date.now());
      return reply.code(202).send(await store.view(schedule));
    },
  );
  app.delete<Params>(
    '/v1/schedules/:id',
    {
      schema: {
        tags: TAGS,
        summary: 'Delete a schedule (204); the runs it started stay',
        params: ScheduleParams,
      },
    },
    async (request, reply) => {
      const schedule = await scheduleFor(ctx, store, request);
      await store.delete(schedule.id);
      return reply.code(204).send();
    },
  );
  app.addHook('onClose', () => store.close());
  return store;
}

/**
 * A key sees the schedules of its tenants whose agent it may run; a key limited to some agents sees no
 * workflow schedule (it could not start the workflow from the schedule's key's view of its nodes).
 */
function visible(principal: Principal, s: Schedule): boolean {
  if (!principal.tenants.has(s.tenant)) return false;
  if (!principal.agents) return true;
  return s.agent !== undefined && principal.agents.has(s.agent);
}

/** Checks what a schedule starts, as starting it now would: the agent (403, 422) or the workflow. */
function checkTarget(ctx: ApiContext, principal: Principal, body: CreateScheduleBody): void {
  if (body.workflow !== undefined) {
    const definition = ctx.deps.workflows?.resolve(body.workflow);
    if (!definition)
      throw new ApiError(
        'UNKNOWN_WORKFLOW',
        ctx.deps.workflows?.unknown(body.workflow) ?? `unknown workflow "${body.workflow}"`,
      );
    for (const node of definition.spec.nodes) {
      assertAgentAllowed(principal, node.agent);
      assertHandoffReach(principal, node.agent, ctx.deps.agents);
    }
    return;
  }
  if (body.agent === undefined) return; // refused by scheduleOf, naming both fields
  assertAgentAllowed(principal, body.agent);
  assertHandoffReach(principal, body.agent, ctx.deps.agents);
  if (!ctx.deps.agents.agents.has(body.agent))
    throw new ApiError('UNKNOWN_AGENT', `unknown agent "${body.agent}"`);
}

/** The schedule the request names, as far as its key may see it (404 otherwise). */
async function scheduleFor(
  ctx: ApiContext,
  store: ScheduleStore,
  request: FastifyRequest<Params>,
): Promise<Schedule> {
  const principal = requirePrincipal(ctx.auth, request);
  const schedule = await store.get(request.params.id);
  if (!schedule || !visible(principal, schedule)) throw notFound(`schedule ${request.params.id}`);
  return schedule;
}

/** `POST /v1/schedules`: checks the request as a run request is checked, then stores and arms it. */
async function createSchedule(
  ctx: ApiContext,
  store: ScheduleStore,
  request: FastifyRequest<{ Body: CreateScheduleBody }>,
  reply: FastifyReply,
) {
  const principal = requirePrincipal(ctx.auth, request);
  const body = request.body;
  checkTarget(ctx, principal, body);
  checkRunRequest(ctx, body);
  let schedule: Schedule;
  try {
    schedule = scheduleOf(
      `sch_${randomBytes(12).toString('hex')}`,
      body,
      { tenant: principal.tenant, keyId: principal.id, keyName: principal.name },
      Date.now(),
    );
  } catch (err) {
    if (err instanceof ScheduleInvalid)
      throw new ApiError('VALIDATION_FAILED', `body${err.message}`, [
        { in: 'body', path: err.path, message: err.problem },
      ]);
    throw err;
  }
  await store.create(schedule);
  ctx.log.info(
    { scheduleId: schedule.id, agent: schedule.agent, workflow: schedule.workflow, key: principal.name },
    'schedule created',
  );
  return reply.code(201).send(await store.view(schedule));
}

/**
 * Starts this process's worker of schedule firings: each firing starts its run through `startRun`, as
 * `POST /v1/runs` does for the key that created the schedule (a key since removed starts nothing), with
 * an idempotency key of the schedule and the firing time, so a firing taken twice starts one run.
 */
export function startScheduleFirings(
  app: FastifyInstance,
  ctx: ApiContext,
  store: ScheduleStore,
): ScheduleWorker {
  const connection = connectionOf(ctx.deps.redis);
  const worker = createScheduleWorker(connection, ctx.deps.keys, {
    store,
    logger: ctx.log,
    ...(ctx.deps.metricsRegistry ? { metrics: createTriggerMetrics(ctx.deps.metricsRegistry) } : {}),
    ...(ctx.deps.triggers?.lockDurationMs !== undefined
      ? { lockDurationMs: ctx.deps.triggers.lockDurationMs }
      : {}),
    ...(ctx.deps.triggers?.stalledIntervalMs !== undefined
      ? { stalledIntervalMs: ctx.deps.triggers.stalledIntervalMs }
      : {}),
    isRunActive: async (id) => {
      if (id.startsWith('wf_')) return (await ctx.deps.workflows?.get(id))?.status === 'running';
      const summary = await ctx.deps.control.store.summary(id);
      return summary !== undefined && !isFinalStatus(summary.status);
    },
    startRun: (schedule, scheduledAt, firingKey) => fireSchedule(ctx, schedule, scheduledAt, firingKey),
  });
  app.addHook('onClose', async () => {
    await worker.close();
    await connection.quit().catch(() => undefined);
  });
  return worker;
}

/** Starts a firing's run (or workflow) as the schedule's key; its id derives from `firingKey`. */
async function fireSchedule(
  ctx: ApiContext,
  schedule: Schedule,
  scheduledAt: number,
  firingKey: string,
): Promise<string> {
  const principal = ctx.auth.byId(schedule.key_id);
  if (!principal) throw new Error(`the API key that created schedule ${schedule.id} is no longer configured`);
  const at = new Date(scheduledAt).toISOString();
  const input = renderTemplate(schedule.input, { scheduled_at: at, schedule_id: schedule.id });
  const metadata = { ...schedule.metadata, schedule_id: schedule.id, scheduled_at: at };
  if (schedule.workflow !== undefined) {
    const wf = ctx.deps.workflows;
    const definition = wf?.resolve(schedule.workflow);
    if (!wf || !definition) throw new Error(`workflow "${schedule.workflow}" is not in the configuration`);
    for (const node of definition.spec.nodes) assertAgentAllowed(principal, node.agent);
    await admitRun(ctx, principal.tenant, undefined);
    const { workflowId } = await wf.start({
      workflow: schedule.workflow,
      definition,
      input,
      workflowId: keyedWorkflowId(`schedule:${idempotencyScope(principal)}`, firingKey),
      metadata,
      tenant: principal.tenant,
    });
    return workflowId;
  }
  const { run } = await startRun(
    ctx,
    principal,
    {
      agent: String(schedule.agent),
      input,
      metadata,
      ...(schedule.model !== undefined ? { model: schedule.model } : {}),
    },
    firingKey,
  );
  return run.run_id;
}
