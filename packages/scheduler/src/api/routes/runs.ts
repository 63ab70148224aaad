import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  AgentReachError,
  DEFAULT_TENANT,
  CreateRunBody,
  CreateRunHeaders,
  DeadLetterList,
  DecisionBody,
  DecisionView,
  isFinalStatus,
  ListRunsQuery,
  RunList,
  RunParams,
  RunView,
} from '@agent-reach/protocol';
import { pendingRequest } from '../../agent-loop/approvals.js';
import type { RunStatus } from '../../agent-loop/run-state.js';
import type { RunSummary } from '../../runs/run-store.js';
import { assertAgentAllowed, requirePrincipal, type Principal } from '../auth.js';
import { ApiError } from '../errors.js';
import type { ApiContext } from '../options.js';
import { checkRunRequest } from '../run-request.js';
import { runForCaller, summaryView, withEvents } from '../run-view.js';
import { checkListQuery, searchPage } from '../run-search-query.js';
import { encodeCursor } from '../../runs/run-search.js';
import { admitToSession, visibleRuns } from '../session-access.js';
import { responses } from '../responses.js';
import { startRun } from '../start-run.js';
import { callbackView } from '../callback-view.js';

type Params = { id: string };
type CreateRoute = { Body: CreateRunBody; Headers: { 'idempotency-key'?: string; traceparent?: string } };
type ListRoute = { Querystring: ListRunsQuery };
type RunRoute = { Params: Params };
type DecideRoute = { Params: Params; Body: DecisionBody };

/** `/v1/runs`: create (idempotent), list, get, cancel, and decide approvals. */
export function runRoutes(app: FastifyInstance, ctx: ApiContext): void {
  app.post<CreateRoute>('/v1/runs', { schema: CREATE_SCHEMA }, (request, reply) =>
    createRun(ctx, request, reply),
  );
  app.get<ListRoute>('/v1/runs', { schema: LIST_SCHEMA }, (request) => listRuns(ctx, request));
  app.get<RunRoute>('/v1/runs/:id', { schema: GET_SCHEMA }, (request) => getRun(ctx, request));
  app.post<RunRoute>('/v1/runs/:id/cancel', { schema: CANCEL_SCHEMA }, (request, reply) =>
    cancelRun(ctx, request, reply),
  );
  app.post<DecideRoute>('/v1/runs/:id/approvals', { schema: DECIDE_SCHEMA }, (request) =>
    decideApproval(ctx, request),
  );
  app.get('/v1/archive/dead-letters', { schema: DEAD_LETTERS_SCHEMA }, (request) =>
    listDeadLetters(ctx, request),
  );
}

const DEAD_LETTERS_SCHEMA = {
  tags: ['runs'],
  summary: 'Finished runs the archive refused every try, set aside with the error (kept in Redis)',
  description:
    'Each is a run PostgreSQL refused `ARCHIVE_MAX_TRIES` times; the rest of the archive went on. The key sees those of its tenants and agents only. Empty without the archive.',
  response: responses({ 200: DeadLetterList }),
};

/** `GET /v1/archive/dead-letters`: runs the archive set aside, as far as the key may see them. */
async function listDeadLetters(ctx: ApiContext, request: FastifyRequest) {
  const principal = requirePrincipal(ctx.auth, request);
  const { store } = ctx.deps.control;
  const letters = (await store.archive?.deadLetters?.()) ?? [];
  const summaries = await Promise.all(letters.map((l) => store.summary(l.runId)));
  const listed = letters.flatMap((letter, i) => {
    const s = summaries[i];
    return s && (!principal.agents || principal.agents.has(s.agent)) ? [{ letter, ...s }] : [];
  });
  const shown = await visibleRuns(ctx, principal, listed);
  return {
    dead_letters: shown.map(({ letter, agent, tenant, status }) => ({
      run_id: letter.runId,
      agent,
      tenant: tenant ?? DEFAULT_TENANT,
      status,
      error: letter.error,
      tries: letter.tries,
      dead_lettered_at: letter.at,
    })),
  };
}

