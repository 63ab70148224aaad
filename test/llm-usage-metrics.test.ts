import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FULL_KEY, request } from './helpers/api.js';
import { ofType } from './helpers/agent-tools.js';
import { writeAgentsFile } from './helpers/mcp.js';
import { startRunsHarness } from './helpers/runs.js';

/** Prices of the metered provider's models, per million tokens. */
const PRICE = { input: 3, output: 15 };

/**
 * An agent whose multi-step requests are planned and whose input a guardrail agent judges, on priced
 * models of the default provider (llm-sim): three kinds of model request, all charged to the run.
 */
function meteredFleet(): Record<string, string> {
  const agentsFile = writeAgentsFile({
    agents: [
      {
        name: 'planner',
        tools: ['query_weather', 'write_markdown_file'],
        model: 'plan-run',
        guardrails: { input: [{ name: 'judged', agent: 'judge' }] },
      },
      { name: 'judge', tools: [], model: 'verdict' },
    ],
  });
  // A providers file of prices only prices the default provider's models.
  writeFileSync(
    path.join(path.dirname(agentsFile), 'providers.yaml'),
    JSON.stringify({ prices: { 'default/plan-run': PRICE, 'default/verdict': PRICE } }),
  );
  return {
    AGENTS_FILE: agentsFile,
    ALLOWED_MODELS: 'echo,plan-run,verdict',
    API_KEYS: `tester:${FULL_KEY}`,
    API_PORT: '0',
    API_HOST: '127.0.0.1',
  };
}

describe("a run's model requests in the metrics (real scheduler, llm-sim, /metrics)", () => {
  let h: Awaited<ReturnType<typeof startRunsHarness>> | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it("counts and prices a run's plan and its guardrail agent's verdict in the token and cost metrics as the run's usage does", async () => {
    h = await startRunsHarness(meteredFleet());
    h.sim.addScenario({
      name: 'plan-run',
      plan: ['look up the weather', 'write the file'],
      turns: [{ content: 'planned and done' }],
    });
    h.sim.addScenario({ name: 'verdict', turns: [{ content: '{"tripped": false, "reason": "fine"}' }] });
    const scheduler = h.schedulers[0]!;
    const api = scheduler.apiUrl!.replace('://0.0.0.0:', '://127.0.0.1:');

    const started = await request(api, 'POST', '/v1/runs', {
      body: { agent: 'planner', input: 'check the weather in 上海 and 北京, then write the plan to a file' },
    });
    expect(started.status, started.text).toBe(201);
    const runId = started.json.run_id as string;
    expect(await h.control.wait(runId, 30_000)).toMatchObject({
      status: 'succeeded',
      answer: 'planned and done',
    });
    const run = (await request(api, 'GET', `/v1/runs/${runId}`)).json;
    const stored = await h.control.events(runId);
    // Three requests: the guardrail agent's verdict, the plan, the one turn.
    expect(ofType(stored, 'llm_usage').map((e) => [e.purpose, e.answered_by])).toEqual([
      ['guardrail', 'default/verdict'],
      ['plan', 'default/plan-run'],
    ]);
    expect(ofType(stored, 'llm_request')).toHaveLength(1);
    expect(run.model_usage.map((u: { model: string; turns: number }) => [u.model, u.turns])).toEqual([
      ['default/verdict', 1],
      ['default/plan-run', 2],
    ]);

    const text = await (await fetch(`http://127.0.0.1:${scheduler.metricsPort}/metrics`)).text();
    /** The sum of a counter's series that carry every label given. */
    const sum = (name: string, ...labels: string[]) =>
      text
        .split('\n')
        .filter((l) => l.startsWith(`${name}{`) && labels.every((label) => l.includes(label)))
        .reduce((total, l) => total + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
    expect(sum('agent_reach_llm_tokens_total', 'kind="prompt"', 'agent="planner"')).toBe(
      run.usage.prompt_tokens,
    );
    expect(sum('agent_reach_llm_tokens_total', 'kind="completion"', 'agent="planner"')).toBe(
      run.usage.completion_tokens,
    );
    expect(run.cost).toBeGreaterThan(0);
    expect(sum('agent_reach_llm_cost_total', 'agent="planner"')).toBeCloseTo(run.cost, 12);
    for (const u of run.model_usage as Array<{ model: string; turns: number; cost: number }>) {
      expect(sum('agent_reach_llm_cost_total', `model="${u.model}",key="tester"`)).toBeCloseTo(u.cost, 12);
      const [provider, model] = u.model.split('/');
      expect(sum('agent_reach_llm_turns_answered_total', `provider="${provider}",model="${model}"`)).toBe(
        u.turns,
      );
    }
  });
});
