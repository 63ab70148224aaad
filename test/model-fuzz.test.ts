import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateChatRequest } from '@agent-reach/llm-sim';
import type { RunState } from '@agent-reach/scheduler';
import { startLoopHarness } from './helpers/loop.js';
import { startApiHarness } from './helpers/api.js';
import { ROOT } from './helpers/processes.js';
import { waitFor } from './helpers/redis.js';

const FUZZ_AGENTS = path.join(ROOT, 'test/fixtures/fuzz-agents.yaml');
const FINAL = ['succeeded', 'not_converged', 'failed', 'cancelled'];
const ID = /^[A-Za-z0-9_-]{1,64}$/;

/** Problems of a stored history: not a valid conversation for the provider, or call ids not unique. */
function historyProblems(messages: RunState['messages']): string[] {
  const problems: string[] = [];
  const checked = validateChatRequest({
    model: 'x',
    messages: [{ role: 'system', content: 's' }, ...messages],
  });
  if (!checked.ok) problems.push(JSON.stringify(checked.error.body));
  const ids = messages.flatMap((m) =>
    m.role === 'assistant' ? (m.tool_calls ?? []).map((c) => (c as { id: string }).id) : [],
  );
  if (new Set(ids).size !== ids.length) problems.push(`duplicate call ids: ${ids.join(',')}`);
  const bad = ids.filter((id) => !ID.test(id));
  if (bad.length > 0) problems.push(`invalid call ids: ${bad.join(',')}`);
  return problems;
}

describe('random model answers: every run ends within its deadline with a valid history', () => {
  let h: Awaited<ReturnType<typeof startLoopHarness>>;
  beforeAll(async () => {
    h = await startLoopHarness({ AGENTS_FILE: FUZZ_AGENTS });
  });
  afterAll(async () => h.close());

  it('ends 48 runs against random answers (slow answers included) by their deadline', async () => {
    const deadlineMs = 4000;
    const runs = Array.from({ length: 48 }, async (_, i) => {
      const started = Date.now();
      const { outcome, state } = await h.run(
        {
          name: `fuzz-${i % 4}`,
          random: { seed: i % 4, bad_id: 0.4, max_calls: 5 },
          ...(i % 4 === 3 ? { latency_ms: 700 } : {}),
          turns: [],
        },
        { agent: 'fuzz_agent', input: `fuzz run ${i}`, deadlineMs, limits: { planning: i % 2 === 0 } },
      );
      return { i, outcome, state, elapsed: Date.now() - started };
    });
    const results = await Promise.all(runs);
    const late = results.filter((r) => r.elapsed > deadlineMs + 2000).map((r) => [r.i, r.elapsed]);
    expect(late).toEqual([]);
    for (const r of results) {
      expect(FINAL).toContain(r.outcome.status);
      expect({ run: r.i, problems: historyProblems(r.state.messages) }).toEqual({ run: r.i, problems: [] });
      expect(new Set(r.outcome.steps.map((s) => s.tool_call_id)).size).toBe(r.outcome.steps.length);
    }
    // The answers really were varied: several outcomes, deadline stops among them.
    const reasons = new Set(results.map((r) => r.outcome.reason));
    expect(reasons.size).toBeGreaterThan(2);
    expect(reasons).toContain('deadline');
  });
});

describe('random model answers through a scheduler and its API', () => {
  it('keeps the scheduler up and every stored run readable and valid', async () => {
    const h = await startApiHarness({}, { AGENTS_FILE: FUZZ_AGENTS });
    try {
      h.sim.addScenario({ name: 'fuzz-api', random: { seed: 11, bad_id: 0.5, max_calls: 6 }, turns: [] });
      const ids = await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          h.control.start({ agent: 'fuzz_agent', input: `api fuzz ${i}`, model: 'fuzz-api' }),
        ),
      );
      await waitFor(
        async () => {
          const got = await Promise.all(ids.map((id) => h.control.get(id)));
          return got.every((g) => g && FINAL.includes(g.summary.status));
        },
        90_000,
        'every fuzzed run final',
      );
      for (const id of ids) {
        const res = await h.call('GET', `/v1/runs/${id}`);
        expect(res.status).toBe(200);
        const stored = (await h.control.get(id))?.state;
        expect({ id, problems: historyProblems(stored?.messages ?? []) }).toEqual({ id, problems: [] });
      }
      expect((await h.call('GET', '/healthz')).status).toBe(200);
    } finally {
      await h.close();
    }
  });
});
