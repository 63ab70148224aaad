import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { Queue } from 'bullmq';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { toolJobId, type ToolResult } from '@agent-reach/protocol';
import { createLogger, createRedis, waitReady } from '@agent-reach/shared';
import { Dispatcher, ToolCatalog } from '@agent-reach/scheduler/internal';
import { ROOT, startExecutorChild, type Child } from './helpers/processes.js';
import { STUCK_AGENTS_YAML } from './helpers/stuck-tools.js';
import { seedRun } from './helpers/ledger.js';
import { REDIS_URL, testRedis, waitFor } from './helpers/redis.js';

describe('executor processes', () => {
  let t: ReturnType<typeof testRedis>;
  let children: Child[];
  let dispatcher: Dispatcher | undefined;
  let catalog: ToolCatalog;
  let producer: ReturnType<typeof createRedis>;
  const logger = createLogger('test', { level: 'silent' });

  beforeEach(async () => {
    t = testRedis();
    children = [];
    producer = createRedis(REDIS_URL, 'producer');
    await waitReady(producer, REDIS_URL);
  });
  afterEach(async () => {
    await dispatcher?.close();
    dispatcher = undefined;
    for (const c of children) c.kill('SIGKILL');
    await Promise.all(children.map((c) => c.exited));
    await producer.quit();
    await t.cleanup();
  });

  const spawn = (env: Record<string, string> = {}, args: string[] = []) => {
    const child = startExecutorChild(t.prefix, env);
    if (args.length) throw new Error('use env for options');
    children.push(child);
    return child;
  };
  const makeDispatcher = async (slackMs?: number, startWaitMs?: number) => {
    catalog = await new ToolCatalog(producer, t.keys).refresh();
    dispatcher = new Dispatcher({
      connection: producer,
      keys: t.keys,
      catalog,
      logger,
      ...(slackMs ? { slackMs } : {}),
      ...(startWaitMs ? { startWaitMs } : {}),
    });
    return dispatcher;
  };
  const calls = (n: number, name: string, args: object) =>
    Array.from({ length: n }, (_, i) => ({ toolCallId: `call_${i}`, name, arguments: JSON.stringify(args) }));
  const run = () => {
    const runId = `run-${randomUUID()}`;
    return { runId, traceId: runId, agent: 'test_agent' };
  };
  /** Dispatches calls of a run after recording them as the scheduler does (run meta and ledger). */
  const dispatch = async (
    d: Dispatcher,
    r: ReturnType<typeof run>,
    made: Array<{ toolCallId: string; name: string; arguments: string }>,
  ) => {
    await seedRun(producer, t.keys, r, made);
    return d.dispatch(r, made);
  };
  const effects = async () => Object.values(await t.redis.hgetall(`${t.prefix}:test:effects`)).map(Number);

  it('runs a turn of 200 calls across two executor processes, each call exactly once', async () => {
    const [a, b] = [spawn(), spawn()];
    await Promise.all([a.ready, b.ready]);
    const d = await makeDispatcher();
    const results = await dispatch(d, run(), calls(200, 'counted_effect', { ms: 5 }));
    expect(results.map((r) => r.tool_call_id)).toEqual(calls(200, 'x', {}).map((c) => c.toolCallId));
    expect(results.every((r) => r.ok)).toBe(true);
    const pids = new Set(results.map((r) => (r.content as { pid: number }).pid));
    expect(pids).toEqual(new Set([a.proc.pid, b.proc.pid]));
    const counts = await effects();
    expect(counts).toHaveLength(200);
    expect(counts.every((n) => n === 1)).toBe(true);
  });

  it('never dispatches a call that already has a recorded result', async () => {
    const child = spawn();
    await child.ready;
    const d = await makeDispatcher();
    const r = run();
    const first = await dispatch(d, r, calls(3, 'counted_effect', {}));
    const again = await dispatch(d, r, calls(3, 'counted_effect', {}));
    expect(again).toEqual(first);
    expect(await effects()).toEqual([1, 1, 1]);
  });

  it('answers unavailable (nothing ran) instead of hanging when no executor serves the tool group', async () => {
    const child = spawn({ EXECUTOR_GROUPS: 'default' });
    await child.ready;
    const d = await makeDispatcher(300, 500);
    expect(catalog.servesGroup('isolated')).toBe(false);
    const [result] = await dispatch(d, run(), calls(1, 'isolated_echo', { value: 'hi' }));
    expect(result).toMatchObject({ ok: false, attempts: 0, error: { kind: 'unavailable', retryable: true } });
  });

  it('serves a group only from executors started for it', async () => {
    const isolated = spawn({ EXECUTOR_GROUPS: 'isolated' });
    const plain = spawn({ EXECUTOR_GROUPS: 'default' });
    await Promise.all([isolated.ready, plain.ready]);
    const d = await makeDispatcher();
    const [echo, weather] = await dispatch(d, run(), [
      { toolCallId: 'c1', name: 'isolated_echo', arguments: '{"value":"hi"}' },
      { toolCallId: 'c2', name: 'query_weather', arguments: '{"city":"上海"}' },
    ]);
    expect((echo as ToolResult).content).toEqual({ echo: 'hi', pid: isolated.proc.pid });
    expect((weather as ToolResult).ok).toBe(true);
  });

  it('ends within its grace period on SIGTERM with a handler stuck forever, and another executor then runs the call once', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'ar-stuck-'));
    const agentsFile = path.join(dir, 'agents.yaml');
    await writeFile(agentsFile, STUCK_AGENTS_YAML);
    const env = {
      TOOL_MODULES: path.join(ROOT, 'test/helpers/stuck-tools.ts'),
      AGENTS_FILE: agentsFile,
      SHUTDOWN_GRACE_MS: '2000',
    };
    const queue = new Queue('tools-default', {
      connection: t.redis,
      prefix: t.keys.queuePrefix('tools-default'),
    });
    try {
      const first = spawn(env);
      await first.ready;
      const d = await makeDispatcher();
      const r = run();
      const pending = dispatch(d, r, [{ toolCallId: 'stuck', name: 'stuck_once', arguments: '{}' }]);
      const stuck = `${t.prefix}:test:stuck`;
      await waitFor(async () => (await t.redis.hlen(stuck)) === 1, 10_000, 'the handler to be stuck');
      first.kill('SIGTERM');
      const exit = await Promise.race([first.exited, delay(15_000, 'still running after 15 s')]);
      expect(exit).toBe(0);
      // The stuck call wrote nothing and went back to its queue untouched, for another executor.
      expect(await t.redis.exists(t.keys.results(r.runId))).toBe(0);
      expect(['waiting', 'delayed']).toContain(await queue.getJobState(toolJobId(r.runId, 'stuck')));
      const second = spawn(env);
      await second.ready;
      const [result] = await pending;
      expect(result).toMatchObject({ ok: true, content: { executions: 2, pid: second.proc.pid } });
      expect(await t.redis.hgetall(t.keys.results(r.runId))).toEqual({ stuck: JSON.stringify(result) });
      expect(Object.values(await t.redis.hgetall(stuck))).toEqual(['2']);
    } finally {
      await queue.close();
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('drains in-flight calls on SIGTERM, takes no new ones, and loses nothing', async () => {
    const first = spawn({ SHUTDOWN_GRACE_MS: '20000' });
    await first.ready;
    const d = await makeDispatcher();
    const r = run();
    const inFlight = dispatch(d, r, calls(10, 'slow', { ms: 800 }));
    await waitFor(
      async () => Number(await t.redis.get(`${t.prefix}:test:slow:started`)) === 10,
      10_000,
      '10 started',
    );
    const stopping = first.message('stopping');
    first.kill('SIGTERM');
    await stopping;
    // Published after the signal: the draining executor must not take it.
    const later = dispatch(d, run(), [{ toolCallId: 'late', name: 'slow', arguments: '{"ms":10}' }]);
    const drained = await inFlight;
    expect(drained.every((x) => x.ok)).toBe(true);
    expect(Number(await t.redis.get(`${t.prefix}:test:slow:finished`))).toBe(10);
    expect(await first.exited).toBe(0);
    expect(Number(await t.redis.get(`${t.prefix}:test:slow:started`))).toBe(10);
    const second = spawn();
    await second.ready;
    const [late] = await later;
    expect(late).toMatchObject({ ok: true, tool_call_id: 'late' });
  });
});