const CREATE_SCHEMA = {
  tags: ['runs'],
  summary: 'Start a run (201); with an Idempotency-Key already used, the same run (200)',
  description:
    '`model` must be one of the allowed models (400 MODEL_NOT_ALLOWED); `input` is capped by characters and by tokens (400 INPUT_TOO_LONG). A `session_id` must name a session of this key (404 otherwise) whose agent is `agent` (409 otherwise).',
  headers: CreateRunHeaders,
  body: CreateRunBody,
  response: responses({ 200: RunView, 201: RunView }),
};

const LIST_SCHEMA = {
  tags: ['runs'],
  summary: 'List runs, newest first; find them by metadata, agent, status, time, trace id, tool, error kind',
  description:
    'Pages follow `next_cursor` (each page reads a bounded slice of the run index, so a page may hold fewer runs than `limit` while `next_cursor` is still given). `offset` is kept for older callers while the run archive is off; with it on, an `offset` is a 400 VALIDATION_FAILED naming the cursor.',
  querystring: ListRunsQuery,
  response: responses({ 200: RunList }),
};

const GET_SCHEMA = {
  tags: ['runs'],
  summary: 'A run: status, outcome (reason, answer, report), usage, steps, pending approvals',
  params: RunParams,
  response: responses({ 200: RunView }),
};

const CANCEL_SCHEMA = {
  tags: ['runs'],
  summary: 'Cancel a queued, running or parked run (202); 409 INVALID_STATE once it ended',
  params: RunParams,
  response: responses({ 202: RunView }),
};

const DECIDE_SCHEMA = {
  tags: ['runs'],
  summary: 'Approve or reject a call the run waits for',
  description:
    'The decision is recorded as made by the authenticated API key (its name, `by` in the answer); a `by` in the body is refused with 400 VALIDATION_FAILED.',
  params: RunParams,
  body: DecisionBody,
  response: responses({ 200: DecisionView }),
};

/** `POST /v1/runs`: a new run (201), or the one an `Idempotency-Key` already started (200). */
async function createRun(ctx: ApiContext, request: FastifyRequest<CreateRoute>, reply: FastifyReply) {
  const principal = requirePrincipal(ctx.auth, request);
  checkRunRequest(ctx, request.body);
  if (request.body.session_id !== undefined)
    await admitToSession(ctx, principal, request.body.session_id, request.body.agent);
  const { run, created } = await startRun(
    ctx,
    principal,
    request.body,
    request.headers['idempotency-key'],
    request.headers.traceparent,
  );
  return reply.code(created ? 201 : 200).send(run);
}

/** `GET /v1/runs`: a search page (by cursor), or an offset page for older callers. */
async function listRuns(ctx: ApiContext, request: FastifyRequest<ListRoute>) {
  const principal = requirePrincipal(ctx.auth, request);
  const { agent, limit, offset } = request.query;
  checkListQuery(request.query);
  if (agent) assertAgentAllowed(principal, agent);
  if (offset === 0) return searchPage(ctx, principal, request.query);
  // The offset listing reads Redis only: with the archive on, finished runs leave Redis within minutes
  // and an offset would skip them. Only the cursor pages across both.
  if (ctx.deps.control.archive)
    throw new ApiError(
      'VALIDATION_FAILED',
      'querystring/offset is not available with the run archive: page with cursor (next_cursor)',
      [{ in: 'querystring', path: '/offset', message: 'is not available with the run archive: use cursor' }],
    );
  const page = await offsetPage(ctx, principal, request.query);
  const listed = page.slice(0, limit);
  const last = listed[listed.length - 1];
  // Left out after paging, so pages stay where they were; a page may hold fewer runs than `limit`.
  const shown = await visibleRuns(ctx, principal, listed);
  return {
    runs: shown.map(summaryView),
    ...(page.length > limit ? { next_offset: offset + limit } : {}),
    ...(page.length > limit && last
      ? { next_cursor: encodeCursor({ score: last.createdAt, runId: last.runId }) }
      : {}),
  };
}

