import { randomUUID } from 'node:crypto';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKeys } from '@agent-reach/protocol';
import { createRedis, waitReady, type RedisClient } from '@agent-reach/shared';
import { REDIS_URL } from '@agent-reach/testing';
import { createProviderMetrics } from '../../model/provider-metrics.js';
import { mcpServers, providerBreakers } from './ui-reach.js';

let redis: RedisClient;

beforeAll(async () => {
  redis = createRedis(REDIS_URL, 'producer');
  await waitReady(redis, REDIS_URL);
});

afterAll(async () => {
  await redis.quit();
});

describe("the inspector overview's providers and MCP servers", () => {
  it("reads each provider's breaker from the scheduler's own gauge, by name", async () => {
    const registry = new Registry();
    expect(await providerBreakers(registry)).toEqual([]);
    const metrics = createProviderMetrics(registry);
    metrics.breakerState.set({ provider: 'spare' }, 2);
    metrics.breakerState.set({ provider: 'default' }, 0);
    metrics.breakerState.set({ provider: 'backup' }, 1);
    expect(await providerBreakers(registry)).toEqual([
      { provider: 'backup', state: 'half_open' },
      { provider: 'default', state: 'closed' },
      { provider: 'spare', state: 'open' },
    ]);
    expect(await providerBreakers(undefined)).toEqual([]);
  });

  it('merges the reports of every live executor per server, keeps fields it does not know, and skips expired ones', async () => {
    const keys = createKeys(`t${randomUUID().slice(0, 8)}`);
    const [seconds] = await redis.time();
    const later = Number(seconds) * 1000 + 60_000;
    const announce = (executorId: string, expiresAt: number, servers: object[]) =>
      redis.hset(
        keys.catalog,
        executorId,
        JSON.stringify({ expiresAt, executorId, groups: ['default'], tools: [], mcpServers: servers }),
      );
    try {
      await announce('e1', later, [
        { name: 'fs', group: 'default', up: true, tools: 14, restarts: 0 },
        { name: 'gone', group: 'default', up: false, tools: 0, error: 'spawn nope ENOENT' },
      ]);
      await announce('e2', later + 1, [
        { name: 'fs', group: 'default', up: false, tools: 0, error: 'exited (1)', restarts: 3 },
      ]);
      // An executor whose announcement lapsed counts for nothing.
      await announce('e3', Number(seconds) * 1000 - 1000, [
        { name: 'stale', group: 'default', up: true, tools: 1 },
      ]);
      expect(await mcpServers(redis, keys)).toEqual([
        { name: 'fs', group: 'default', up: 1, executors: 2, tools: 14, restarts: 3, error: 'exited (1)' },
        { name: 'gone', group: 'default', up: 0, executors: 1, tools: 0, error: 'spawn nope ENOENT' },
      ]);
    } finally {
      await redis.del(keys.catalog);
    }
  });
});
