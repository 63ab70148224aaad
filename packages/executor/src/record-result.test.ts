import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKeys, type Keys } from '@agent-reach/protocol';
import { constants, createRedis, redisScripts, waitReady } from '@agent-reach/shared';
import { recordResult, resultWriter, type CallRecord } from './record-result.js';

const REDIS_URL = process.env.REDIS_URL ?? constants.DEFAULT_REDIS_URL;

let redis: Redis;
let writer: Redis;
let keys: Keys;

beforeAll(async () => {
  redis = createRedis(REDIS_URL, 'producer');
  await waitReady(redis, REDIS_URL);
  writer = resultWriter(redis) as Redis;
  await waitReady(writer, REDIS_URL);
  keys = createKeys(`t${randomUUID().slice(0, 8)}`);
});

afterAll(async () => {
  const found = await redis.keys(`${keys.prefix}:*`);
  if (found.length > 0) await redis.del(...found);
  await writer.quit();
  await redis.quit();
});

function call(runId: string, resultJson: string): CallRecord {
  return {
    keys,
    runId,
    agent: 'helper',
    sessionId: undefined,
    toolCallId: 'call_1',
    replyTo: `${keys.prefix}:replies:${runId}`,
    resultJson,
    ref: undefined,
    full: undefined,
    resultsTtlS: 60,
    refTtlS: 60,
  };
}

describe("recording a call's result (real Redis)", () => {
  it('records and replies the first result of a call the run ledger holds, and keeps it against a second', async () => {
    const runId = `run_${randomUUID()}`;
    await redis.hset(keys.runCalls(runId), 'call_1', '{}');
    expect(await recordResult(writer, call(runId, '{"first":1}'))).toBeNull();
    expect(await recordResult(writer, call(runId, '{"second":2}'))).toBe('{"first":1}');
    expect(await redis.hget(keys.results(runId), 'call_1')).toBe('{"first":1}');
    expect(await redis.lrange(`${keys.prefix}:replies:${runId}`, 0, -1)).toHaveLength(2);
  });

  it('writes nothing into a run whose final checkpoint removed its ledger (an executor paused past the run end), and replies nothing', async () => {
    const runId = `run_${randomUUID()}`;
    // What a final checkpoint leaves: the ledger deleted, the results-hash entries its record holds
    // elsewhere deleted, the hash itself gone with its last entry.
    expect(await recordResult(writer, call(runId, '{"late":true}'))).toBeNull();
    expect(await redis.exists(keys.results(runId))).toBe(0);
    expect(await redis.exists(`${keys.prefix}:replies:${runId}`)).toBe(0);
  });

  it('records nothing through the cluster path either when the ledger does not hold the call', async () => {
    const runId = `run_${randomUUID()}`;
    const scripts = redisScripts(writer);
    await expect(
      scripts.recordResult([keys.results(runId), keys.runCalls(runId)], ['call_1', '{"late":true}', 60]),
    ).resolves.toBeNull();
    expect(await redis.exists(keys.results(runId))).toBe(0);
    await redis.hset(keys.runCalls(runId), 'call_1', '{}');
    await expect(
      scripts.recordResult([keys.results(runId), keys.runCalls(runId)], ['call_1', '{"ok":true}', 60]),
    ).resolves.toBeNull();
    expect(await redis.hget(keys.results(runId), 'call_1')).toBe('{"ok":true}');
  });
});