/** The runs of an offset page, and one more than asked, to know whether there is a next page. */
async function offsetPage(
  ctx: ApiContext,
  principal: Principal,
  query: ListRunsQuery,
): Promise<RunSummary[]> {
  const { control } = ctx.deps;
  const { agent, status, since, until, limit, offset } = query;
  const filter = {
    ...(status ? { status: status as RunStatus } : {}),
    ...(since !== undefined ? { since } : {}),
    ...(until !== undefined ? { until } : {}),
  };
  if (agent || !principal.agents)
    return control.list({ ...filter, ...(agent ? { agent } : {}), limit: limit + 1, offset });
  // A limited key sees the runs of its agents: the union of each agent's first pages, merged.
  const lists = await Promise.all(
    [...principal.agents].map((a) => control.list({ ...filter, agent: a, limit: offset + limit + 1 })),
  );
  return lists
    .flat()
    .sort((x, y) => y.createdAt - x.createdAt || (x.runId < y.runId ? 1 : -1))
    .slice(offset, offset + limit + 1);
}

/** `GET /v1/runs/:id`: the run with its events. */
async function getRun(ctx: ApiContext, request: FastifyRequest<RunRoute>) {
  const principal = requirePrincipal(ctx.auth, request);
  const { view } = await runForCaller(ctx, request.params.id, principal);
  const callback = await callbackView(ctx, view.run_id);
  return withEvents(callback ? { ...view, callback } : view, await ctx.deps.control.events(view.run_id));
}

/** `POST /v1/runs/:id/cancel`: asks whoever runs the run to cancel it. */
async function cancelRun(ctx: ApiContext, request: FastifyRequest<RunRoute>, reply: FastifyReply) {
  const principal = requirePrincipal(ctx.auth, request);
  const { view } = await runForCaller(ctx, request.params.id, principal);
  if (isFinalStatus(view.status))
    throw new ApiError('INVALID_STATE', `run ${view.run_id} already ended (${view.status})`);
  await ctx.deps.control.cancel(view.run_id);
  ctx.log.info({ runId: view.run_id, key: principal.name }, 'run cancellation requested');
  return reply.code(202).send({ ...view, cancel_requested: true });
}

/** `POST /v1/runs/:id/approvals`: a person's decision on a call the run waits for, made as the key. */
async function decideApproval(ctx: ApiContext, request: FastifyRequest<DecideRoute>) {
  const principal = requirePrincipal(ctx.auth, request);
  if (request.body.by !== undefined)
    throw new ApiError(
      'VALIDATION_FAILED',
      'body/by is not accepted: the approver recorded is the name of the API key that decides',
      [{ in: 'body', path: '/by', message: 'is not accepted' }],
    );
  const { view, state } = await runForCaller(ctx, request.params.id, principal);
  const { tool_call_id: toolCallId, reason } = request.body;
  if (isFinalStatus(view.status))
    throw new ApiError('INVALID_STATE', `run ${view.run_id} already ended (${view.status})`);
  // The id matched its pattern (no prototype key); the own-property check keeps it that way.
  const pending = state && pendingRequest(state, toolCallId);
  if (!pending || ('refused' in pending && pending.refused === 'no_request'))
    throw new ApiError('NOT_FOUND', `run ${view.run_id} has no approval request for ${toolCallId}`);
  if ('refused' in pending) throw new ApiError('INVALID_STATE', pending.message);
  const decision = request.body.decision === 'approve' ? 'approved' : 'rejected';
  const by = principal.name;
  try {
    await ctx.deps.control.decide({
      runId: view.run_id,
      toolCallId,
      decision,
      by,
      ...(reason ? { reason } : {}),
    });
  } catch (err) {
    // Another request decided first (the check above raced it).
    if (err instanceof AgentReachError && err.code === 'RUN_INVALID_STATE')
      throw new ApiError('INVALID_STATE', err.message);
    throw err;
  }
  ctx.log.info({ runId: view.run_id, toolCallId, decision, key: principal.name }, 'approval decided');
  return {
    run_id: view.run_id,
    tool_call_id: toolCallId,
    tool: pending.request.tool,
    decision,
    by,
    ...(reason ? { reason } : {}),
  };
}
