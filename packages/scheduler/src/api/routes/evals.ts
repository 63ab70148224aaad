import type { FastifyInstance } from 'fastify';
import { EvalCreated, EvalList, EvalParams, EvalReport, MAX_EVAL_REPORT_BYTES } from '@agent-reach/protocol';
import type { Static } from '@sinclair/typebox';
import { requirePrincipal } from '../auth.js';
import { ApiError, notFound } from '../errors.js';
import { EvalStore } from '../eval-store.js';
import type { ApiContext } from '../options.js';
import { responses } from '../responses.js';

const TAGS = ['evals'];

/**
 * `/v1/evals`: reports of `agent-reach eval` (docs/evals.md), stored per tenant with the run retention.
 * A key sees the evals of its tenants; storing an id another tenant holds is a 409.
 */
export function evalRoutes(app: FastifyInstance, ctx: ApiContext): void {
  const store = new EvalStore(ctx.deps.redis, ctx.deps.keys);
  app.post<{ Body: EvalReport }>(
    '/v1/evals',
    {
      bodyLimit: MAX_EVAL_REPORT_BYTES,
      schema: {
        tags: TAGS,
        summary: 'Store an eval report (at most 2 MB); storing the same id again replaces it',
        body: EvalReport,
        response: responses({ 201: EvalCreated }),
      },
    },
    async (request, reply) => {
      const principal = requirePrincipal(ctx.auth, request);
      const report = request.body;
      const owner = await store.tenantOf(report.id);
      if (owner !== undefined && owner !== principal.tenant)
        throw new ApiError(
          'CONFLICT',
          `eval ${report.id} is already stored by another tenant; use another id`,
        );
      await store.put(principal.tenant, report);
      return reply.code(201).send({ id: report.id });
    },
  );
  app.get(
    '/v1/evals',
    {
      schema: {
        tags: TAGS,
        summary: "The tenant's evals, newest first: dataset, times, each variant's reach success",
        response: responses({ 200: EvalList }),
      },
    },
    async (request) => ({ evals: await store.list(requirePrincipal(ctx.auth, request).tenants) }),
  );
  app.get<{ Params: Static<typeof EvalParams> }>(
    '/v1/evals/:id',
    {
      schema: {
        tags: TAGS,
        summary: 'An eval report: per variant and case, comparisons and flipped cases',
        params: EvalParams,
        response: responses({ 200: EvalReport }),
      },
    },
    async (request) => {
      const principal = requirePrincipal(ctx.auth, request);
      const stored = await store.get(request.params.id);
      if (!stored || !principal.tenants.has(stored.tenant)) throw notFound(`eval ${request.params.id}`);
      return stored.report;
    },
  );
}
