import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRunsHarness } from './helpers/runs.js';

const AGENTS = `agents:
  - name: frugal
    tools: [noop, slow]
    max_tokens: 100
  - name: hasty
    tools: [noop, slow]
    max_wall_time_ms: 1500
  - name: roomy
    tools: [noop, slow]
`;

describe(
  "an agent's budgets from the agents file end its runs with a clear outcome",
  { timeout: 60_000 },
  () => {
    let h: Awaited<ReturnType<typeof startRunsHarness>>;
    let dir: string;
    beforeAll(async () => {
      dir = await mkdtemp(path.join(tmpdir(), 'budgets-'));
      const file = path.join(dir, 'agents.yaml');
      await writeFile(file, AGENTS);
      h = await startRunsHarness({ AGENTS_FILE: file, RUN_DEADLINE_MS: '60000' });
      h.sim.addScenario({
        name: 'chatty',
        turns: [
          { tool_calls: [{ name: 'noop', arguments: { value: 'x'.repeat(400) } }] },
          { tool_calls: [{ name: 'noop', arguments: { value: 'y'.repeat(400) } }] },
          { content: 'done' },
        ],
      });
      h.sim.addScenario({
        name: 'sleepy',
        turns: [{ tool_calls: [{ name: 'slow', arguments: { ms: 4000 } }] }, { content: 'rested' }],
      });
    });
    afterAll(async () => {
      await h?.close();
      await rm(dir, { recursive: true, force: true });
    });

    it('stops a run of an agent over its max_tokens with token_budget, naming the budget', async () => {
      const runId = await h.control.start({ agent: 'frugal', input: 'talk a lot', model: 'chatty' });
      const outcome = await h.control.wait(runId, 20_000);
      expect(outcome).toMatchObject({ status: 'not_converged', reason: 'token_budget' });
      expect(outcome.report).toMatch(/^used \d+ tokens, over the run budget of 100$/);
    });

    it('stops a run of an agent past its max_wall_time_ms with deadline, without waiting for the slow call', async () => {
      const runId = await h.control.start({ agent: 'hasty', input: 'sleep', model: 'sleepy' });
      const outcome = await h.control.wait(runId, 20_000);
      expect(outcome).toMatchObject({ status: 'not_converged', reason: 'deadline' });
      const run = await h.control.get(runId);
      const state = run?.state;
      // The budget counts from the run's start; created_at is when it was queued, a moment earlier.
      const budget = state ? state.deadlineAt - state.createdAt : 0;
      expect(budget).toBeGreaterThanOrEqual(1500);
      expect(budget).toBeLessThan(60_000); // not the environment's default
    });

    it('gives an agent without budgets the environment defaults', async () => {
      const runId = await h.control.start({ agent: 'roomy', input: 'talk a lot', model: 'chatty' });
      const outcome = await h.control.wait(runId, 20_000);
      expect(outcome).toMatchObject({ status: 'succeeded', answer: 'done' });
      const state = (await h.control.get(runId))?.state;
      const budget = state ? state.deadlineAt - state.createdAt : 0;
      expect(budget).toBeGreaterThanOrEqual(60_000);
      expect(budget).toBeLessThan(120_000);
    });
  },
);
