import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { redisScripts } from '@agent-reach/shared';
import { testRedis } from '@agent-reach/testing';
import { createKeys } from '@agent-reach/protocol';
import { Redis } from 'ioredis';
import { enterFleet, FleetLimitsUnavailable } from '../src/model/provider-fleet-gate.js';
import { classifyFailure } from '../src/model/provider-failure.js';

const ONE_AT_A_TIME = { concurrency: 1 };

describe("a provider's fleet-wide slot line in Redis", () => {
  const t = testRedis();
  const store = { redis: t.redis, prefix: t.prefix };
  afterAll(() => t.cleanup());

  /** A holder that takes the provider's only slot and then dies: it never renews nor releases it. */
  const dieHolding = async (provider: string, leaseMs: number) => {
    const k = createKeys(t.prefix).providerLimits(provider);
    const [admitted] = await redisScripts(t.redis).providerAcquire(
      [k.slots, k.starts, k.waiters, k.lastTries],
      [randomUUID(), leaseMs, 1, 0, 1000, 60_000],
    );
    expect(admitted).toBe(1);
  };

  it("frees a dead holder's slot once its lease runs out, admitting the request that waited", async () => {
    await dieHolding('leased', 300);
    let waited = false;
    const release = await enterFleet(store, 'leased', ONE_AT_A_TIME, undefined, (w) => {
      waited ||= w;
    });
    expect(waited).toBe(true);
    release();
  });

  it('admits waiters in the order they first asked, and a released slot goes to the next of them', async () => {
    const first = await enterFleet(store, 'ordered', ONE_AT_A_TIME);
    const order: number[] = [];
    const waiters = [1, 2, 3].map(async (n) => {
      const release = await enterFleet(store, 'ordered', ONE_AT_A_TIME);
      order.push(n);
      release();
    });
    // Each waiter is in the line before the next one asks: its first try is what places it.
    const k = createKeys(t.prefix).providerLimits('ordered');
    for (let n = 1; n <= 3; n++)
      await expect.poll(() => t.redis.zcard(k.waiters), { timeout: 10_000 }).toBeGreaterThanOrEqual(n);
    first();
    await Promise.all(waiters);
    expect(order).toEqual([1, 2, 3]);
  });

  it('takes an aborted waiter out of the line, so it neither holds a place nor gets a slot', async () => {
    const holding = await enterFleet(store, 'aborted', ONE_AT_A_TIME);
    const abort = new AbortController();
    const waiting = enterFleet(store, 'aborted', ONE_AT_A_TIME, abort.signal);
    const k = createKeys(t.prefix).providerLimits('aborted');
    await expect.poll(() => t.redis.zcard(k.waiters), { timeout: 10_000 }).toBe(1);
    abort.abort(new Error('run cancelled'));
    await expect(waiting).rejects.toThrow('run cancelled');
    expect(await t.redis.zcard(k.waiters)).toBe(0);
    expect(await t.redis.zcard(k.slots)).toBe(1);
    holding();
  });

  it('drops a waiter that stopped asking (its scheduler died) from the line, so those behind it are served', async () => {
    const k = createKeys(t.prefix).providerLimits('stale');
    // A waiter that asked once and died: first in the line while the slot is taken.
    await dieHolding('stale', 300);
    const [admitted] = await redisScripts(t.redis).providerAcquire(
      [k.slots, k.starts, k.waiters, k.lastTries],
      [randomUUID(), 60_000, 1, 0, 1000, 60_000],
    );
    expect(admitted).toBe(0);
    const release = await enterFleet(store, 'stale', ONE_AT_A_TIME, undefined, undefined, { staleMs: 500 });
    expect(await t.redis.zcard(k.waiters)).toBe(0);
    release();
  });

  it('names Redis, not the provider, when the limits cannot be read, and is no provider failure', async () => {
    const dead = new Redis('redis://127.0.0.1:1', {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    try {
      const err: unknown = await enterFleet(
        { redis: dead, prefix: t.prefix },
        'unreached',
        ONE_AT_A_TIME,
      ).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(FleetLimitsUnavailable);
      expect(String((err as Error).message)).toMatch(/provider "unreached" are kept in Redis, which failed/);
      expect(classifyFailure(err)).toBeUndefined();
    } finally {
      dead.disconnect();
    }
  });

  it("says once when a running request's slot is found gone from Redis", async () => {
    const lost: string[] = [];
    let saidLost!: () => void;
    const said = new Promise<void>((resolve) => (saidLost = resolve));
    const release = await enterFleet(store, 'lost', ONE_AT_A_TIME, undefined, undefined, {
      leaseMs: 300,
      onLeaseLost: (why) => {
        lost.push(why);
        saidLost();
      },
    });
    await t.redis.del(createKeys(t.prefix).providerLimits('lost').slots);
    await said;
    // Later renewals find it gone too; it is said once.
    await expect.poll(() => t.redis.zcard(createKeys(t.prefix).providerLimits('lost').slots)).toBe(0);
    release();
    expect(lost).toEqual(['its lease was gone from Redis when renewed']);
  });
});
