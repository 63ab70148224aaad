import { Queue } from 'bullmq';
import { afterEach, describe, expect, it } from 'vitest';
import { resolveToolMessageRefs, toolJobId, type ToolCallJob } from '@agent-reach/protocol';
import { createLogger, loadConfig } from '@agent-reach/shared';
import { startExecutor, type ExecutorProcess } from '@agent-reach/executor';
import { handAddedJobs } from './helpers/ledger.js';
import testTools from './helpers/test-tools.js';
import { startSchedulerChild, type Child } from './helpers/processes.js';
import { startRunsHarness, testEnv } from './helpers/runs.js';
import { waitFor } from './helpers/redis.js';

type Harness = Awaited<ReturnType<typeof startRunsHarness>>;

describe('durability: calls that never start, shutdown with work in flight, retention (real Redis, real processes)', () => {
  let h: Harness | undefined;
  const extra: ExecutorProcess[] = [];
  const children: Child[] = [];
  afterEach(async () => {
    for (const c of children.splice(0)) {
      c.kill('SIGKILL');
      await c.exited;
    }
    for (const e of extra.splice(0)) await e.close();
    await h?.close();
    h = undefined;
  });

  /** An executor in this process serving only the `isolated` group (the harness's serves only `default`). */
  const isolatedExecutor = async (harness: Harness) => {
    const config = loadConfig(testEnv(harness.prefix, harness.sim, { EXECUTOR_GROUPS: 'isolated' }));
    const e = await startExecutor(config, {
      extraTools: testTools,
      logger: createLogger('t', { level: 'silent' }),
    });
    extra.push(e);
    return e;
  };
  const toolResults = async (runId: string) =>
    (await h!.control.events(runId)).flatMap((e) => (e.event.type === 'tool_result' ? [e.event] : []));

  /**
   * Starts a run whose one call goes to the `isolated` group, which no executor serves yet, and waits until
   * the call's first deadline has passed and it was published again; returns the run and its first job.
   */
  const republishedCall = async (harness: Harness) => {
    harness.sim.addScenario({
      name: 'late-executor',
      turns: [{ tool_calls: [{ name: 'isolated_echo', arguments: { value: 'late' } }] }, { content: 'done' }],
    });
    const runId = await harness.control.start({ agent: 'test_agent', input: 'echo', model: 'late-executor' });
    const queue = new Queue('tools-isolated', {
      connection: harness.redis,
      prefix: harness.keys.queuePrefix('tools-isolated'),
    });
    const firstJob = await waitFor(
      async () => (await queue.getWaiting())[0],
      10_000,
      'the call to be queued',
    );
    const firstDeadline = firstJob.data.deadline as number;
    // Past the first deadline the job is taken back and published again with a new one.
    const republished = await waitFor(
      async () => {
        const [job] = await queue.getWaiting();
        return job && (job.data.deadline as number) > firstDeadline ? job : undefined;
      },
      20_000,
      'the call to be republished',
    );
    expect(republished.id).toBe(firstJob.id);
    await queue.close();
    return { runId, first: firstJob.data as ToolCallJob };
  };

  it('answers a call that no executor started before its deadline as unavailable, not timeout, and takes its job back so it never runs late', async () => {
    h = await startRunsHarness({ EXECUTOR_GROUPS: 'default', TOOL_START_WAIT_MS: '0' });
    h.sim.addScenario({
      name: 'unserved',
      turns: [{ tool_calls: [{ name: 'isolated_echo', arguments: { value: 'x' } }] }, { content: 'gave up' }],
    });
    const runId = await h.control.start({ agent: 'test_agent', input: 'echo', model: 'unserved' });
    const outcome = await h.control.wait(runId, 30_000);
    // No tool ever ran, so the run does not pass for a success.
    expect(outcome).toMatchObject({ status: 'failed', reason: 'no_tool_available', answer: 'gave up' });
    const [result] = await toolResults(runId);
    expect(result).toMatchObject({
      tool: 'isolated_echo',
      ok: false,
      error: { kind: 'unavailable', retryable: true },
    });
    const queue = new Queue('tools-isolated', {
      connection: h.redis,
      prefix: h.keys.queuePrefix('tools-isolated'),
    });
    const callId = result!.tool_call_id;
    expect(await queue.getJob(toolJobId(runId, callId))).toBeUndefined();
    expect(await queue.getWaitingCount()).toBe(0);
    await queue.close();
    // The record keeps the answer once: the call's tool message, or its results-hash entry it refers to.
    const messages = resolveToolMessageRefs(
      await h.redis.lrange(h.keys.runMessages(runId), 0, -1),
      await h.redis.hgetall(h.keys.results(runId)),
    ).map((m) => JSON.parse(m) as { role: string; tool_call_id?: string; content?: string });
    const recorded = JSON.parse(messages.find((m) => m.tool_call_id === callId)!.content!) as {
      error: { kind: string };
    };
    expect(recorded.error.kind).toBe('unavailable');
  });

  it('republishes a call whose group had no executor when its deadline passed, and runs it once an executor appears', async () => {
    h = await startRunsHarness({ EXECUTOR_GROUPS: 'default', TOOL_START_WAIT_MS: '60000' });
    const { runId } = await republishedCall(h);
    await isolatedExecutor(h);
    const outcome = await h.control.wait(runId, 30_000);
    expect(outcome).toMatchObject({ status: 'succeeded', answer: 'done' });
    const [result] = await toolResults(runId);
    expect(result).toMatchObject({ tool: 'isolated_echo', ok: true, attempts: 1 });
  });

  it('never tells the model a call did not run when an executor took an earlier publication of it past its deadline while the call, published again, still runs', async () => {
    h = await startRunsHarness({ EXECUTOR_GROUPS: 'default', TOOL_START_WAIT_MS: '60000' });
    const { runId, first } = await republishedCall(h);
    // An executor takes the first publication only now, past its deadline (as after an outage of Redis or
    // of the executors): it does not run it and answers the dispatcher `unavailable`, which is not
    // recorded, while the publication that replaced it waits for an executor.
    const late = handAddedJobs(h);
    const id = await late.add({
      runId,
      toolCallId: first.tool_call_id,
      name: first.name,
      arguments: first.arguments,
      deadline: first.deadline,
      replyTo: first.reply_to,
    });
    await late.settled(id);
    await late.queue.close();
    expect(await h.redis.hget(h.keys.results(runId), first.tool_call_id)).toBeNull();
    await isolatedExecutor(h);
    const outcome = await h.control.wait(runId, 30_000);
    // The call ran once, and that is what the model was told and what the run's record keeps.
    expect(outcome).toMatchObject({ status: 'succeeded', answer: 'done' });
    const results = await toolResults(runId);
    expect(results).toHaveLength(1);
    expect(results[0]).toMatchObject({ tool: 'isolated_echo', ok: true, attempts: 1 });
  });

  it("takes a run's lock back when it lapsed while the run's job was still taken (as a failover can leave it), and finishes the run without waiting for the stalled-job check", async () => {
    // A short lock, renewed every ~250 ms; a stalled-job check far beyond the run's own time.
    h = await startRunsHarness({ RUN_LOCK_DURATION_MS: '1000', RUN_STALLED_INTERVAL_MS: '120000' });
    h.sim.addScenario({
      name: 'slow-turns',
      latency_ms: 700,
      turns: [
        { tool_calls: [{ name: 'query_weather', arguments: { city: '杭州' } }] },
        { content: 'done after the lapse' },
      ],
    });
    const runId = await h.control.start({ agent: 'test_agent', input: 'weather?', model: 'slow-turns' });
    const lock = `${h.keys.queuePrefix(h.keys.runsQueue)}:${h.keys.runsQueue}:${runId}:lock`;
    await waitFor(async () => (await h!.redis.exists(lock)) === 1, 10_000, 'the run job to be taken');
    // The lock is gone; the job is still `active`, taken by the scheduler that works on the run.
    await h.redis.del(lock);
    const outcome = await h.control.wait(runId, 20_000);
    expect(outcome).toMatchObject({ status: 'succeeded', answer: 'done after the lapse' });
    // Claimed once: the same scheduler went on with it, no other took it over.
    expect(await h.redis.hget(h.keys.runMeta(runId), 'epoch')).toBe('1');
  });

  it('ends a scheduler within its grace period while its run waits on a model that does not answer, and another scheduler completes the run once', async () => {
    h = await startRunsHarness({}, { scheduler: false });
    h.sim.addScenario({
      name: 'stuck-model',
      turns: [{ content: 'answered after the handover', fault: { type: 'hang', times: 1 } }],
    });
    const env = testEnv(h.prefix, h.sim, {
      SCHEDULER_SHUTDOWN_GRACE_MS: '1000',
      LLM_TIMEOUT_MS: '120000',
      LLM_MAX_RETRIES: '0',
    });
    const first = startSchedulerChild(env);
    children.push(first);
    await first.ready;
    const runId = await h.control.start({
      agent: 'test_agent',
      input: 'check the weather, then write it to a file',
      model: 'stuck-model',
    });
    // A multi-step request: its plan is recorded just before the turn's model call, the one that hangs.
    await waitFor(
      async () => (await h!.control.events(runId)).some((e) => e.event.type === 'plan'),
      15_000,
      'the run to reach its first model turn',
    );
    first.kill('SIGTERM');
    // Bounded wait: grace 1 s plus the close; a hung shutdown would wait for the model forever.
    const code = await Promise.race([
      first.exited,
      new Promise<'hung'>((r) => setTimeout(() => r('hung'), 15_000)),
    ]);
    expect(code).toBe(0);
    const second = startSchedulerChild(env);
    children.push(second);
    await second.ready;
    const outcome = await h.control.wait(runId, 30_000);
    expect(outcome).toMatchObject({ status: 'succeeded', answer: 'answered after the handover' });
    const types = (await h.control.events(runId)).map((e) => e.event.type);
    expect(types.filter((t) => t === 'run_started')).toHaveLength(1);
    expect(types.filter((t) => t === 'run_finished')).toHaveLength(1);
  });

  it('removes finished run jobs after RUN_RETENTION_S like the run records', async () => {
    h = await startRunsHarness({ RUN_RETENTION_S: '1' });
    const first = await h.control.start({ agent: 'test_agent', input: 'hi', model: 'echo' });
    await h.control.wait(first, 20_000);
    expect(await h.control.queue.getJob(first)).toBeDefined();
    // Expiring (1 or 0 s left) or already gone; never kept without an expiry (-1).
    expect([-2, 0, 1]).toContain(await h.redis.ttl(h.keys.runState(first)));
    await new Promise((r) => setTimeout(r, 1500));
    // BullMQ trims finished jobs by age when the next job of the queue finishes.
    const second = await h.control.start({ agent: 'test_agent', input: 'hi', model: 'echo' });
    await h.control.wait(second, 20_000);
    await waitFor(
      async () => (await h!.control.queue.getJob(first)) === undefined,
      5000,
      'the first job to go',
    );
  });
});
