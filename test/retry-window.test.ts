import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolResult } from '@agent-reach/protocol';
import { constants } from '@agent-reach/shared';
import { callWindowMs } from '@agent-reach/scheduler/internal';
import { seedRun } from './helpers/ledger.js';
import { startPlatform } from './helpers/platform.js';

describe("a tool call's retry window is at most 20% of its run's remaining time", () => {
  it('caps the worst case at a fifth of the time left, but always leaves one attempt', () => {
    expect(constants.RETRY_WINDOW_SHARE_OF_RUN).toBe(0.2);
    // 10 minutes left: a fifth is 2 minutes, far above the worst case.
    expect(callWindowMs({ worstCaseMs: 25_600, attemptMs: 5000, runRemainingMs: 600_000 })).toBe(25_600);
    // 60 s left: 12 s, less than the worst case.
    expect(callWindowMs({ worstCaseMs: 25_600, attemptMs: 5000, runRemainingMs: 60_000 })).toBe(12_000);
    // 10 s left: a fifth (2 s) is less than one attempt, which the call still gets.
    expect(callWindowMs({ worstCaseMs: 25_600, attemptMs: 5000, runRemainingMs: 10_000 })).toBe(5000);
    // 3 s left: one attempt, cut at the run's end.
    expect(callWindowMs({ worstCaseMs: 25_600, attemptMs: 5000, runRemainingMs: 3000 })).toBe(3000);
    expect(callWindowMs({ worstCaseMs: 25_600, attemptMs: 5000 })).toBe(25_600);
  });

  describe('through a real executor', () => {
    let p: Awaited<ReturnType<typeof startPlatform>>;
    beforeAll(async () => {
      p = await startPlatform({ BREAKER_FAILURE_THRESHOLD: '100' });
    });
    afterAll(async () => p.close());

    /** `flaky` (4 attempts, 100 ms linear backoff, 5 s timeout) failing 3 times, in a run with `leftMs` left. */
    const flakyWith = async (leftMs: number): Promise<ToolResult> => {
      const runId = `run-${randomUUID()}`;
      const call = {
        toolCallId: 'call_1',
        name: 'flaky',
        arguments: JSON.stringify({ key: runId, failures: 3 }),
      };
      await seedRun(p.producer, p.keys, { runId, agent: 'test_agent' }, [call]);
      const [result] = await p.dispatcher.dispatch(
        { runId, traceId: runId, agent: 'test_agent', deadlineAt: Date.now() + leftMs },
        [call],
      );
      return result as ToolResult;
    };

    it('retries a transient failure to success when a fifth of the run left holds every retry', async () => {
      const result = await flakyWith(10 * 60_000);
      expect(result).toMatchObject({ ok: true, attempts: 4 });
    });

    it('does not retry when a fifth of the run left holds only the first attempt', async () => {
      // 25 s left: a fifth is 5 s, one attempt's timeout; a retry would need its backoff on top.
      const result = await flakyWith(25_000);
      expect(result).toMatchObject({ ok: false, attempts: 1, error: { kind: 'transient' } });
    });
  });
});
