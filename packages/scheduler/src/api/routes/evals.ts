import type { FastifyInstance } from 'fastify';
import { EvalCreated, EvalList, EvalParams, EvalReport, MAX_EVAL_REPORT_BYTES } from '@agent-reach/protocol';
import type { Static } from '@sinclair/typebox';
import { requirePrincipal, type Principal } from '../auth.js';
import { ApiError, notFound } from '../errors.js';
import { EvalStore } from '../eval-store.js';
import type { ApiContext } from '../options.js';
import { responses } from '../responses.js';

const TAGS = ['evals'];

/**
 * `/v1/evals`: reports of `agent-reach eval` (docs/evals.md), stored per tenant with the run retention.
 * A key sees the evals of its tenants (a key limited to some agents, those of its agents only); storing an
 * id another tenant holds, or one of its tenant's evals the key may not read, is a 409.
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
      if (principal.agents) {
        const agents = report.dataset.agents;
        if (!agents)
          throw new ApiError(
            'FORBIDDEN',
            'a key limited to some agents must name the agents of its eval (dataset.agents)',
          );
        const other = agents.find((a) => !principal.agents?.has(a));
        if (other !== undefined) throw new ApiError('FORBIDDEN', `this key may not use agent ${other}`);
      }
      if (await store.create(principal.tenant, report)) return reply.code(201).send({ id: report.id });
      // Replacing a report is its tenant's, and only with a key that may read it: a key limited to some
      // agents never overwrites an eval of its tenant's other agents, which it cannot even see.
      const stored = await store.get(report.id);
      if (stored && (stored.tenant !== principal.tenant || !mayRead(principal, stored.report.dataset.agents)))
        throw new ApiError(
          'CONFLICT',
          `eval ${report.id} is already stored by another tenant or a key this key may not read; use another id`,
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
    async (request) => {
      const principal = requirePrincipal(ctx.auth, request);
      return { evals: await store.list(principal.tenants, (agents) => mayRead(principal, agents)) };
    },
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
      if (
        !stored ||
        !principal.tenants.has(stored.tenant) ||
        !mayRead(principal, stored.report.dataset.agents)
      )
        throw notFound(`eval ${request.params.id}`);
      return stored.report;
    },
  );
}

/** A key limited to some agents reads an eval only when it names its agents and the key may use them all. */
function mayRead(principal: Principal, agents: readonly string[] | undefined): boolean {
  if (!principal.agents) return true;
  return agents !== undefined && agents.every((a) => principal.agents?.has(a));
}
