import { afterEach, describe, expect, it } from 'vitest';
import {
  runJob,
  runJobOptions,
  runRetryDelayMs,
  RUN_JOB_ATTEMPTS,
  RUN_JOB_BACKOFF_TYPE,
} from '@agent-reach/protocol';
import { startRunsHarness } from './helpers/runs.js';
import { waitFor } from './helpers/redis.js';

type Harness = Awaited<ReturnType<typeof startRunsHarness>>;

describe("a run job's retries after a checkpoint that could not be written", () => {
  it('backs off 1, 2, 4 and 8 s, then 10 s for every later retry, each shortened by up to a quarter at random', () => {
    const longest = (attempt: number) => runRetryDelayMs(attempt, () => 0);
    const shortest = (attempt: number) => runRetryDelayMs(attempt, () => 1);
    expect([1, 2, 3, 4, 5, 6, 20, 39].map(longest)).toEqual([
      1000, 2000, 4000, 8000, 10_000, 10_000, 10_000, 10_000,
    ]);
    expect([1, 2, 3, 4, 5, 39].map(shortest)).toEqual([750, 1500, 3000, 6000, 7500, 7500]);
    expect(runRetryDelayMs(5, () => 0.5)).toBe(8750);
  });

  it('gives a run job enough attempts to outlast four and a half minutes of Redis trouble, with the backoff the schedulers compute', () => {
    const options = runJobOptions('run_1');
    expect(options).toMatchObject({
      jobId: 'run_1',
      attempts: RUN_JOB_ATTEMPTS,
      backoff: { type: RUN_JOB_BACKOFF_TYPE },
    });
    // The least the retries can wait in all (every backoff at its shortest).
    let total = 0;
    for (let attempt = 1; attempt < RUN_JOB_ATTEMPTS; attempt += 1)
      total += runRetryDelayMs(attempt, () => 1);
    expect(total).toBeGreaterThanOrEqual(270_000);
  });
});

describe('a run whose checkpoint is refused resumes from its last good checkpoint after its backoff (real Redis, real BullMQ)', () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  /**
   * Starts a run whose second model answer is slow, and once its tool result is recorded takes the
   * stored step number one back, as if that write had been lost: the next checkpoint does not follow
   * the stored one and is refused, and the attempt fails. Returns the run's job once the run has ended.
   */
  const runWithRefusedCheckpoint = async (enqueue: (runId: string) => Promise<void>) => {
    h = await startRunsHarness();
    h.sim.addScenario({
      name: 'slow-second-turn',
      turns: [
        { tool_calls: [{ name: 'noop', arguments: { value: 'x' } }] },
        { content: 'done', fault: { type: 'latency', ms: 2000, times: 1 } },
      ],
    });
    const runId = `retry-${Date.now()}`;
    await enqueue(runId);
    await waitFor(
      async () => (await h!.control.events(runId)).some((e) => e.event.type === 'tool_result'),
      15_000,
      'the tool result to be checkpointed',
    );
    await h.redis.hincrby(h.keys.runMeta(runId), 'seq', -1);
    // The failed attempt waits out its backoff in the delayed set, with the delay BullMQ computed.
    const retryDelay = await waitFor(
      async () => {
        const queue = h!.control.queue;
        // Read while the job stays delayed: it is moved there and its delay set by one script.
        if ((await queue.getJobState(runId)) !== 'delayed') return undefined;
        const job = await queue.getJob(runId);
        return (await queue.getJobState(runId)) === 'delayed' ? job?.delay : undefined;
      },
      15_000,
      'the run job to wait for its retry',
    );
    const outcome = await h.control.wait(runId, 30_000);
    expect(outcome).toMatchObject({ status: 'succeeded', answer: 'done' });
    // The run's outcome is stored while its job is still active; BullMQ counts the attempt when it
    // moves the job to completed afterwards, so wait for that move before reading the counters.
    await waitFor(
      async () => (await h!.control.queue.getJobState(runId)) === 'completed',
      15_000,
      'the run job to be moved to completed',
    );
    const types = (await h.control.events(runId)).map((e) => e.event.type);
    expect(types.filter((t) => t === 'run_started')).toHaveLength(1);
    expect(types.filter((t) => t === 'run_finished')).toHaveLength(1);
    expect(types.filter((t) => t === 'tool_result')).toHaveLength(1);
    const job = (await h.control.queue.getJob(runId))!;
    // One failed attempt and the one that completed; retried through the backoff, not stalled-job recovery.
    expect(job.attemptsMade).toBe(2);
    expect(job.stalledCounter).toBe(0);
    expect((job.stacktrace ?? []).join('\n')).toMatch(
      /checkpoint failed: checkpoint of run .* does not follow the stored one/,
    );
    return { job, retryDelay };
  };

  it('retries a run job of today with the capped run backoff', async () => {
    const { job, retryDelay } = await runWithRefusedCheckpoint(async (runId) => {
      await h!.control.start({ runId, agent: 'test_agent', input: 'noop', model: 'slow-second-turn' });
    });
    expect(job.opts.backoff).toEqual({ type: RUN_JOB_BACKOFF_TYPE });
    expect(retryDelay).toBeGreaterThanOrEqual(750);
    expect(retryDelay).toBeLessThanOrEqual(1000);
  });

  it("still retries a run job queued with BullMQ's exponential backoff, as the previous release queued them", async () => {
    const { job, retryDelay } = await runWithRefusedCheckpoint(async (runId) => {
      await h!.control.queue.add(
        'run',
        runJob({ run_id: runId, agent: 'test_agent', input: 'noop', model: 'slow-second-turn' }),
        { jobId: runId, attempts: 8, backoff: { type: 'exponential', delay: 1000 } },
      );
    });
    expect(job.opts.backoff).toEqual({ type: 'exponential', delay: 1000 });
    expect(retryDelay).toBe(1000);
  });
});
