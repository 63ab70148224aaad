import type { FastifyInstance } from 'fastify';
import { redisMasters, type RedisClient } from '@agent-reach/shared';
import { notFound } from '../errors.js';
import type { ApiContext } from '../options.js';
import { READYZ_REDIS_TIMEOUT_MS, UNAVAILABLE_RETRY_AFTER_S } from '../constants.js';
import { Health, Ready } from '@agent-reach/protocol';
import { responses } from '../responses.js';
import { withinRedisTimeout } from '../unavailable.js';

/**
 * The eviction policy Redis runs with: `noeviction` only when every master says so (a cluster's masters
 * are asked one by one), else the first other policy found, `unknown` when a master refuses CONFIG GET.
 */
async function evictionPolicy(redis: RedisClient): Promise<string> {
  const policies = await Promise.all(
    redisMasters(redis).map(async (node) => {
      try {
        const answer = (await withinRedisTimeout(
          node.config('GET', 'maxmemory-policy'),
          READYZ_REDIS_TIMEOUT_MS,
        )) as unknown;
        return Array.isArray(answer) && typeof answer[1] === 'string' ? answer[1] : 'unknown';
      } catch {
        // CONFIG is often disabled on managed Redis: say so rather than guess.
        return 'unknown';
      }
    }),
  );
  return policies.find((p) => p !== 'noeviction') ?? (policies.length > 0 ? 'noeviction' : 'unknown');
}

/**
 * `/healthz` (the process answers), `/readyz` (Redis answers, and evicts nothing) and `/metrics`.
 *
 * Readiness: Redis down is a 503. An eviction policy other than `noeviction` — under which Redis may
 * silently drop queued jobs and run records — is still a 200, with a `warning` field and a `warn` log
 * (once per policy seen): the API works, and failing readiness would take every scheduler out of service
 * for a setting only an operator can change. `unknown` means CONFIG GET was refused (managed Redis). On
 * a Redis Cluster every master is checked.
 */
export function healthRoutes(app: FastifyInstance, ctx: ApiContext): void {
  const { redis, metricsRegistry } = ctx.deps;
  const warned = new Set<string>();

  app.get(
    '/healthz',
    { schema: { tags: ['health'], summary: 'The process is up', response: responses({ 200: Health }) } },
    async () => ({ status: 'ok' }),
  );

  app.get(
    '/readyz',
    {
      schema: {
        tags: ['health'],
        summary: 'Redis answers (503 if not); warns unless maxmemory-policy is noeviction',
        response: responses({ 200: Ready, 503: Ready }),
      },
    },
    async (_request, reply) => {
      try {
        await withinRedisTimeout(redis.ping(), READYZ_REDIS_TIMEOUT_MS);
      } catch (err) {
        ctx.log.warn({ err }, 'readiness: Redis does not answer');
        return reply
          .code(503)
          .header('retry-after', String(UNAVAILABLE_RETRY_AFTER_S))
          .send({ status: 'not_ready', redis: 'down', maxmemory_policy: 'unknown' });
      }
      const policy = await evictionPolicy(redis);
      const warning =
        policy === 'noeviction'
          ? undefined
          : policy === 'unknown'
            ? 'cannot read maxmemory-policy (CONFIG GET refused): make sure it is noeviction, or Redis may evict queued jobs'
            : `Redis maxmemory-policy is ${policy}, not noeviction: under memory pressure Redis will evict queued jobs and run records`;
      if (warning && !warned.has(policy)) {
        warned.add(policy);
        ctx.log.warn({ maxmemoryPolicy: policy }, 'Redis eviction policy is not noeviction');
      }
      return { status: 'ready', redis: 'ok', maxmemory_policy: policy, ...(warning ? { warning } : {}) };
    },
  );

  app.get(
    '/metrics',
    {
      schema: {
        tags: ['health'],
        summary: 'Prometheus metrics of this process',
        response: responses({
          200: {
            description: 'Prometheus text format',
            content: { 'text/plain': { schema: { type: 'string' } } },
          },
        }),
      },
    },
    async (_request, reply) => {
      if (!metricsRegistry) throw notFound('metrics');
      return reply.type(metricsRegistry.contentType).send(await metricsRegistry.metrics());
    },
  );
}
