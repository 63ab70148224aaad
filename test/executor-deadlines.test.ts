import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handAddedJobs, seedRun } from './helpers/ledger.js';
import { startPlatform } from './helpers/platform.js';

describe("a call's deadline bounds everything the executor does with it", () => {
  let p: Awaited<ReturnType<typeof startPlatform>>;
  let jobs: ReturnType<typeof handAddedJobs>;
  beforeAll(async () => {
    p = await startPlatform({ BREAKER_FAILURE_THRESHOLD: '100' });
    jobs = handAddedJobs(p);
  });
  afterAll(async () => {
    await jobs.queue.close();
    await p.close();
  });

  /** A call recorded in a fresh run's ledger, published by hand with the given deadline. */
  const publish = async (name: string, args: object, deadline: number) => {
    const runId = `run-${randomUUID()}`;
    const call = { toolCallId: 'call_1', name, arguments: JSON.stringify(args) };
    await seedRun(p.producer, p.keys, { runId, agent: 'test_agent' }, [call]);
    await jobs.add({ runId, ...call, deadline });
    return runId;
  };

  it('answers a call picked up after its deadline as unavailable (retryable, not run), not as a timeout', async () => {
    const runId = await publish('counted_effect', {}, Date.now() - 1);
    const { result } = await jobs.reply();
    expect(result).toMatchObject({
      ok: false,
      attempts: 0,
      error: { kind: 'unavailable', retryable: true, message: expect.stringMatching(/not run/) },
    });
    expect(await p.redis.hgetall(`${p.prefix}:test:effects`)).toEqual({});
    // Nothing ran, so nothing is recorded: the run may still have it run.
    expect(await p.redis.hget(p.keys.results(runId), 'call_1')).toBeNull();
  });

  it('aborts a running handler at the job deadline although its own timeout is longer', async () => {
    const startedKey = `${p.prefix}:test:slow:started`;
    const before = Number(await p.redis.get(startedKey));
    // slow's timeout is 30 s; the job's deadline is much sooner.
    const runId = await publish('slow', { ms: 20_000 }, Date.now() + 800);
    const { result } = await jobs.reply(10);
    expect(result).toMatchObject({
      ok: false,
      attempts: 1,
      error: { kind: 'timeout', retryable: true, message: expect.stringMatching(/deadline/) },
    });
    expect(Number(await p.redis.get(startedKey))).toBe(before + 1);
    expect(Number(await p.redis.get(`${p.prefix}:test:slow:finished`))).toBe(0);
    expect(JSON.parse((await p.redis.hget(p.keys.results(runId), 'call_1'))!)).toMatchObject({
      error: { kind: 'timeout' },
    });
  });

  it('starts no retry that could not finish before the deadline', async () => {
    // flaky: timeout 5000 ms, 4 attempts, backoff 100 ms; a retry would need 5.1 s, only 2 s are left.
    await publish('flaky', { key: 'deadline', failures: 10 }, Date.now() + 2000);
    const { result } = await jobs.reply();
    expect(result).toMatchObject({ ok: false, attempts: 1, error: { kind: 'transient', retryable: true } });
    expect(await p.redis.llen(`${p.prefix}:test:flaky:deadline`)).toBe(1);
  });
});
