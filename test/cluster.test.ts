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
  formatReport,
  runFaultScenario,
  TOOL_CALLS_PER_RUN,
  type FaultScenario,
} from '@agent-reach/faults';
import { runDemo } from './helpers/demo.js';
import { probeRedis } from './helpers/redis-server.js';
import { hasRedisServer, startPrivateCluster, type PrivateCluster } from './helpers/redis-cluster.js';

/**
 * The platform on a Redis Cluster of the test's own: six `redis-server` processes (three masters,
 * three replicas). The workloads are the fault suite's (packages/faults): two schedulers and two
 * executors as child processes, llm-sim as the model, runs of six tool calls each, every run's records
 * and what the model was sent checked afterwards (packages/faults/src/fault-check.ts).
 */
describe.skipIf(!hasRedisServer())('Redis Cluster', () => {
  let cluster: PrivateCluster;
  beforeAll(async () => {
    cluster = await startPrivateCluster();
  }, 90_000);
  afterAll(async () => {
    await cleanupAll();
    await cluster?.destroy();
  });

  /** Runs a workload on the cluster and expects every invariant to hold. */
  const expectClean = async (scenario: FaultScenario, runs: number, env?: Record<string, string>) => {
    const report = await runFaultScenario(scenario, {
      runs,
      cluster,
      settleMs: 60_000,
      quietMs: 10_000,
      ...(env ? { env } : {}),
    });
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
    const { report, text } = await expectClean(BASELINE, 100);
    expect(report.statuses, text).toEqual({ succeeded: 100 });
  }, 120_000);

  it('keeps every run invariant when an executor and then a scheduler are killed (kill -9) mid-load', async () => {
    await expectClean(
      {
        id: 'cluster-processes-killed',
        title: 'an executor and then a scheduler are killed (kill -9) mid-load and started again',
        async inject({ fleet, waitProgress }) {
          await fleet.kill9('executor', 0);
          await waitProgress(10, 20_000);
          await fleet.kill9('scheduler', 0);
        },
      },
      40,
    );
  }, 120_000);

  it('keeps every run invariant, runs every call and ends every run succeeded when the master of the tool queue is killed (kill -9) mid-load and its replica takes over', async () => {
    // The master of the default tool group's queue (BullMQ prefix `<prefix>:{tools-default}`: every
    // prefix puts it on the slot of `tools-default`): every call of the workload goes through its slot.
    const queueKey = `${createKeys('ar').queuePrefix(createKeys('ar').toolQueue('default'))}:wait`;
    const slot = await cluster.keySlot(queueKey);
    const victim = await cluster.masterOf(queueKey);
    const { report, text } = await expectClean(
      {
        id: 'cluster-queue-master-killed',
        title: `the master of the tool queue's slot ${slot} is killed (kill -9) mid-load and its replica is promoted`,
        async inject({ note }) {
          const killedAt = Date.now();
          await victim.kill9();
          const promoted = await cluster.waitPromoted(slot, victim.port, 30_000);
          note('kill → replica promoted ms', promoted - killedAt);
          await cluster.waitHealthy(30_000);
          note('kill → cluster healthy ms', Date.now() - killedAt);
        },
      },
      40,
      // The schedulers hold their runs under the production run lock (30 s, checked for stalls every
      // 30 s), not the fault suite's short one: the stall printed is the one a deployment sees.
      {
        RUN_LOCK_DURATION_MS: String(constants.DEFAULT_RUN_LOCK_DURATION_MS),
        RUN_STALLED_INTERVAL_MS: String(constants.DEFAULT_RUN_STALLED_INTERVAL_MS),
      },
    );
    // A failover costs no run: a step whose commands found no master is redone from the last checkpoint,
    // and a call whose job the failover lost (or left taken by nobody) is published again.
    expect(report.statuses, text).toEqual({ succeeded: 40 });
    expect(report.calls.timeoutsWithoutAttempt, text).toEqual([]);
    expect(report.calls.withoutEffect, text).toEqual([]);
    expect(report.calls.calls, text).toBe(40 * TOOL_CALLS_PER_RUN);
    const promoted = await cluster.masterOf('{tools-default}');
    expect(victim.running).toBe(false);
    expect(promoted.port).not.toBe(victim.port);
  }, 180_000);
});
