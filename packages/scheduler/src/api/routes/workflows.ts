import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { WorkflowSpec } from '@agent-reach/shared';
import type { WorkflowControl } from '../../workflows/workflow-control.js';
import type { WorkflowRecord } from '../../workflows/workflow-store.js';
import {
  assertAgentAllowed,
  idempotencyScope,
  requirePrincipal,
  seesTenant,
  type Principal,
} from '../auth.js';
import { assertHandoffReach } from '../handoff-doors.js';
import { ApiError, notFound } from '../errors.js';
import type { EventStreamer } from '../event-stream.js';
import { bodyHash } from '../idempotency.js';
import { admitRun } from '../tenant-admission.js';
import type { ApiContext } from '../options.js';
import { responses } from '../responses.js';
import {
  CreateRunHeaders,
  CreateWorkflowBody,
  EventsHeaders,
  FINAL_WORKFLOW_STATUSES,
  ListWorkflowsQuery,
  newWorkflowId,
  WorkflowList,
  WorkflowParams,
  WorkflowView,
  type WorkflowStatus,
} from '@agent-reach/protocol';
import { workflowSummaryView, workflowView } from '../workflow-view.js';
import { callbackView } from '../callback-view.js';
import { checkCallback } from '../run-request.js';

type Params = { id: string };
type StartRoute = { Body: CreateWorkflowBody; Headers: { 'idempotency-key'?: string } };
type ListRoute = { Querystring: ListWorkflowsQuery };
type WorkflowRoute = { Params: Params };
type EventsRoute = { Params: Params; Headers: { 'last-event-id'?: string } };
type StartRequest = FastifyRequest<StartRoute>;
type ListRequest = FastifyRequest<ListRoute>;
type WorkflowRequest = FastifyRequest<WorkflowRoute>;
type EventsRequest = FastifyRequest<EventsRoute>;

/** A key limited to some agents may use a workflow only when it may use the agent of every node. */
function assertWorkflowAllowed(principal: Principal, spec: WorkflowSpec): void {
  for (const node of spec.nodes) assertAgentAllowed(principal, node.agent);
}

/** The id of the workflow an `Idempotency-Key` starts: `wf_` and 32 hex digits of the key's digest. */
export function keyedWorkflowId(scope: string, key: string): string {
  return `wf_${createHash('sha256').update(`${scope}\n${key}`).digest('hex').slice(0, 32)}`;
}

/**
 * The workflow an `Idempotency-Key` names, derived from it so that every request with the key converges
 * on one workflow, and `claim`, which records the key's first body and refuses another one (409).
 */
function keyedStart(ctx: ApiContext, principal: Principal, key: string, body: CreateWorkflowBody) {
  const workflowId = keyedWorkflowId(idempotencyScope(principal), key);
  const hash = bodyHash(body);
  return {
    workflowId,
    claim: async (): Promise<void> => {
      // Namespaced apart from run creation: the same key may start a run and a workflow.
      const claim = await ctx.idempotency.claim(`workflow:${idempotencyScope(principal)}`, key, {
        runId: workflowId,
        bodyHash: hash,
      });
      if (!claim.claimed && claim.existing && claim.existing.bodyHash !== hash)
        throw new ApiError('CONFLICT', 'this Idempotency-Key was already used with a different body');
    },
  };
}

/**
 * `/v1/workflows`: start (idempotent with `Idempotency-Key`, like runs), list, get with each node's
 * state, follow its events, cancel.
 */
export function workflowRoutes(app: FastifyInstance, ctx: ApiContext, streamEvents: EventStreamer): void {
  app.post<StartRoute>('/v1/workflows', { schema: START_SCHEMA }, (request, reply) =>
    startWorkflow(ctx, request, reply),
  );
  app.get<ListRoute>('/v1/workflows', { schema: LIST_SCHEMA }, (request) => listWorkflows(ctx, request));
  app.get<WorkflowRoute>('/v1/workflows/:id', { schema: GET_SCHEMA }, async (request) => {
    const view = workflowView(await forCaller(ctx, request.params.id, requirePrincipal(ctx.auth, request)));
    const callback = await callbackView(ctx, view.workflow_id, ['workflow_finished']);
    return callback ? { ...view, callback } : view;
  });
  app.post<WorkflowRoute>('/v1/workflows/:id/cancel', { schema: CANCEL_SCHEMA }, (request, reply) =>
    cancelWorkflow(ctx, request, reply),
  );
  app.get<EventsRoute>('/v1/workflows/:id/events', { schema: EVENTS_SCHEMA }, (request, reply) =>
    followWorkflow(ctx, streamEvents, request, reply),
  );
}

