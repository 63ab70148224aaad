import { setTimeout as delay } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { createKeys } from '@agent-reach/protocol';
import { createLogger, createRedis, waitReady } from '@agent-reach/shared';
import { startLlmSim, type LlmSim } from '@agent-reach/llm-sim';
import { RunControl } from '@agent-reach/scheduler';
import { startExecutorWith, startSchedulerChild, type Child } from './helpers/processes.js';
import { freePort, startPrivateRedis, type PrivateRedis } from './helpers/redis-server.js';
import { waitFor } from './helpers/redis.js';
import { testEnv } from './helpers/runs.js';

/** The status `path` of the server on `port` answers with, or 0 when nothing answers there. */
const statusOf = (port: number, path: string) =>
  fetch(`http://127.0.0.1:${port}${path}`).then(
    (res) => res.status,
    () => 0,
  );

describe('executor and scheduler processes started while Redis does not answer', () => {
  const children: Child[] = [];
  let sim: LlmSim | undefined;
  let redis: PrivateRedis | undefined;
  let control: RunControl | undefined;
  afterEach(async () => {
    await control?.close();
    for (const c of children.splice(0)) {
      c.kill('SIGKILL');
      await c.exited;
    }
    await sim?.close();
    await redis?.destroy();
  });

  it('wait for Redis past the old 5 s limit reporting not ready, then serve a run end to end once it starts', async () => {
    const redisPort = await freePort();
    const [executorMetrics, schedulerMetrics] = [await freePort(), await freePort()];
    sim = await startLlmSim({
      scenarios: [
        {
          name: 'noop-then-answer',
          turns: [{ tool_calls: [{ name: 'noop', arguments: {} }] }, { content: 'all done' }],
        },
      ],
    });
    const prefix = `outage-start-${Date.now()}`;
    const env = testEnv(prefix, sim, {
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
      EXECUTOR_METRICS_PORT: String(executorMetrics),
      SCHEDULER_METRICS_PORT: String(schedulerMetrics),
    });
    const executor = startExecutorWith(env);
    const scheduler = startSchedulerChild(env);
    children.push(executor, scheduler);
    const processes = [
      { child: executor, metrics: executorMetrics },
      { child: scheduler, metrics: schedulerMetrics },
    ];
    for (const { metrics } of processes) {
      await waitFor(
        async () => (await statusOf(metrics, '/healthz')) === 200 || undefined,
        60_000,
        `the metrics server on ${metrics} to answer: ${executor.output()} ${scheduler.output()}`,
      );
    }
    // Past the 5 s after which a start used to give up on Redis.
    await delay(6_000);
    for (const { child, metrics } of processes) {
      expect(child.proc.exitCode, child.output()).toBeNull();
      expect(await statusOf(metrics, '/readyz')).toBe(503);
      expect(child.output()).toContain('waiting for Redis');
    }

    redis = await startPrivateRedis({ port: redisPort });
    await Promise.all([executor.ready, scheduler.ready]);
    for (const { metrics } of processes) expect(await statusOf(metrics, '/readyz')).toBe(200);
    const producer = createRedis(redis.url, 'producer', { logger: createLogger('t', { level: 'silent' }) });
    await waitReady(producer, redis.url);
    control = new RunControl(producer, createKeys(prefix));
    const runId = await control.start({ agent: 'test_agent', input: 'go', model: 'noop-then-answer' });
    expect(await control.wait(runId, 30_000)).toMatchObject({ status: 'succeeded', answer: 'all done' });
    expect((await control.get(runId))?.state?.steps.map((s) => [s.tool, s.ok])).toEqual([['noop', true]]);
  }, 180_000);
});
