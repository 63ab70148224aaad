import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKeys } from '@agent-reach/protocol';
import { connectRedis, constants, createLogger, waitReady } from '@agent-reach/shared';
import { RunControl, startApiServer } from '@agent-reach/scheduler';
import { bareApiDeps, request, TEST_API_KEYS } from './helpers/api.js';
import {
  BASELINE,
  cleanupAll,
  faultScenarioChain,
  formatReport,
  TOOL_CALLS_PER_RUN,
  type FaultRunOptions,
  type FaultScenario,
} from '@agent-reach/faults';
import { runDemo } from './helpers/demo.js';
import { probeRedis } from './helpers/redis-server.js';
import {
  hasRedisServer,
  startPrivateCluster,
  type ClusterNodeProcess,
  type PrivateCluster,
} from './helpers/redis-cluster.js';

/**
 * The platform on a Redis Cluster of the test's own: six `redis-server` processes (three masters,
 * three replicas). The workloads are the fault suite's (packages/faults): two schedulers and two
 * executors as child processes, llm-sim as the model, runs of six tool calls each, every run's records
 * and what the model was sent checked afterwards (packages/faults/src/fault-check.ts). The cluster is
 * started once for the file; each workload has a fleet (and key prefix) of its own, started ahead (the
 * first with the file, the next once the running workload's fleet is up) so that its start overlaps
 * the tests before it.
 */
