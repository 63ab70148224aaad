import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger, createRedis, waitReady } from '@agent-reach/shared';
import { BreakerView, Dispatcher, ToolCatalog } from '@agent-reach/scheduler/internal';
import { seedRun } from './helpers/ledger.js';
import { startPlatform } from './helpers/platform.js';
import { startExecutorChild, type Child } from './helpers/processes.js';
import { REDIS_URL, testRedis, waitFor } from './helpers/redis.js';

/** Deletes every key of a prefix, as a Redis that lost its data (or was flushed) would have it. */
async function loseData(t: { redis: import('ioredis').Redis; prefix: string }): Promise<void> {
  let cursor = '0';
  do {
    const [next, found] = await t.redis.scan(cursor, 'MATCH', `${t.prefix}:*`, 'COUNT', 1000);
    cursor = next;
    if (found.length > 0) await t.redis.del(...found);
  } while (cursor !== '0');
}

describe('executors announce what they serve with a heartbeat and an expiry', () => {
  let p: Awaited<ReturnType<typeof startPlatform>> | undefined;
  afterEach(async () => {
    await p?.close();
    p = undefined;
  });

  it('announces its tools and groups again within seconds after Redis lost the platform keys', async () => {
    p = await startPlatform({}, { executor: { heartbeatIntervalMs: 200, announcementTtlMs: 2000 } });
    const catalog = new ToolCatalog(p.producer, p.keys);
    expect((await catalog.refresh()).servesGroup('default')).toBe(true);
    await loseData(p);
    await waitFor(
      async () => (await catalog.refresh()).has('query_weather') && catalog.servesGroup('default'),
      5000,
      'the catalog to be announced again',
    );
    expect(catalog.names()).toEqual(expect.arrayContaining(p.executor.registry.names()));
    // Tools, their groups and their timing are all back: calls run again.
    const r = await p.callIn({ runId: `run-${randomUUID()}`, agent: 'test_agent' }, 'query_weather', {
      city: '北京',
    });
    expect(r).toMatchObject({ ok: true, name: 'query_weather' });
  });
});

describe('the fleet catalog is the union of live announcements (executor processes)', () => {
  let t: ReturnType<typeof testRedis>;
  let children: Child[] = [];
  let producer: ReturnType<typeof createRedis>;
  const closers: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const close of closers.splice(0)) await close();
    for (const c of children) c.kill('SIGKILL');
    await Promise.all(children.map((c) => c.exited));
    children = [];
    await producer.quit();
    await t.cleanup();
  });
  const spawn = (env: Record<string, string>) => {
    const child = startExecutorChild(t.prefix, env);
    children.push(child);
    return child;
  };
  const start = async () => {
    t = testRedis();
    producer = createRedis(REDIS_URL, 'producer');
    await waitReady(producer, REDIS_URL);
  };
  const SHORT = { HEARTBEAT_INTERVAL_MS: '200', ANNOUNCEMENT_TTL_MS: '1500' };

  it('ages out the tools, groups and breaker states of an executor that died', async () => {
    await start();
    const plain = spawn({ ...SHORT, EXECUTOR_GROUPS: 'default', BREAKER_FAILURE_THRESHOLD: '1' });
    await plain.ready;
    const catalog = await new ToolCatalog(producer, t.keys).refresh();
    const dispatcher = new Dispatcher({
      connection: producer,
      keys: t.keys,
      catalog,
      logger: createLogger('test', { level: 'silent' }),
    });
    const breakers = new BreakerView(producer, t.keys);
    closers.push(
      () => dispatcher.close(),
      () => breakers.close(),
    );
    const run = { runId: `run-${randomUUID()}`, traceId: 'trace', agent: 'test_agent' };
    const call = { toolCallId: 'call_1', name: 'always_failing', arguments: '{}' };
    await seedRun(producer, t.keys, run, [call]);
    const [failed] = await dispatcher.dispatch(run, [call]);
    expect(failed?.error?.kind).toBe('transient');
    expect(await breakers.openTools()).toEqual(new Set(['always_failing']));

    const isolated = spawn({ ...SHORT, EXECUTOR_GROUPS: 'isolated' });
    await isolated.ready;
    await catalog.refresh();
    expect([catalog.servesGroup('default'), catalog.servesGroup('isolated')]).toEqual([true, true]);
    plain.kill('SIGKILL');
    await plain.exited;
    await waitFor(
      async () => !(await catalog.refresh()).servesGroup('default'),
      8000,
      "the dead executor's announcement to expire",
    );
    // The live executor still announces every tool it registers, and its own group.
    expect(catalog.servesGroup('isolated')).toBe(true);
    expect(catalog.has('always_failing')).toBe(true);
    // The open breaker was the dead executor's: it no longer hides the tool.
    breakers.invalidate();
    expect(await breakers.openTools()).toEqual(new Set());
    expect(await breakers.all()).toEqual([]);
    expect(JSON.parse((await t.redis.hget(t.keys.breakers, 'always_failing'))!)).toMatchObject({
      state: 'open',
    });
  }, 60_000);

  it('withdraws the announcement of an executor that shuts down cleanly, without waiting for its expiry', async () => {
    await start();
    const child = spawn({ EXECUTOR_GROUPS: 'isolated', ANNOUNCEMENT_TTL_MS: '60000' });
    await child.ready;
    const catalog = await new ToolCatalog(producer, t.keys).refresh();
    const forgetful = await new ToolCatalog(producer, t.keys, { memoryMs: 0 }).refresh();
    expect(catalog.servesGroup('isolated')).toBe(true);
    const tools = catalog.names();
    expect(tools).toContain('isolated_echo');
    child.kill('SIGTERM');
    expect(await child.exited).toBe(0);
    await Promise.all([catalog.refresh(), forgetful.refresh()]);
    expect(catalog.servesGroup('isolated')).toBe(false);
    expect(catalog.liveExecutors().size).toBe(0);
    // Its tools stay known for the catalog's memory: calls of them wait for an executor rather than
    // being answered as tools that do not exist.
    expect(catalog.names()).toEqual(tools);
    expect(forgetful.names()).toEqual([]);
  }, 30_000);
});
