import { afterAll, describe, expect, it } from 'vitest';
import { cleanupAll, formatReport, runFaultScenario, SCENARIOS } from './helpers/faults.js';

/**
 * Fault injection with real processes: 2 schedulers and 2 executors as child processes on a private
 * redis-server, llm-sim as the model, runs of 6 tool calls each. Every scenario injects one fault
 * mid-load and then checks every run's records and what the model was sent (see
 * test/helpers/fault-check.ts). `pnpm faults` runs the same scenarios with hundreds of runs each.
 * This file alone: `pnpm exec vitest run --dir test faults.test` (llm-sim has a faults.test.ts of its own).
 */
const RUNS = 40;

describe('fault injection: every run ends final, started and finished once, with a valid history; the model never sees two results for a call, nor a timeout of a call that never ran', () => {
  afterAll(cleanupAll);

  for (const scenario of SCENARIOS) {
    it(`every run invariant holds when ${scenario.title}`, async () => {
      const report = await runFaultScenario(scenario, { runs: RUNS, settleMs: 45_000, quietMs: 15_000 });
      const text = formatReport(report);
      console.log(text);
      expect(report.counts, text).toEqual({});
    }, 240_000);
  }
});
