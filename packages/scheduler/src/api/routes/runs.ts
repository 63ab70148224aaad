import type { FastifyInstance } from 'fastify';
import {
  AgentReachError,
  CreateRunBody,
  CreateRunHeaders,
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
import { assertAgentAllowed, requirePrincipal } from '../auth.js';
import { ApiError } from '../errors.js';
import type { ApiContext } from '../options.js';
import { checkRunRequest } from '../run-request.js';
import { runForCaller, summaryView, withEvents } from '../run-view.js';
import { searchPage } from '../run-search-query.js';
import { encodeCursor } from '../../runs/run-search.js';
import { admitToSession, visibleRuns } from '../session-access.js';
import { responses } from '../responses.js';
import { startRun } from '../start-run.js';

type Params = { id: string };

/** `/v1/runs`: create (idempotent), list, get, cancel, and decide approvals. */
export function runRoutes(app: FastifyInstance, ctx: ApiContext): void {
  const { control } = ctx.deps;

  app.post<{ Body: CreateRunBody; Headers: { 'idempotency-key'?: string; traceparent?: string } }>(
    '/v1/runs',
    {
      schema: {
        tags: ['runs'],
        summary: 'Start a run (201); with an Idempotency-Key already used, the same run (200)',
        description:
          '`model` must be one of the allowed models (400 MODEL_NOT_ALLOWED); `input` is capped by characters and by tokens (400 INPUT_TOO_LONG). A `session_id` must name a session of this key (404 otherwise) whose agent is `agent` (409 otherwise).',
        headers: CreateRunHeaders,
        body: CreateRunBody,
        response: responses({ 200: RunView, 201: RunView }),
      },
    },
    async (request, reply) => {
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
    },
  );

  app.get<{ Querystring: ListRunsQuery }>(
    '/v1/runs',
    {
      schema: {
        tags: ['runs'],
        summary:
          'List runs, newest first; find them by metadata, agent, status, time, trace id, tool, error kind',
        description:
          'Pages follow `next_cursor` (each page reads a bounded slice of the run index, so a page may hold fewer runs than `limit` while `next_cursor` is still given). `offset` is kept for older callers while the run archive is off; with it on, an `offset` is a 400 VALIDATION_FAILED naming the cursor.',
        querystring: ListRunsQuery,
        response: responses({ 200: RunList }),
      },
    },
    async (request) => {
      const principal = requirePrincipal(ctx.auth, request);
      const { agent, status, since, until, limit, offset } = request.query;
      if (agent) assertAgentAllowed(principal, agent);
      if (offset === 0) return searchPage(ctx, principal, request.query);
      // The offset listing reads Redis only: with the archive on, finished runs leave Redis within minutes
      // and an offset would skip them. Only the cursor pages across both.
      if (control.archive)
        throw new ApiError(
          'VALIDATION_FAILED',
          'querystring/offset is not available with the run archive: page with cursor (next_cursor)',
          [
            {
              in: 'querystring',
              path: '/offset',
              message: 'is not available with the run archive: use cursor',
            },
          ],
        );
      const filter = {
        ...(status ? { status: status as RunStatus } : {}),
        ...(since !== undefined ? { since } : {}),
        ...(until !== undefined ? { until } : {}),
      };
      let page: RunSummary[];
      if (agent || !principal.agents) {
        // One more than asked, to know whether there is a next page.
        page = await control.list({ ...filter, ...(agent ? { agent } : {}), limit: limit + 1, offset });
      } else {
        // A limited key sees the runs of its agents: the union of each agent's first pages, merged.
        const lists = await Promise.all(
          [...principal.agents].map((a) => control.list({ ...filter, agent: a, limit: offset + limit + 1 })),
        );
        page = lists
          .flat()
          .sort((x, y) => y.createdAt - x.createdAt || (x.runId < y.runId ? 1 : -1))
          .slice(offset, offset + limit + 1);
      }
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
    },
  );

  app.get<{ Params: Params }>(
    '/v1/runs/:id',
    {
      schema: {
        tags: ['runs'],
        summary: 'A run: status, outcome (reason, answer, report), usage, steps, pending approvals',
        params: RunParams,
        response: responses({ 200: RunView }),
      },
    },
    async (request) => {
      const principal = requirePrincipal(ctx.auth, request);
      const { view } = await runForCaller(ctx, request.params.id, principal);
      return withEvents(view, await control.events(view.run_id));
    },
  );

  app.post<{ Params: Params }>(
    '/v1/runs/:id/cancel',
    {
      schema: {
        tags: ['runs'],
        summary: 'Cancel a queued, running or parked run (202); 409 INVALID_STATE once it ended',
        params: RunParams,
        response: responses({ 202: RunView }),
      },
    },
    async (request, reply) => {
      const principal = requirePrincipal(ctx.auth, request);
      const { view } = await runForCaller(ctx, request.params.id, principal);
      if (isFinalStatus(view.status))
        throw new ApiError('INVALID_STATE', `run ${view.run_id} already ended (${view.status})`);
      await control.cancel(view.run_id);
      ctx.log.info({ runId: view.run_id, key: principal.name }, 'run cancellation requested');
      return reply.code(202).send({ ...view, cancel_requested: true });
    },
  );

  app.post<{ Params: Params; Body: DecisionBody }>(
    '/v1/runs/:id/approvals',
    {
      schema: {
        tags: ['runs'],
        summary: 'Approve or reject a call the run waits for',
        description:
          'The decision is recorded as made by the authenticated API key (its name, `by` in the answer); a `by` in the body is refused with 400 VALIDATION_FAILED.',
        params: RunParams,
        body: DecisionBody,
        response: responses({ 200: DecisionView }),
      },
    },
    async (request) => {
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
        await control.decide({ runId: view.run_id, toolCallId, decision, by, ...(reason ? { reason } : {}) });
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
    },
  );
}
