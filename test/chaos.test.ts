import { Queue } from 'bullmq';
import { afterEach, describe, expect, it } from 'vitest';
import { FINAL_STATUSES } from '@agent-reach/protocol';
import type { RunEvent } from '@agent-reach/scheduler';
import { startExecutorWith, startSchedulerChild, type Child } from './helpers/processes.js';
import { startRunsHarness, testEnv } from './helpers/runs.js';
import { waitFor } from './helpers/redis.js';

/** Short locks so that a killed process's work is taken over within seconds. */
const FAST_TAKEOVER = {
  RUN_LOCK_DURATION_MS: '4000',
  RUN_STALLED_INTERVAL_MS: '1000',
  LOCK_DURATION_MS: '3000',
  STALLED_INTERVAL_MS: '1000',
};
const FINAL: readonly string[] = FINAL_STATUSES;

describe('chaos: processes killed mid-run, connections dropped (real processes, real Redis)', () => {
  let h: Awaited<ReturnType<typeof startRunsHarness>> | undefined;
  let children: Child[] = [];
  afterEach(async () => {
    for (const c of children) c.kill('SIGKILL');
    await Promise.all(children.map((c) => c.exited));
    children = [];
    await h?.close();
    h = undefined;
  });
  const spawn = (child: Child) => {
    children.push(child);
    return child;
  };
  const env = () => testEnv(h!.prefix, h!.sim, FAST_TAKEOVER);
  /** Tool executions recorded by `counted_effect`, per idempotency key (run + tool call). */
  const effects = async () => Object.values(await h!.redis.hgetall(`${h!.prefix}:test:effects`)).map(Number);
  const finishedEvents = async (runId: string) =>
    (await h!.control.events(runId)).filter((e) => e.event.type === 'run_finished').length;

  it('redelivers a call whose executor was killed mid-call, and the model sees exactly one result for it', async () => {
    h = await startRunsHarness(FAST_TAKEOVER, { executor: false, scheduler: false });
    h.sim.addScenario({
      name: 'slow-tool',
      turns: [
        { tool_calls: [{ name: 'counted_effect', arguments: { ms: 2500 } }] },
        { content: 'done after redelivery' },
      ],
    });
    const first = spawn(startExecutorWith(env()));
    await first.ready;
    await h.addScheduler();
    const runId = await h.control.start({ agent: 'test_agent', input: 'slow tool', model: 'slow-tool' });
    const tools = new Queue('tools-default', {
      connection: h.redis,
      prefix: h.keys.queuePrefix('tools-default'),
    });
    await waitFor(async () => (await tools.getActiveCount()) === 1, 10_000, 'the call to be running');
    first.kill('SIGKILL');
    await first.exited;
    const second = spawn(startExecutorWith(env()));
    await second.ready;
    const outcome = await h.control.wait(runId, 30_000);
    await tools.close();
    expect(outcome).toMatchObject({ status: 'succeeded', answer: 'done after redelivery' });
    expect(await effects()).toEqual([1]);
    const answer = h.sim.requests.filter((r) => r.scenario === 'slow-tool' && r.status === 200).at(-1)!;
    const toolMessages = (answer.body as { messages: Array<{ role: string }> }).messages.filter(
      (m) => m.role === 'tool',
    );
    expect(toolMessages).toHaveLength(1);
  }, 60_000);

  it('resumes every run of a scheduler killed mid-run on another, asking no completed step again and running no call twice', async () => {
    h = await startRunsHarness(FAST_TAKEOVER, { scheduler: false });
    h.sim.addScenario({
      name: 'four-steps',
      latency_ms: 400,
      turns: [
        ...Array.from({ length: 4 }, (_, i) => ({
          tool_calls: [{ name: 'counted_effect', arguments: { ms: 50 + i } }],
        })),
        { content: 'four steps done' },
      ],
    });
    const [doomed, survivor] = [spawn(startSchedulerChild(env())), spawn(startSchedulerChild(env()))];
    await Promise.all([doomed.ready, survivor.ready]);
    const runIds = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        h!.control.start({ agent: 'test_agent', input: `run ${i}`, model: 'four-steps' }),
      ),
    );
    await waitFor(async () => (await effects()).length >= 8, 20_000, 'runs to make progress');
    doomed.kill('SIGKILL');
    const killedAt = Date.now();
    await doomed.exited;
    const unfinished = (await Promise.all(runIds.map((id) => h!.control.get(id)))).filter(
      (r) => !FINAL.includes(r?.summary.status ?? ''),
    );
    expect(unfinished.length).toBeGreaterThan(0);
    const outcomes = await Promise.all(runIds.map((id) => h!.control.wait(id, 60_000)));
    expect(outcomes.map((o) => o.status)).toEqual(runIds.map(() => 'succeeded'));
    expect(outcomes.every((o) => o.steps.length === 4)).toBe(true);
    // Every tool call ran exactly once.
    const counts = await effects();
    expect(counts).toHaveLength(8 * 4);
    expect(counts.every((n) => n === 1)).toBe(true);
    // No model turn answered well before the kill was asked again after it.
    for (let i = 0; i < runIds.length; i += 1) {
      const mine = h.sim.requests.filter(
        (r) => JSON.stringify(r.body).includes(`"run ${i}"`) && r.status === 200,
      );
      for (const r of mine) {
        if (Date.parse(r.at) > killedAt - 1000) continue;
        const repeats = mine.filter((x) => x.turn === r.turn && x !== r && Date.parse(x.at) > killedAt);
        expect(repeats, `run ${i} turn ${r.turn} asked again`).toHaveLength(0);
      }
    }
    for (const id of runIds) expect(await finishedEvents(id)).toBe(1);
  }, 90_000);

  it('completes runs when their Redis connections are killed mid-run', async () => {
    h = await startRunsHarness(FAST_TAKEOVER);
    h.sim.addScenario({
      name: 'steady',
      latency_ms: 100,
      turns: [
        ...Array.from({ length: 3 }, (_, i) => ({
          tool_calls: [{ name: 'counted_effect', arguments: { ms: 30 + i } }],
        })),
        { content: 'steady done' },
      ],
    });
    const runIds = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        h!.control.start({ agent: 'test_agent', input: `steady ${i}`, model: 'steady' }),
      ),
    );
    await waitFor(async () => (await effects()).length >= 5, 20_000, 'progress');
    const before = (await Promise.all(runIds.map((id) => h!.control.get(id)))).filter(
      (r) => !FINAL.includes(r?.summary.status ?? ''),
    );
    expect(before.length).toBeGreaterThan(0);
    const clients = (await h.redis.client('LIST')) as string;
    const ids = clients
      .split('\n')
      .filter((line) => line.includes(`name=${h!.prefix}-`))
      .map((line) => /id=(\d+)/.exec(line)?.[1])
      .filter((id): id is string => id !== undefined);
    expect(ids.length).toBeGreaterThan(2);
    for (const id of ids) await h.redis.client('KILL', 'ID', id);
    const outcomes = await Promise.all(runIds.map((id) => h!.control.wait(id, 60_000)));
    expect(outcomes.map((o) => o.status)).toEqual(runIds.map(() => 'succeeded'));
  }, 90_000);

  it('keeps a parked run through a restart of every process and completes it after approval', async () => {
    h = await startRunsHarness(FAST_TAKEOVER, { executor: false, scheduler: false });
    h.sim.addScenario({
      name: 'park',
      turns: [{ tool_calls: [{ name: 'needs_approval', arguments: {} }] }, { content: 'approved and done' }],
    });
    const [e1, s1] = [spawn(startExecutorWith(env())), spawn(startSchedulerChild(env()))];
    await Promise.all([e1.ready, s1.ready]);
    const runId = await h.control.start({ agent: 'test_agent', input: 'park me', model: 'park' });
    await waitFor(
      async () => (await h!.control.get(runId))?.summary.status === 'awaiting_approval',
      15_000,
      'parked',
    );
    e1.kill('SIGKILL');
    s1.kill('SIGKILL');
    await Promise.all([e1.exited, s1.exited]);
    const [e2, s2] = [spawn(startExecutorWith(env())), spawn(startSchedulerChild(env()))];
    await Promise.all([e2.ready, s2.ready]);
    const [pending] = Object.values((await h.control.get(runId))?.state?.approvals ?? {});
    await h.control.decide({ runId, toolCallId: pending!.toolCallId, decision: 'approved', by: 'ops' });
    expect(await h.control.wait(runId, 30_000)).toMatchObject({
      status: 'succeeded',
      answer: 'approved and done',
    });
  }, 60_000);

  it('brings 1000 concurrent runs across 2 schedulers and 2 executors to a final state through a kill of each', async () => {
    h = await startRunsHarness(
      { ...FAST_TAKEOVER, EXECUTOR_CONCURRENCY: '50' },
      { executor: false, scheduler: false },
    );
    h.sim.addScenario({
      name: 'mass',
      latency_ms: 20,
      turns: [
        { tool_calls: [{ name: 'counted_effect', arguments: { ms: 20 } }] },
        { tool_calls: [{ name: 'counted_effect', arguments: { ms: 20 } }] },
        { content: 'mass done' },
      ],
    });
    const [e1, e2] = [spawn(startExecutorWith(env())), spawn(startExecutorWith(env()))];
    await Promise.all([e1.ready, e2.ready]);
    const schedulerEnv = { ...env(), SCHEDULER_CONCURRENCY: '300' };
    const [s1, s2] = [spawn(startSchedulerChild(schedulerEnv)), spawn(startSchedulerChild(schedulerEnv))];
    await Promise.all([s1.ready, s2.ready]);
    const runIds = Array.from({ length: 1000 }, (_, i) => `mass-${i}`);
    for (let i = 0; i < runIds.length; i += 100) {
      await Promise.all(
        runIds
          .slice(i, i + 100)
          .map((runId, j) =>
            h!.control.start({ runId, agent: 'test_agent', input: `mass ${i + j}`, model: 'mass' }),
          ),
      );
    }
    await waitFor(async () => (await effects()).length >= 400, 60_000, '400 calls done');
    s1.kill('SIGKILL');
    e1.kill('SIGKILL');
    const done = (await h.control.list({ limit: 2000 })).filter((r) => FINAL.includes(r.status)).length;
    expect(done).toBeLessThan(1000);
    const outcomes = await Promise.all(runIds.map((id) => h!.control.wait(id, 120_000, 200)));
    expect(outcomes.filter((o) => FINAL.includes(o.status))).toHaveLength(1000);
    expect(outcomes.filter((o) => o.status === 'succeeded').length).toBeGreaterThanOrEqual(990);
    const finished = await Promise.all(runIds.map((id) => finishedEvents(id)));
    expect(finished.every((n) => n === 1)).toBe(true);
    const listed = await h.control.list({ limit: 2000 });
    expect(new Set(listed.map((r) => r.runId)).size).toBe(1000);
    // At-least-once only for calls in flight on the killed executor (at most its concurrency).
    const counts = await effects();
    expect(counts.filter((n) => n > 1).length).toBeLessThanOrEqual(50);
    const events: RunEvent[] = (await h.control.events(runIds[0]!)).map((e) => e.event);
    expect(events.at(-1)?.type).toBe('run_finished');
  }, 240_000);
});