const START_SCHEMA = {
  tags: ['workflows'],
  summary: 'Start a workflow (201); with an Idempotency-Key already used, the same workflow (200)',
  description:
    'The workflow must be declared in the configuration in force (422 UNKNOWN_WORKFLOW otherwise, naming the workflow, the version and the workflows it declares); it runs the definition of that version to its end, whatever is applied later (`config_version`). A key limited to some agents must be allowed every agent of its nodes (403). A repeat with an Idempotency-Key already used returns the workflow it started (200), even after its definition left the configuration; with another body, 409 CONFLICT.',
  headers: CreateRunHeaders,
  body: CreateWorkflowBody,
  response: responses({ 200: WorkflowView, 201: WorkflowView }),
};

const LIST_SCHEMA = {
  tags: ['workflows'],
  summary: 'List workflows, newest first',
  querystring: ListWorkflowsQuery,
  response: responses({ 200: WorkflowList }),
};

const GET_SCHEMA = {
  tags: ['workflows'],
  summary: "A workflow: status, output, each node's state, output and run, the watchdog's report",
  params: WorkflowParams,
  response: responses({ 200: WorkflowView }),
};

const CANCEL_SCHEMA = {
  tags: ['workflows'],
  summary: 'Cancel a running workflow and its running node runs (202); 409 INVALID_STATE once it ended',
  params: WorkflowParams,
  response: responses({ 202: WorkflowView }),
};

const EVENTS_SCHEMA = {
  tags: ['workflows'],
  summary: "Stream a workflow's events (text/event-stream), resumable with Last-Event-ID",
  description:
    "Events: workflow_started, node_started, node_finished, watchdog_fired, cancel_requested, workflow_finished. Node events carry the node's `run_id`, whose own events are at /v1/runs/{run_id}/events.",
  params: WorkflowParams,
  headers: EventsHeaders,
  response: responses({
    200: {
      description:
        'id: Redis stream id; event: event type; data: the event (JSON); ends after workflow_finished',
      content: { 'text/event-stream': { schema: { type: 'string' } } },
    },
  }),
};

/** A workflow the caller may see: 404 when unknown, 403 when the key may not use one of its agents. */
async function forCaller(ctx: ApiContext, id: string, principal: Principal): Promise<WorkflowRecord> {
  const record = await ctx.deps.workflows?.get(id);
  // Another tenant's workflow is missing, whatever the key's agents.
  if (!record || !seesTenant(principal, record.tenant)) throw notFound(`workflow ${id}`);
  assertWorkflowAllowed(principal, record.spec);
  return record;
}

/** `POST /v1/workflows`: the workflow a repeated key started, else a new one of the definition in force. */
async function startWorkflow(ctx: ApiContext, request: StartRequest, reply: FastifyReply) {
  const principal = requirePrincipal(ctx.auth, request);
  const wf = ctx.deps.workflows;
  const key = request.headers['idempotency-key'];
  const keyed = key === undefined ? undefined : keyedStart(ctx, principal, key, request.body);
  // The key before the name: a repeat gets what the first request created, even when the definition
  // it started has since left the configuration.
  const found = wf && keyed ? await wf.get(keyed.workflowId) : undefined;
  const already = found && seesTenant(principal, found.tenant) ? found : undefined;
  if (already && keyed) {
    await keyed.claim();
    assertWorkflowAllowed(principal, already.spec);
    ctx.log.info(
      { workflowId: already.workflowId, workflow: already.name, key: principal.name, created: false },
      'workflow started',
    );
    return reply.code(200).send(workflowView(already));
  }
  // Resolved once: the definition checked here is the one started, whatever is applied meanwhile.
  const definition = wf?.resolve(request.body.workflow);
  if (!wf || !definition)
    throw new ApiError(
      'UNKNOWN_WORKFLOW',
      wf?.unknown(request.body.workflow) ?? `unknown workflow "${request.body.workflow}"`,
    );
  const spec = definition.spec;
  assertWorkflowAllowed(principal, spec);
  // Each node is a run of its agent: the reach rule of handoffs holds for it as for any run.
  for (const node of spec.nodes) assertHandoffReach(principal, node.agent, ctx.deps.agents);
  await checkCallback(ctx, request.body.callback, principal.name);
  // Its node runs count when they start; the workflow is refused while its tenant is at a quota.
  await admitRun(ctx, principal.tenant, undefined);
  await keyed?.claim();
  const workflowId = keyed?.workflowId ?? newWorkflowId();
  // Before the workflow starts: it may end before `start` returns.
  if (request.body.callback)
    await ctx.deps.callbacks?.deliveries.register(workflowId, request.body.callback, principal.name);
  const { workflowId: id, created } = await wf.start({
    workflow: spec.name,
    definition,
    input: request.body.input,
    workflowId,
    ...(request.body.metadata ? { metadata: request.body.metadata } : {}),
    tenant: principal.tenant,
  });
  ctx.log.info({ workflowId: id, workflow: spec.name, key: principal.name, created }, 'workflow started');
  const record = await wf.get(id);
  if (!record) throw notFound(`workflow ${id}`);
  return reply.code(created ? 201 : 200).send(workflowView(record));
}

