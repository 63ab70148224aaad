import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { createKeys } from '@agent-reach/protocol';
import { constants, redisScripts, type RedisClient } from '@agent-reach/shared';
import type { GateLimits } from './provider-gate.js';

/** Where the fleet-wide provider limits are kept: the scheduler's Redis and its key prefix. */
export interface FleetStore {
  redis: RedisClient;
  prefix: string;
}

/** A slot's lease and a silent waiter's stale time, in ms; defaults: the `PROVIDER_*` constants. */
export interface FleetTimes {
  leaseMs?: number;
  staleMs?: number;
}

/**
 * The fleet-wide limits could not be read or written: Redis failed, not the provider. Kept apart from
 * provider failures so that a Redis outage is neither counted against the provider nor a reason to fall
 * over to another model (which would meet the same Redis).
 */
export class FleetLimitsUnavailable extends Error {
  constructor(
    readonly provider: string,
    cause: unknown,
  ) {
    super(
      `the fleet-wide limits of provider "${provider}" are kept in Redis, which failed: ${
        cause instanceof Error ? cause.message : String(cause)
      }`,
      { cause },
    );
    this.name = 'FleetLimitsUnavailable';
  }
}

/** What happens to a held slot while its request runs. */
export interface FleetEvents {
  /** The slot's lease was found gone (Redis lost it, or renewals failed past the lease): said once. */
  onLeaseLost?: (why: string) => void;
}

/**
 * Waits until the provider's fleet-wide limits (every scheduler on this Redis together) admit one more
 * request, and resolves with its release: its concurrency slot is a lease renewed while the request runs,
 * so a scheduler killed mid-request frees it when the lease runs out. Waiters are served in the order
 * they first tried (across the fleet); one that stops trying loses its place after
 * `PROVIDER_WAITER_STALE_MS`. Rejects when `signal` aborts first, leaving the line.
 */
export async function enterFleet(
  store: FleetStore,
  provider: string,
  limits: GateLimits,
  signal?: AbortSignal,
  onWait: (waiting: boolean) => void = () => undefined,
  times: FleetTimes & FleetEvents = {},
): Promise<() => void> {
  const scripts = redisScripts(store.redis);
  const keys = createKeys(store.prefix).providerLimits(provider);
  const holder = randomUUID();
  const leaseMs = times.leaseMs ?? constants.PROVIDER_SLOT_LEASE_MS;
  const args = [
    holder,
    leaseMs,
    limits.concurrency ?? 0,
    limits.rate?.max ?? 0,
    limits.rate?.windowMs ?? 1000,
    times.staleMs ?? constants.PROVIDER_WAITER_STALE_MS,
  ] as const;
  const lineKeys = [keys.slots, keys.starts, keys.waiters, keys.lastTries] as const;
  let pause = constants.PROVIDER_WAIT_POLL_MIN_MS;
  let waiting = false;
  try {
    for (;;) {
      signal?.throwIfAborted();
      const [admitted, waitMs] = await scripts.providerAcquire(lineKeys, args);
      if (Number(admitted) === 1) break;
      if (!waiting) onWait((waiting = true));
      const rest = Number(waitMs) > 0 ? Math.min(Number(waitMs), constants.PROVIDER_WAIT_POLL_MAX_MS) : pause;
      pause = Math.min(pause * 2, constants.PROVIDER_WAIT_POLL_MAX_MS);
      await sleep(rest, undefined, signal ? { signal } : {});
    }
  } catch (err) {
    // Leaves the line (and any slot the last try may have taken before the answer was lost).
    await store.redis
      .multi()
      .zrem(keys.waiters, holder)
      .zrem(keys.lastTries, holder)
      .zrem(keys.slots, holder)
      .exec()
      .catch(() => undefined);
    if (signal?.aborted) throw signal.reason ?? err;
    throw new FleetLimitsUnavailable(provider, err);
  } finally {
    if (waiting) onWait(false);
  }
  if (limits.concurrency === undefined) return () => undefined;
  let lost = false;
  const leaseLost = (why: string) => {
    if (lost) return;
    lost = true;
    times.onLeaseLost?.(why);
  };
  let renewedAt = Date.now();
  const renew = setInterval(() => {
    scripts
      .providerRenew([keys.slots], [holder, leaseMs])
      .then((held) => {
        if (Number(held) === 1) renewedAt = Date.now();
        else leaseLost('its lease was gone from Redis when renewed');
      })
      .catch((err: unknown) => {
        // One failed renewal is harmless while the lease lasts; past it, the slot may be another's.
        if (Date.now() - renewedAt >= leaseMs)
          leaseLost(
            `renewals failed for the whole lease: ${err instanceof Error ? err.message : String(err)}`,
          );
      });
  }, leaseMs / 3);
  renew.unref();
  let released = false;
  return () => {
    if (released) return;
    released = true;
    clearInterval(renew);
    store.redis.zrem(keys.slots, holder).catch(() => undefined);
  };
}
