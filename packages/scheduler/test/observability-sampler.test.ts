import { Queue, Worker } from 'bullmq';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '@agent-reach/shared';
import {
  QUEUE_JOBS_METRIC,
  QUEUE_SAMPLER_LEADER_METRIC,
  queueSamplerLeaseKey,
  startQueueSampler,
  type QueueSampler,
} from '@agent-reach/scheduler/internal';
import { testRedis, waitFor } from '@agent-reach/testing';

const logger = createLogger('test', { level: 'silent' });

/** The sampler's series as `queue/state → value`, or undefined when it exposes none. */
async function depths(registry: Registry): Promise<Record<string, number> | undefined> {
  const metric = registry.getSingleMetric(QUEUE_JOBS_METRIC);
  const values = (await metric?.get())?.values ?? [];
  if (values.length === 0) return undefined;
  return Object.fromEntries(values.map((v) => [`${v.labels.queue}/${v.labels.state}`, v.value]));
}

async function leaderValue(registry: Registry): Promise<number | undefined> {
  return (await registry.getSingleMetric(QUEUE_SAMPLER_LEADER_METRIC)?.get())?.values[0]?.value;
}

describe('queue depth sampler: one leader across the fleet, by a lease in Redis', () => {
  let t: ReturnType<typeof testRedis>;
  let samplers: QueueSampler[] = [];
  let closers: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    await Promise.all(samplers.map((s) => s.stop()));
    for (const close of closers.reverse()) await close();
    samplers = [];
    closers = [];
    await t.cleanup();
  });

  const start = (registry: Registry, queues: string[], intervalMs = 50, leaseMs = 300) => {
    const sampler = startQueueSampler({
      redis: t.redis,
      keys: t.keys,
      registry,
      queues: () => queues,
      intervalMs,
      leaseMs,
      logger,
    });
    samplers.push(sampler);
    return sampler;
  };

  it('reports waiting, active, delayed and failed jobs per queue, and delayed runs as parked', async () => {
    t = testRedis();
    const tools = new Queue(t.keys.toolQueue('default'), {
      connection: t.redis,
      prefix: t.keys.queuePrefix(t.keys.toolQueue('default')),
    });
    const runs = new Queue(t.keys.runsQueue, {
      connection: t.redis,
      prefix: t.keys.queuePrefix(t.keys.runsQueue),
    });
    closers.push(
      () => tools.close(),
      () => runs.close(),
    );
    await tools.addBulk([
      { name: 'call', data: { n: 1 } },
      { name: 'call', data: { n: 2 } },
      { name: 'call', data: { n: 3 }, opts: { priority: 5 } },
      { name: 'call', data: { n: 4 }, opts: { delay: 60_000 } },
    ]);
    await runs.add('run', { parked: true }, { jobId: 'parked-run', delay: 60_000 });
    await runs.add('run', { fails: true }, { jobId: 'failing-run' });
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const worker = new Worker(
      t.keys.runsQueue,
      async (job) => {
        if (job.data.fails) throw new Error('boom');
      },
      { connection: t.redis, prefix: t.keys.queuePrefix(t.keys.runsQueue) },
    );
    closers.push(() => worker.close(true));
    await waitFor(async () => (await runs.getFailedCount()) === 1, 5000, 'the failing run to fail');
    await worker.close();
    // One run held active by a worker that does not finish until released.
    await runs.add('run', { holds: true }, { jobId: 'held-run' });
    const holder = new Worker(t.keys.runsQueue, () => held, {
      connection: t.redis,
      prefix: t.keys.queuePrefix(t.keys.runsQueue),
    });
    closers.push(async () => {
      release();
      await holder.close();
    });
    await waitFor(async () => (await runs.getActiveCount()) === 1, 5000, 'the held run to be active');

    const registry = new Registry();
    start(registry, [t.keys.runsQueue, t.keys.toolQueue('default')]);
    const seen = await waitFor(() => depths(registry), 5000, 'a sample');
    expect(seen).toEqual({
      'tools-default/waiting': 3,
      'tools-default/active': 0,
      'tools-default/delayed': 1,
      'tools-default/failed': 0,
      'agent-runs/waiting': 0,
      'agent-runs/active': 1,
      'agent-runs/delayed': 1,
      'agent-runs/failed': 1,
      'agent-runs/parked': 1,
    });
    expect(await leaderValue(registry)).toBe(1);
    release();
    await waitFor(async () => (await depths(registry))?.['agent-runs/active'] === 0, 5000, 'a fresh sample');
  });

  it('exposes queue depths from exactly one of three samplers, and another takes over when the leader stops', async () => {
    t = testRedis();
    const tools = new Queue(t.keys.toolQueue('default'), {
      connection: t.redis,
      prefix: t.keys.queuePrefix(t.keys.toolQueue('default')),
    });
    closers.push(() => tools.close());
    await tools.add('call', { n: 1 });
    const registries = [new Registry(), new Registry(), new Registry()];
    const fleet = registries.map((r) => start(r, [t.keys.toolQueue('default')]));
    const exposing = async () => {
      const all = await Promise.all(registries.map((r) => depths(r)));
      return all.flatMap((d, i) => (d ? [i] : []));
    };
    await waitFor(async () => (await exposing()).length === 1, 5000, 'one sampler to lead');
    // Stays exactly one over several intervals (lease renewals included).
    const until = Date.now() + 400;
    await waitFor(
      async () => {
        expect(await exposing()).toHaveLength(1);
        expect(fleet.filter((s) => s.isLeader())).toHaveLength(1);
        return Date.now() > until;
      },
      5000,
      'eight intervals with one leader',
    );
    const [first] = await exposing();
    const leaderIndex = first ?? -1;
    expect(await leaderValue(registries[leaderIndex]!)).toBe(1);
    for (const [i, r] of registries.entries()) if (i !== leaderIndex) expect(await leaderValue(r)).toBe(0);
    expect((await depths(registries[leaderIndex]!))?.['tools-default/waiting']).toBe(1);

    await fleet[leaderIndex]!.stop();
    const next = await waitFor(
      async () => {
        const now = await exposing();
        return now.length === 1 && now[0] !== leaderIndex ? now[0] : undefined;
      },
      5000,
      'another sampler to take over',
    );
    expect(next).not.toBe(leaderIndex);
    expect(await depths(registries[leaderIndex]!)).toBeUndefined();
  });

  it('takes over a lapsed lease of a leader that died without giving it up', async () => {
    t = testRedis();
    const leaseKey = queueSamplerLeaseKey(t.keys);
    // A dead leader's lease: held by nobody alive, lapsing after 500 ms.
    await t.redis.set(leaseKey, 'dead-scheduler', 'PX', 500);
    const registry = new Registry();
    const sampler = start(registry, [t.keys.toolQueue('default')], 50, 300);
    // Several intervals pass while the dead leader's lease still runs: nobody may take it early.
    await waitFor(async () => (await t.redis.pttl(leaseKey)) < 250, 5000, 'the lease to run down');
    expect(sampler.isLeader()).toBe(false);
    expect(await depths(registry)).toBeUndefined();
    expect(await leaderValue(registry)).toBe(0);
    await waitFor(() => sampler.isLeader(), 5000, 'the lease to be taken over');
    expect(await t.redis.get(leaseKey)).not.toBe('dead-scheduler');
    await waitFor(() => depths(registry), 5000, 'values from the new leader');
    await sampler.stop();
    expect(await t.redis.get(leaseKey)).toBeNull();
  });

  it('stops exposing values when another process has taken the lease', async () => {
    t = testRedis();
    const registry = new Registry();
    const sampler = start(registry, [t.keys.toolQueue('default')], 50, 300);
    await waitFor(() => depths(registry), 5000, 'a sample');
    // Another process holds the lease now (as after a long pause of this one).
    await t.redis.set(queueSamplerLeaseKey(t.keys), 'someone-else', 'PX', 60_000);
    await waitFor(async () => (await depths(registry)) === undefined, 5000, 'values to be withdrawn');
    expect(sampler.isLeader()).toBe(false);
    expect(await leaderValue(registry)).toBe(0);
  });

  it('refuses a lease that is not longer than the sample interval', () => {
    t = testRedis();
    expect(() => start(new Registry(), [], 1000, 1000)).toThrow(/leaseMs \(1000\) must exceed intervalMs/);
  });
});