/** `GET /v1/workflows`: a page of the workflows the caller may see, newest first. */
async function listWorkflows(ctx: ApiContext, request: ListRequest) {
  const principal = requirePrincipal(ctx.auth, request);
  const { workflow, status, limit, offset } = request.query;
  const wf = ctx.deps.workflows;
  if (!wf) return { workflows: [] };
  const filter = status ? { status: status as WorkflowStatus } : {};
  let page;
  if (!principal.agents) {
    // One more than asked, to know whether there is a next page.
    page = await wf.list({
      ...filter,
      ...(workflow ? { name: workflow } : {}),
      limit: limit + 1,
      offset,
    });
  } else {
    // A limited key sees the workflows whose every agent it may use: each one's first pages, merged.
    const names = [...wf.workflows.workflows.values()]
      .filter(
        (w) => (!workflow || w.name === workflow) && w.nodes.every((n) => principal.agents?.has(n.agent)),
      )
      .map((w) => w.name);
    const lists = await Promise.all(
      names.map((name) => wf.list({ ...filter, name, limit: offset + limit + 1 })),
    );
    page = lists
      .flat()
      .sort((x, y) => y.createdAt - x.createdAt || (x.workflowId < y.workflowId ? 1 : -1))
      .slice(offset, offset + limit + 1);
  }
  // Left out after paging, as runs of other tenants are; a page may hold fewer than `limit`.
  return {
    workflows: page
      .slice(0, limit)
      .filter((w) => seesTenant(principal, w.tenant))
      .map(workflowSummaryView),
    ...(page.length > limit ? { next_offset: offset + limit } : {}),
  };
}

/** `POST /v1/workflows/:id/cancel`: asks the coordinator to cancel a running workflow. */
async function cancelWorkflow(ctx: ApiContext, request: WorkflowRequest, reply: FastifyReply) {
  const principal = requirePrincipal(ctx.auth, request);
  const record = await forCaller(ctx, request.params.id, principal);
  if (FINAL_WORKFLOW_STATUSES.has(record.status))
    throw new ApiError('INVALID_STATE', `workflow ${record.workflowId} already ended (${record.status})`);
  await ctx.deps.workflows?.cancel(record.workflowId);
  ctx.log.info({ workflowId: record.workflowId, key: principal.name }, 'workflow cancellation requested');
  return reply.code(202).send({ ...workflowView(record), cancel_requested: true });
}

/** `GET /v1/workflows/:id/events`: the workflow's events, stored then live, until it finishes. */
async function followWorkflow(
  ctx: ApiContext,
  streamEvents: EventStreamer,
  request: EventsRequest,
  reply: FastifyReply,
): Promise<void> {
  const principal = requirePrincipal(ctx.auth, request);
  const record = await forCaller(ctx, request.params.id, principal);
  // Found by `forCaller`, so the API has workflows.
  const wf = ctx.deps.workflows as WorkflowControl;
  const id = record.workflowId;
  await streamEvents(reply, request.headers['last-event-id'], {
    final: FINAL_WORKFLOW_STATUSES.has(record.status),
    stored: (after) => wf.events(id, after),
    wait: (after, blockMs, reader) => wf.store.waitEvents(id, after, blockMs, reader),
    ended: async () => {
      const now = await wf.get(id);
      return !now || FINAL_WORKFLOW_STATUSES.has(now.status);
    },
    lastType: 'workflow_finished',
    log: ctx.log.child({ workflowId: id }),
  });
}
