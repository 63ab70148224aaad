import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKeys, type Keys } from '@agent-reach/protocol';
import { constants, createRedis, waitReady } from '@agent-reach/shared';
import { McpCallRegistry, type McpCallRef } from './call-registry.js';

const REDIS_URL = process.env.REDIS_URL ?? constants.DEFAULT_REDIS_URL;

let redis: Redis;
let keys: Keys;
let registry: McpCallRegistry;

beforeAll(async () => {
  redis = createRedis(REDIS_URL, 'producer');
  await waitReady(redis, REDIS_URL);
  keys = createKeys(`t${randomUUID().slice(0, 8)}`);
  registry = new McpCallRegistry(redis, keys, 60);
});

afterAll(async () => {
  const found = await redis.keys(`${keys.prefix}:*`);
  if (found.length > 0) await redis.del(...found);
  await redis.quit();
});

const call = (requestId: string | number, sessionId = 'mcp_a', principalId = 'p1'): McpCallRef => ({
  principalId,
  sessionId,
  requestId,
});

describe('McpCallRegistry: which run an MCP tool call started, for its cancellation (real Redis)', () => {
  it('finds the run of a call cancelled after its run was recorded', async () => {
    expect(await registry.started(call(1), 'run_one')).toBe('recorded');
    expect(await registry.cancelled(call(1))).toBe('run_one');
  });

  it('tells a call cancelled before its run was recorded to cancel the run once it records it', async () => {
    expect(await registry.cancelled(call(2))).toBeUndefined();
    expect(await registry.started(call(2), 'run_two')).toBe('cancelled');
    // A second cancellation finds nothing to cancel that it has not already marked.
    expect(await registry.cancelled(call(2))).toBeUndefined();
  });

  it('keeps apart calls of the same request id in other sessions, of other keys, and of another id type', async () => {
    expect(await registry.started(call(3, 'mcp_a', 'p1'), 'run_a')).toBe('recorded');
    expect(await registry.started(call(3, 'mcp_b', 'p1'), 'run_b')).toBe('recorded');
    expect(await registry.started(call(3, 'mcp_a', 'p2'), 'run_c')).toBe('recorded');
    expect(await registry.started(call('3', 'mcp_a', 'p1'), 'run_d')).toBe('recorded');
    expect(await registry.cancelled(call(3, 'mcp_b', 'p1'))).toBe('run_b');
    expect(await registry.cancelled(call('3', 'mcp_a', 'p1'))).toBe('run_d');
    expect(await registry.cancelled(call(3, 'mcp_a', 'p2'))).toBe('run_c');
  });

  it('forgets a finished call, and expires every record after its time to live', async () => {
    await registry.started(call(4), 'run_four');
    await registry.finished(call(4));
    expect(await registry.cancelled(call(4))).toBeUndefined();
    const ttls = await Promise.all((await redis.keys(`${keys.prefix}:mcp-call:*`)).map((k) => redis.ttl(k)));
    expect(ttls.length).toBeGreaterThan(0);
    for (const ttl of ttls) expect(ttl).toBeGreaterThan(0);
  });
});
