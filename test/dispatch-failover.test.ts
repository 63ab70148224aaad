import { randomUUID } from 'node:crypto';
import { Queue, Worker } from 'bullmq';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { toolJobId, WIRE_VERSION, type ToolCallJob } from '@agent-reach/protocol';
import { callStartField, createLogger, loadConfig, redisScripts } from '@agent-reach/shared';
import { startExecutor, type ExecutorProcess } from '@agent-reach/executor';
import { seedCalls, seedRun } from './helpers/ledger.js';
import { startPlatform } from './helpers/platform.js';
import { REDIS_URL, waitFor } from './helpers/redis.js';
import { TEST_AGENTS } from './helpers/processes.js';
import testTools from './helpers/test-tools.js';

/**
 * What a failover of the queue's Redis can leave behind, without a cluster: a call's job taken by a
 * worker that never got it (the job is active and locked, no executor has it), or a job taken by an
 * executor after its dispatcher gave that publication up. A call counts as started only when an executor
 * recorded its start on the run's record.
 */
describe('a call counts as started only when an executor recorded its start on the run', () => {
  let p: Awaited<ReturnType<typeof startPlatform>>;
  const extra: Array<{ close(): Promise<void> }> = [];
  beforeAll(async () => {
    // The platform's executor serves `default` only: `isolated` calls wait until the test starts one.
    p = await startPlatform({ EXECUTOR_GROUPS: 'default' });
  });
  afterEach(async () => {
    for (const e of extra.splice(0).reverse()) await e.close();
  });
  afterAll(async () => p.close());

  const isolatedExecutor = async (): Promise<ExecutorProcess> => {
    const config = loadConfig({
      REDIS_URL,
      AR_KEY_PREFIX: p.prefix,
      AGENTS_FILE: TEST_AGENTS,
      EXECUTOR_METRICS_PORT: '0',
      EXECUTOR_GROUPS: 'isolated',
    });
    const e = await startExecutor(config, {
      extraTools: testTools,
      logger: createLogger('t', { level: 'silent' }),
    });
    extra.push(e);
    return e;
  };
  const isolatedQueue = () => ({
    name: p.keys.toolQueue('isolated'),
    prefix: p.keys.queuePrefix(p.keys.toolQueue('isolated')),
  });
  /** A BullMQ worker that takes the next job of the `isolated` queue and then does nothing with it. */
  const takeAndVanish = async (): Promise<void> => {
    const q = isolatedQueue();
    const ghost = new Worker(q.name, null, { connection: p.redis, prefix: q.prefix, autorun: false });
    extra.push({ close: () => ghost.close(true) });
    await waitFor(async () => (await ghost.getNextJob(`ghost-${randomUUID()}`)) ?? false, 5000, 'the job');
  };

  it("gives up, without recording an answer, every call it awaits for a run whose ledger no longer holds one of them (a failover lost the run's last checkpoint), so the run resumes from its record", async () => {
    const run = { runId: `run-${randomUUID()}`, agent: 'test_agent' };
    const lost = { toolCallId: 'call_lost', name: 'isolated_echo', arguments: '{"value":"lost"}' };
    const kept = { toolCallId: 'call_kept', name: 'isolated_echo', arguments: '{"value":"kept"}' };
    await seedRun(p.producer, p.keys, run);
    await seedCalls(p.producer, p.keys, run, [lost, kept]);
    // No executor serves `isolated`: both calls wait in the queue.
    const answered = p.dispatcher.dispatch({ ...run, traceId: run.runId }, [lost, kept]);
    answered.catch(() => undefined);
    // The new master never received the checkpoint that put `call_lost` in the ledger.
    await p.redis.hdel(p.keys.runCalls(run.runId), lost.toolCallId);
    await expect(answered).rejects.toMatchObject({
      name: 'RunRecordBehind',
      message: expect.stringMatching(/its record lost the model turn of a call awaited here/),
    });
    // Nothing was recorded for either call: the retried turn's calls are answered by what runs.
    expect(await p.redis.hgetall(p.keys.results(run.runId))).toEqual({});
    // Their jobs are not the other tests' business.
    const queue = new Queue(isolatedQueue().name, { connection: p.redis, prefix: isolatedQueue().prefix });
    for (const call of [lost, kept]) await queue.remove(toolJobId(run.runId, call.toolCallId));
    await queue.close();
  }, 20_000);

  it('publishes again, and runs, a call whose job a worker took but never started (as after a failover), instead of answering timeout', async () => {
    const run = { runId: `run-${randomUUID()}`, agent: 'test_agent' };
    const call = { toolCallId: 'call_ghost', name: 'isolated_echo', arguments: '{"value":"after failover"}' };
    await seedRun(p.producer, p.keys, run);
    await seedCalls(p.producer, p.keys, run, [call]);
    const answered = p.dispatcher.dispatch({ ...run, traceId: run.runId }, [call]);
    // BullMQ now says the job is active, locked and started once; nobody is running it.
    await takeAndVanish();
    const q = isolatedQueue();
    expect(await p.redis.lrange(`${q.prefix}:${q.name}:active`, 0, -1)).toEqual([
      toolJobId(run.runId, call.toolCallId),
    ]);
    await isolatedExecutor();
    const [result] = await answered;
    expect(result).toMatchObject({
      tool_call_id: 'call_ghost',
      ok: true,
      content: { echo: 'after failover' },
      attempts: 1,
    });
    expect(JSON.parse((await p.redis.hget(p.keys.results(run.runId), 'call_ghost')) ?? '{}')).toMatchObject({
      ok: true,
      attempts: 1,
    });
    expect(await p.redis.hget(p.keys.runCalls(run.runId), callStartField('call_ghost'))).toMatch(
      /^started:\d+:executor-/,
    );
  }, 30_000);

  it('does not run, record or answer a job whose publication its dispatcher withdrew before any executor started it', async () => {
    const run = { runId: `run-${randomUUID()}`, agent: 'test_agent' };
    const call = { toolCallId: 'call_withdrawn', name: 'isolated_echo', arguments: '{"value":"late"}' };
    await seedRun(p.producer, p.keys, run);
    await seedCalls(p.producer, p.keys, run, [call]);
    const publication = Date.now();
    const replyTo = p.keys.replies(`withdrawn${randomUUID().slice(0, 8)}`);
    // The dispatcher gave this publication up: no executor had recorded a start.
    expect(
      await redisScripts(p.producer).withdrawCall(
        [p.keys.results(run.runId), p.keys.runCalls(run.runId), p.keys.runStarts(run.runId)],
        [call.toolCallId, publication, 60],
      ),
    ).toEqual(['withdrawn']);
    const q = isolatedQueue();
    const queue = new Queue<ToolCallJob>(q.name, { connection: p.producer, prefix: q.prefix });
    extra.push({ close: () => queue.close() });
    const data: ToolCallJob = {
      v: WIRE_VERSION,
      run_id: run.runId,
      trace_id: run.runId,
      agent: run.agent,
      tool_call_id: call.toolCallId,
      name: call.name,
      arguments: call.arguments,
      deadline: Date.now() + 10_000,
      reply_to: replyTo,
      enqueued_at: publication,
    };
    const jobId = toolJobId(run.runId, call.toolCallId);
    await queue.add(call.name, data, { jobId, removeOnComplete: true });
    await isolatedExecutor();
    await waitFor(async () => (await queue.getJobState(jobId)) === 'unknown', 10_000, 'the job to be done');
    expect(await p.redis.hget(p.keys.results(run.runId), call.toolCallId)).toBeNull();
    expect(await p.redis.llen(replyTo)).toBe(0);
    expect(await p.redis.hget(p.keys.runCalls(run.runId), callStartField(call.toolCallId))).toBe(
      `withdrawn:${publication}`,
    );
    // A later publication of the same call runs.
    await queue.add(call.name, { ...data, enqueued_at: publication + 1 }, { jobId, removeOnComplete: true });
    const reply = await waitFor(async () => (await p.redis.rpop(replyTo)) ?? false, 10_000, 'the reply');
    expect(reply).toMatch(/"echo":"late"/);
  }, 30_000);
});
