import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Scenario } from '@agent-reach/llm-sim';
import { startLoopHarness } from './helpers/loop.js';

/** The seeds' stress scenario: many multi-step tasks at once, with a noisy model endpoint. */
const noisyFiveSteps: Scenario = {
  name: 'noisy-five-steps',
  plan: ['weather in 上海', 'weather in 北京', 'order status', 'echo', 'write the report'],
  noise: {
    seed: 11,
    rate_limit: 0.05,
    server_error: 0.05,
    malformed_arguments: 0.05,
    hallucinated_tool: 0.05,
  },
  turns: [
    { tool_calls: [{ name: 'query_weather', arguments: { city: '上海' } }] },
    { tool_calls: [{ name: 'query_weather', arguments: { city: '北京' } }] },
    {
      tool_calls: [
        { name: 'query_order_status', arguments: { order_id: 'ORD-100001', include_history: true } },
      ],
    },
    { tool_calls: [{ name: 'noop', arguments: { value: '{{ user }}' } }] },
    {
      tool_calls: [
        {
          name: 'write_markdown_file',
          arguments: {
            path: 'acceptance/report.md',
            content: '# Report\n{{ results.query_weather.content.summary ?? "n/a" }}',
          },
        },
      ],
    },
    { content: 'All five steps done.' },
  ],
};

describe('acceptance: 100 five-step tasks with scripted noise', () => {
  let h: Awaited<ReturnType<typeof startLoopHarness>>;
  beforeAll(async () => {
    h = await startLoopHarness();
  });
  afterAll(async () => h.close());

  it('completes at least 98 of 100 concurrent runs, none past its limits', async () => {
    const maxIterations = 10;
    const tokenBudget = 200_000;
    const runs = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        h.run(noisyFiveSteps, {
          input: `task #${i}: check two cities, one order, then write the report`,
          limits: { maxIterations, tokenBudget },
        }),
      ),
    );
    const outcomes = runs.map((r) => r.outcome);
    const succeeded = outcomes.filter((o) => o.status === 'succeeded').length;
    expect(succeeded).toBeGreaterThanOrEqual(98);
    for (const o of outcomes) {
      expect(o.iterations).toBeLessThanOrEqual(maxIterations);
      expect(o.usage.total_tokens).toBeLessThan(tokenBudget);
    }
    // The noise really happened: faults were injected and the platform absorbed them.
    const faults = h.sim.requests.flatMap((r) => r.faults ?? []).map((f) => f.type);
    expect(faults).toContain('rate_limit');
    expect(faults).toContain('server_error');
    expect(faults).toContain('malformed_arguments');
    expect(faults).toContain('hallucinated_tool');
    // Every simulated request was valid: the simulator answered no 400.
    expect(h.sim.requests.filter((r) => r.status === 400)).toHaveLength(0);
  }, 120_000);
});
