import type { Registry } from 'prom-client';
import { Counter, Gauge } from 'prom-client';
import { METRIC_PREFIX } from '@agent-reach/shared';
import { runLiveness, secondsToUtcMidnight, TenantQuotas, type TenantQuota } from '../runs/tenant-quotas.js';
import { ApiError } from './errors.js';
import type { ApiContext, TenantMetrics } from './options.js';

/**
 * Admits a run of `tenant` at an API door (`runId`), or checks that one could be (a workflow's start,
 * without a run id): 429 QUOTA_EXCEEDED naming the tenant, the limit and the current figure, with
 * `Retry-After` for the tokens of the day (runs in flight free up when runs end: no time to promise).
 */
export async function admitRun(ctx: ApiContext, tenant: string, runId: string | undefined): Promise<void> {
  const { control } = ctx.deps;
  const liveness = runLiveness(
    (id) => control.store.summary(id),
    (id) => control.queue.getJob(id),
  );
  const got = await ctx.quotas.admit(tenant, runId, liveness);
  if (got.verdict === 'ok') return;
  const q = ctx.quotas.quota(tenant);
  ctx.metrics?.refusals.inc({ tenant, quota: got.verdict === 'runs' ? 'runs_in_flight' : 'tokens_per_day' });
  ctx.log.info({ tenant, quota: got.verdict, ...got }, 'run refused by tenant quota');
  if (got.verdict === 'runs')
    throw new ApiError(
      'QUOTA_EXCEEDED',
      `tenant "${tenant}" has ${got.inFlight} runs in flight, its limit is ${q.maxRunsInFlight}; start another when one ends`,
    );
  throw new ApiError(
    'QUOTA_EXCEEDED',
    `tenant "${tenant}" used ${got.tokensToday} tokens today (UTC), its limit is ${q.maxTokensPerDay} a day`,
    undefined,
    undefined,
    secondsToUtcMidnight(Date.now()),
  );
}

/**
 * Registers the tenant metrics on `registry`; `tenants` come from configuration (keys and quotas), so
 * the label has few values. Figures are read from Redis when scraped, so every API process shows the same.
 */
export function createTenantMetrics(
  registry: Registry,
  quotas: TenantQuotas,
  tenants: readonly string[],
): TenantMetrics {
  const refusalsName = `${METRIC_PREFIX}tenant_quota_refusals_total`;
  // A second API server on the same registry (one process, two ports) shares the first one's metrics.
  const known = registry.getSingleMetric(refusalsName);
  if (known) return { refusals: known as Counter<'tenant' | 'quota'> };
  const limit = (name: string, help: string, pick: (q: TenantQuota) => number | undefined) =>
    new Gauge({
      name: `${METRIC_PREFIX}${name}`,
      help,
      labelNames: ['tenant'],
      registers: [registry],
      collect() {
        this.reset();
        for (const t of tenants) {
          const v = pick(quotas.quota(t));
          if (v !== undefined) this.set({ tenant: t }, v);
        }
      },
    });
  limit(
    'tenant_runs_in_flight_limit',
    "A tenant's most runs in flight (unset: no limit)",
    (q) => q.maxRunsInFlight,
  );
  limit(
    'tenant_tokens_per_day_limit',
    "A tenant's most tokens a UTC day (unset: no limit)",
    (q) => q.maxTokensPerDay,
  );
  const figures = async () => Promise.all(tenants.map(async (t) => [t, await quotas.usage(t)] as const));
  new Gauge({
    name: `${METRIC_PREFIX}tenant_runs_in_flight`,
    help: "A tenant's runs not yet ended (queued, running, parked)",
    labelNames: ['tenant'],
    registers: [registry],
    async collect() {
      for (const [t, u] of await figures()) this.set({ tenant: t }, u.inFlight);
    },
  });
  new Gauge({
    name: `${METRIC_PREFIX}tenant_tokens_used_today`,
    help: "Tokens a tenant's ended runs used this UTC day",
    labelNames: ['tenant'],
    registers: [registry],
    async collect() {
      for (const [t, u] of await figures()) this.set({ tenant: t }, u.tokensToday);
    },
  });
  return {
    refusals: new Counter({
      name: refusalsName,
      help: 'Runs and workflows refused because their tenant was at a quota',
      labelNames: ['tenant', 'quota'],
      registers: [registry],
    }),
  };
}
