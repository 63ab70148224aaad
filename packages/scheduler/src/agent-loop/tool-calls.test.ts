import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKeys, errorResult, type Keys, type ToolResult } from '@agent-reach/protocol';
import { constants, createLogger, createRedis, redisScripts, waitReady } from '@agent-reach/shared';
import { Dispatcher } from '../fleet/dispatcher.js';
import { createRunState } from './run-state.js';
import { ToolCatalog } from '../fleet/tool-catalog.js';
import { resolveToolCalls } from './tool-calls.js';

const REDIS_URL = process.env.REDIS_URL ?? constants.DEFAULT_REDIS_URL;
const agent = { name: 'helper', tools: ['lookup'] };

let redis: Redis;
let keys: Keys;
let dispatcher: Dispatcher;
let catalog: ToolCatalog;

beforeAll(async () => {
  redis = createRedis(REDIS_URL, 'producer');
  await waitReady(redis, REDIS_URL);
  keys = createKeys(`t${randomUUID().slice(0, 8)}`);
  // No executor announces anything on this prefix: every name is one the agent cannot reach right now.
  catalog = await new ToolCatalog(redis, keys, { memoryMs: 0 }).refresh();
  dispatcher = new Dispatcher({
    connection: redis,
    keys,
    catalog,
    logger: createLogger('t', { level: 'silent' }),
  });
});

afterAll(async () => {
  await dispatcher?.close();
  const found = await redis.keys(`${keys.prefix}:*`);
  if (found.length > 0) await redis.del(...found);
  await redis.quit();
});

describe('resolveToolCalls: answers given without a dispatch (real Dispatcher, real Redis)', () => {
  it('answers a call with the result its record already holds rather than a local unknown_tool', async () => {
    const state = createRunState({
      runId: `run_${randomUUID()}`,
      agent: 'helper',
      input: 'x',
      deadlineMs: 60_000,
    });
    // What an executor recorded for the call in an earlier attempt of the run, when the tool was known.
    const earlier: ToolResult = {
      tool_call_id: 'call_1',
      name: 'lookup',
      ok: true,
      status: 'ok',
      content: { value: 42 },
      duration_ms: 3,
      attempts: 1,
    };
    // The run's ledger held the call then: an executor records only calls it holds.
    await redis.hset(keys.runCalls(state.runId), 'call_1', '{}');
    await redisScripts(redis).recordResult(
      [keys.results(state.runId), keys.runCalls(state.runId)],
      ['call_1', JSON.stringify(earlier), 60],
    );
    const answeredLocally = new Set<string>();
    const [first, second] = await resolveToolCalls(
      state,
      [
        { id: 'call_1', name: 'lookup', arguments: '{}' },
        { id: 'call_2', name: 'lookup', arguments: '{}' },
      ],
      { dispatcher, catalog, agent },
      false,
      answeredLocally,
    );
    expect(first).toEqual(earlier);
    expect(second?.error?.kind).toBe('unknown_tool');
    expect(answeredLocally).toEqual(new Set(['call_1', 'call_2']));
  });

  it("records a local answer as the call's result before the model can read it, and keeps the first one", async () => {
    const state = createRunState({
      runId: `run_${randomUUID()}`,
      agent: 'helper',
      input: 'x',
      deadlineMs: 60_000,
    });
    const calls = [{ id: 'call_9', name: 'nonexistent', arguments: '{}' }];
    const [answer] = await resolveToolCalls(state, calls, { dispatcher, catalog, agent });
    expect(answer?.error?.kind).toBe('unknown_tool');
    expect(JSON.parse((await redis.hget(keys.results(state.runId), 'call_9')) ?? 'null')).toEqual(answer);
    // A later attempt decides something else for the same call: the recorded answer stands.
    const other = errorResult(
      { toolCallId: 'call_9', name: 'nonexistent' },
      { kind: 'unavailable', message: 'x', retryable: true },
    );
    expect(await dispatcher.recordLocal(state.runId, [other])).toEqual([answer]);
  });
});
