import { DEFAULT_TENANT, isFinalStatus, type Keys } from '@agent-reach/protocol';
import { redisScripts, type RedisClient, type RedisScripts } from '@agent-reach/shared';

/** A tenant's limits; an unset limit does not apply. */
export interface TenantQuota {
  /** Runs not yet ended (queued, running, parked) at most. */
  maxRunsInFlight?: number;
  /** Tokens (prompt + completion) per UTC day at most. */
  maxTokensPerDay?: number;
}

/** What an admission found: the verdict and the tenant's figures when it was decided. */
export interface Admission {
  verdict: 'ok' | 'runs' | 'tokens';
  inFlight: number;
  tokensToday: number;
}

/** How long a day's token count is kept, in seconds: past the day's end, for the metrics of late readers. */
const TOKENS_TTL_S = 2 * 24 * 3600;

/**
 * A run in the in-flight set with no record and no job after this long is gone (its admission never
 * became a job, or Redis lost it): reconciling removes it. Younger ones may be between admission and job.
 */
export const IN_FLIGHT_GRACE_MS = 60_000;

/** The UTC day of `ms` as `YYYY-MM-DD`. */
export const utcDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** Seconds from `ms` to the next UTC midnight (at least 1). */
export const secondsToUtcMidnight = (ms: number) =>
  Math.max(1, Math.ceil((Date.UTC(...midnightAfter(ms)) - ms) / 1000));

function midnightAfter(ms: number): [number, number, number] {
  const d = new Date(ms);
  return [d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1];
}

/** Whether a run is still in flight, as the run's record and job tell; used to reconcile the set. */
export type RunLiveness = (runId: string) => Promise<'ended' | 'live' | 'unknown'>;

/**
 * Per-tenant quotas in Redis: runs in flight as a set of run ids (not a counter, so a run counts once
 * however often it is admitted or ended, and the set can be reconciled against the runs' records), and
 * the tokens of the day. Both keys of a tenant share its hash tag, so each script touches one slot.
 * Admission is one script (check and add together); the run worker adds a run that reached it another
 * way (a workflow's node, `enqueueRun`) and removes a run when it ends, counting its tokens then.
 */
export class TenantQuotas {
  readonly #scripts: RedisScripts;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    readonly limits: ReadonlyMap<string, TenantQuota> = new Map(),
  ) {
    this.#scripts = redisScripts(redis);
  }

  /** The tenant's limits (none for a tenant not configured). */
  quota(tenant: string): TenantQuota {
    return this.limits.get(tenant) ?? {};
  }

  /**
   * Admits `runId` (or only checks, without one). A refusal for runs in flight reconciles the set once
   * with `liveness` (ended or vanished runs leave it) and asks again, so a run whose end was never
   * recorded in the set (a scheduler that died) cannot hold a slot for good.
   */
  async admit(tenant: string, runId: string | undefined, liveness?: RunLiveness): Promise<Admission> {
    const first = await this.#admit(tenant, runId);
    if (first.verdict !== 'runs' || !liveness) return first;
    return (await this.reconcile(tenant, liveness)) > 0 ? this.#admit(tenant, runId) : first;
  }

  async #admit(tenant: string, runId: string | undefined): Promise<Admission> {
    const now = Date.now();
    const q = this.quota(tenant);
    const [verdict, inFlight, tokensToday] = await this.#scripts.tenantAdmit(
      [this.keys.tenantInFlight(tenant), this.keys.tenantTokens(tenant, utcDay(now))],
      [runId ?? '', now, q.maxRunsInFlight ?? 0, q.maxTokensPerDay ?? 0],
    );
    return {
      verdict: verdict as Admission['verdict'],
      inFlight: Number(inFlight),
      tokensToday: Number(tokensToday),
    };
  }

  /** Counts a run that started without an admission (already counted: no change). */
  async track(tenant: string | undefined, runId: string): Promise<void> {
    await this.redis.zadd(this.keys.tenantInFlight(tenant ?? DEFAULT_TENANT), 'NX', Date.now(), runId);
  }

  /** A run ended: it leaves the set, and its tokens count towards today's (once). */
  async release(tenant: string | undefined, runId: string, tokens: number): Promise<void> {
    const t = tenant ?? DEFAULT_TENANT;
    await this.#scripts.tenantRelease(
      [this.keys.tenantInFlight(t), this.keys.tenantTokens(t, utcDay(Date.now()))],
      [runId, Math.max(0, Math.floor(tokens)), TOKENS_TTL_S],
    );
  }

  /** Removes from the set the runs `liveness` says ended, and those unknown past the grace; returns how many. */
  async reconcile(tenant: string, liveness: RunLiveness): Promise<number> {
    const key = this.keys.tenantInFlight(tenant);
    const rows = await this.redis.zrange(key, 0, -1, 'WITHSCORES');
    const stale: string[] = [];
    for (let i = 0; i + 1 < rows.length; i += 2) {
      const runId = rows[i] as string;
      const state = await liveness(runId);
      if (state === 'ended' || (state === 'unknown' && Date.now() - Number(rows[i + 1]) > IN_FLIGHT_GRACE_MS))
        stale.push(runId);
    }
    return stale.length === 0 ? 0 : this.redis.zrem(key, ...stale);
  }

  /** The tenant's figures now: runs in flight and tokens used today. */
  async usage(tenant: string): Promise<{ inFlight: number; tokensToday: number }> {
    const [inFlight, tokens] = await Promise.all([
      this.redis.zcard(this.keys.tenantInFlight(tenant)),
      this.redis.get(this.keys.tenantTokens(tenant, utcDay(Date.now()))),
    ]);
    return { inFlight, tokensToday: Number(tokens ?? 0) };
  }
}

/** Liveness from a run's listing status and its job: final is ended; no listing and no job is unknown. */
export function runLiveness(
  summary: (runId: string) => Promise<{ status: string } | undefined>,
  job: (runId: string) => Promise<unknown>,
): RunLiveness {
  return async (runId) => {
    const s = await summary(runId);
    if (s) return isFinalStatus(s.status as never) ? 'ended' : 'live';
    return (await job(runId)) ? 'live' : 'unknown';
  };
}