describe.skipIf(!hasRedisServer())('Redis Cluster', () => {
  let cluster: PrivateCluster;
  beforeAll(async () => {
    cluster = await startPrivateCluster();
    // The first workload's fleet starts while the demo and the readiness test run.
    chain.prepare(0);
  }, 90_000);
  afterAll(async () => {
    await cleanupAll();
    await cluster?.destroy();
  });

  // The workloads, in the order of their tests: the first one's fleet starts with the file, each next
  // one's while the one before it runs. The tool queue's master is killed in the last one only, when no
  // other fleet is on the cluster.
  const queueKey = `${createKeys('ar').queuePrefix(createKeys('ar').toolQueue('default'))}:wait`;
  let victim: ClusterNodeProcess | undefined;
  const workloads: Array<{ scenario: FaultScenario; options: Omit<FaultRunOptions, 'cluster'> }> = [
    { scenario: BASELINE, options: { runs: 100 } },
    {
      scenario: {
        id: 'cluster-processes-killed',
        title: 'an executor and then a scheduler are killed (kill -9) mid-load and started again',
        async inject({ fleet, waitProgress }) {
          await fleet.kill9('executor', 0);
          await waitProgress(10, 20_000);
          await fleet.kill9('scheduler', 0);
        },
      },
      options: { runs: 40 },
    },
    {
      scenario: {
        id: 'cluster-queue-master-killed',
        title: "the master of the tool queue's slot is killed (kill -9) mid-load and its replica is promoted",
        async inject({ note }) {
          // The master of the default tool group's queue (BullMQ prefix `<prefix>:{tools-default}`: every
          // prefix puts it on the slot of `tools-default`): every call of the workload goes through its slot.
          const slot = await cluster.keySlot(queueKey);
          victim = await cluster.masterOf(queueKey);
          note('slot of the tool queue', slot);
          const killedAt = Date.now();
          await victim.kill9();
          const promoted = await cluster.waitPromoted(slot, victim.port, 30_000);
          note('kill → replica promoted ms', promoted - killedAt);
          await cluster.waitHealthy(30_000);
          note('kill → cluster healthy ms', Date.now() - killedAt);
        },
      },
      // The schedulers hold their runs under the production run lock (30 s, checked for stalls every
      // 30 s), not the fault suite's short one: the stall printed is the one a deployment sees.
      options: {
        runs: 40,
        env: {
          RUN_LOCK_DURATION_MS: String(constants.DEFAULT_RUN_LOCK_DURATION_MS),
          RUN_STALLED_INTERVAL_MS: String(constants.DEFAULT_RUN_STALLED_INTERVAL_MS),
        },
      },
    },
  ];
  const chain = faultScenarioChain(
    workloads.map(({ scenario, options }) => ({
      scenario,
      // The cluster is started by then: the options are read when the chain starts a fleet.
      get options() {
        return { ...options, cluster, settleMs: 60_000, quietMs: 10_000 };
      },
    })),
  );

  /** Runs a workload on the cluster (its fleet started ahead, or now) and expects every invariant to hold. */
  const expectClean = async (id: string) => {
    const report = await chain.run(workloads.findIndex((w) => w.scenario.id === id));
    const text = formatReport(report);
    console.log(text);
    expect(report.counts, text).toEqual({});
    return { report, text };
  };

  it('runs the demo (a run that calls tools, through the HTTP API) with REDIS_URL listing the nodes', async () => {
    const outputs = await mkdtemp(path.join(tmpdir(), 'ar-cluster-demo-'));
    try {
      const stdout = await runDemo(`cdemo${Date.now()}`, outputs, { REDIS_URL: cluster.url });
      expect(stdout).toMatch(/✓ query_weather \{"city":"上海"\} → ok/);
      expect(stdout).toMatch(/Outcome: succeeded \(final_answer\)/);
      const file = /Written file: (.+)$/m.exec(stdout)?.[1] ?? '';
      expect(await readFile(file, 'utf8')).toMatch(/^# 上海周末两日游建议/);
    } finally {
      await rm(outputs, { recursive: true, force: true });
    }
  }, 90_000);

  it('is ready on /readyz with noeviction only while every master has it', async () => {
    const redis = connectRedis(cluster.url, 'producer', {
      logger: createLogger('test', { level: 'silent' }),
    });
    await waitReady(redis, cluster.url);
    const keys = createKeys(`cready${Date.now()}`);
    const control = new RunControl(redis, keys);
    const api = await startApiServer(bareApiDeps(control, redis, keys), {
      apiKeys: TEST_API_KEYS,
      port: 0,
      host: '127.0.0.1',
      allowedModels: ['echo'],
      board: false,
      docs: false,
    });
    // One master of three evicts: readiness names its policy.
    const master = probeRedis((await cluster.masterOf('{agent-runs}')).port);
    try {
      expect((await request(api.url, 'GET', '/readyz', { key: null })).json).toEqual({
        status: 'ready',
        redis: 'ok',
        maxmemory_policy: 'noeviction',
      });
      await master.connect();
      await master.config('SET', 'maxmemory-policy', 'allkeys-lru');
      expect((await request(api.url, 'GET', '/readyz', { key: null })).json).toMatchObject({
        status: 'ready',
        maxmemory_policy: 'allkeys-lru',
        warning: expect.stringMatching(/not noeviction/),
      });
    } finally {
      await master.config('SET', 'maxmemory-policy', 'noeviction').catch(() => undefined);
      master.disconnect();
      await api.close();
      await control.close();
      await redis.quit();
    }
  }, 30_000);

  it('ends every one of 100 concurrent runs succeeded, each call recorded and answered once', async () => {
    const { report, text } = await expectClean(BASELINE.id);
    expect(report.statuses, text).toEqual({ succeeded: 100 });
  }, 120_000);

  it('keeps every run invariant when an executor and then a scheduler are killed (kill -9) mid-load', async () => {
    await expectClean('cluster-processes-killed');
  }, 120_000);

  it('keeps every run invariant, runs every call and ends every run succeeded when the master of the tool queue is killed (kill -9) mid-load and its replica takes over', async () => {
    const { report, text } = await expectClean('cluster-queue-master-killed');
    // A failover costs no run: a step whose commands found no master is redone from the last checkpoint,
    // and a call whose job the failover lost (or left taken by nobody) is published again.
    expect(report.statuses, text).toEqual({ succeeded: 40 });
    expect(report.calls.timeoutsWithoutAttempt, text).toEqual([]);
    expect(report.calls.withoutEffect, text).toEqual([]);
    expect(report.calls.calls, text).toBe(40 * TOOL_CALLS_PER_RUN);
    const promoted = await cluster.masterOf('{tools-default}');
    expect(victim?.running).toBe(false);
    expect(promoted.port).not.toBe(victim?.port);
  }, 180_000);
});
