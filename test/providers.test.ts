import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLlmSim, type LlmSim, type Scenario } from '@agent-reach/llm-sim';
import { FULL_KEY, request } from './helpers/api.js';
import { runCli } from './helpers/cli.js';
import { writeAgentsFile } from './helpers/mcp.js';
import { startSchedulerChild, type Child } from './helpers/processes.js';
import { REDIS_URL, testRedis, waitFor } from './helpers/redis.js';

/** Answers of the first provider while it is down: every request a 503. */
const DOWN: Scenario = {
  name: 'answer',
  turns: [{ content: 'from a', fault: { type: 'server_error', status: 503, times: 1_000_000 } }],
};
const UP: Scenario = { name: 'answer', turns: [{ content: 'from a' }] };

/** Prices of the second provider's model, per million tokens. */
const PRICE = { input: 3, output: 15 };

describe('model providers: fallback, breakers, declared models, cost and limits', () => {
  const t = testRedis();
  let simA: LlmSim;
  let simB: LlmSim;
  let simC: LlmSim;
  let scheduler: Child;
  let api: string;
  let metricsUrl: string;

  beforeAll(async () => {
    simA = await startLlmSim({ scenarios: [DOWN] });
    simB = await startLlmSim({ scenarios: [{ name: 'answer', turns: [{ content: 'from b' }] }] });
    simC = await startLlmSim({
      scenarios: [
        { name: 'slow', latency_ms: 1500, turns: [{ content: 'slowly' }] },
        { name: 'metered', turns: [{ content: 'metered' }] },
      ],
    });
    const agentsFile = writeAgentsFile({
      agents: [
        { name: 'fallback_agent', tools: [], model: 'a/answer', fallback: ['b/answer'] },
        { name: 'single_agent', tools: [], model: 'single/slow' },
        { name: 'metered_agent', tools: [], model: 'metered/metered' },
      ],
    });
    const providers = {
      providers: [
        {
          name: 'a',
          base_url: simA.url,
          api_key_env: 'PROVIDER_A_KEY',
          max_retries: 0,
          breaker: { failures: 2, reset_ms: 5000 },
          models: ['answer'],
        },
        { name: 'b', base_url: simB.url, max_retries: 0, models: ['answer'] },
        { name: 'single', base_url: simC.url, concurrency: 1, models: ['slow'] },
        { name: 'metered', base_url: simC.url, rate: { max: 2, per: 'minute' }, models: ['metered'] },
      ],
      prices: { 'b/answer': PRICE },
    };
    writeFileSync(path.join(path.dirname(agentsFile), 'providers.yaml'), JSON.stringify(providers));
    scheduler = startSchedulerChild({
      REDIS_URL,
      AR_KEY_PREFIX: t.prefix,
      AGENTS_FILE: agentsFile,
      OPENAI_API_KEY: 'test',
      OPENAI_BASE_URL: simB.url,
      OPENAI_MODEL: 'answer',
      PROVIDER_A_KEY: 'key-of-a',
      SCHEDULER_METRICS_PORT: '0',
      API_KEYS: `tester:${FULL_KEY}`,
      API_PORT: '0',
      API_HOST: '127.0.0.1',
      LLM_TIMEOUT_MS: '10000',
    });
    const ready = await scheduler.ready;
    api = String(ready.apiUrl);
    metricsUrl = `http://127.0.0.1:${String(ready.metricsPort)}/metrics`;
  }, 60_000);

  afterAll(async () => {
    scheduler?.kill();
    await scheduler?.exited;
    await Promise.all([simA?.close(), simB?.close(), simC?.close()]);
    await t.cleanup();
  });

  const start = async (agent: string, extra: Record<string, unknown> = {}) => {
    const res = await request(api, 'POST', '/v1/runs', { body: { agent, input: 'say something', ...extra } });
    expect(res.status, res.text).toBe(201);
    return res.json.run_id as string;
  };
  const view = async (runId: string) => (await request(api, 'GET', `/v1/runs/${runId}`)).json;
  const ended = (runId: string) =>
    waitFor(
      async () => {
        const v = await view(runId);
        return ['succeeded', 'failed', 'not_converged', 'cancelled'].includes(v.status) ? v : undefined;
      },
      20_000,
      `run ${runId} to end`,
    );
  const metric = async (name: string, labels: string) => {
    const text = await (await fetch(metricsUrl)).text();
    const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(labels));
    return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
  };
  let priced: { run_id: string; cost: number; usage: { prompt_tokens: number; completion_tokens: number } };
  const answeredTurn = (v: { turns: Array<Record<string, unknown>> }) => v.turns[0]!;

  it('sends a turn whose provider fails to the next model of the fallback list and records which model answered', async () => {
    const run = await ended(await start('fallback_agent'));
    expect(run.status).toBe('succeeded');
    expect(run.answer).toBe('from b');
    const turn = answeredTurn(run);
    expect(turn.answered_by).toBe('b/answer');
    expect(turn.fallback).toEqual([
      { model: 'a/answer', reason: 'failed', message: expect.stringContaining('503') },
    ]);
    expect(simA.requests.length).toBe(1);
    expect(
      await metric('agent_reach_llm_fallbacks_total', 'from="a/answer",reason="failed",to="b/answer"'),
    ).toBe(1);
    expect(await metric('agent_reach_llm_turns_answered_total', 'provider="b",model="answer"')).toBe(1);
  });

  it('gives each run a cost from the price table of the model that answered, in the run, its turns and the metrics by key', async () => {
    const run = await ended(await start('fallback_agent'));
    const { prompt_tokens: p, completion_tokens: c } = run.usage;
    expect(p).toBeGreaterThan(0);
    const expected = (p * PRICE.input + c * PRICE.output) / 1_000_000;
    expect(run.cost).toBeCloseTo(expected, 12);
    expect(answeredTurn(run).cost).toBeCloseTo(expected, 12);
    expect(run.model_usage).toEqual([
      { model: 'b/answer', turns: 1, prompt_tokens: p, completion_tokens: c, cost: run.cost },
    ]);
    const counted = await metric(
      'agent_reach_llm_cost_total',
      'agent="fallback_agent",model="b/answer",key="tester"',
    );
    expect(counted).toBeGreaterThanOrEqual(run.cost);
    priced = run;
  });

  it('opens the breaker of a provider after its consecutive failures, so turns pass it over without asking it', async () => {
    // Two failures so far (one per earlier run): the breaker opened at the second.
    expect(await metric('agent_reach_llm_provider_breaker_state', 'provider="a"')).toBe(2);
    const asked = simA.requests.length;
    const run = await ended(await start('fallback_agent'));
    expect(run.answer).toBe('from b');
    expect(answeredTurn(run).fallback).toEqual([{ model: 'a/answer', reason: 'breaker_open' }]);
    expect(simA.requests.length).toBe(asked);
  });

  it('takes a recovered provider back: the breaker half-opens, its probe succeeds, the breaker closes and the provider answers again', async () => {
    simA.addScenario(UP);
    await waitFor(
      async () => (await metric('agent_reach_llm_provider_breaker_state', 'provider="a"')) === 1,
      10_000,
      'the breaker of provider a to half-open',
    );
    const run = await ended(await start('fallback_agent'));
    expect(run.answer).toBe('from a');
    expect(answeredTurn(run).answered_by).toBe('a/answer');
    expect(answeredTurn(run).fallback).toBeUndefined();
    expect(await metric('agent_reach_llm_provider_breaker_state', 'provider="a"')).toBe(0);
    expect(
      await metric('agent_reach_llm_provider_breaker_transitions_total', 'provider="a",to="closed"'),
    ).toBe(1);
  });

  it('lets a caller choose among declared models only, refusing another with a 400 that names the allowed ones', async () => {
    const refused = await request(api, 'POST', '/v1/runs', {
      body: { agent: 'fallback_agent', input: 'hi', model: 'c/answer' },
    });
    expect(refused.status).toBe(400);
    expect(refused.json.error.message).toContain('model "c/answer" is not allowed');
    for (const m of ['answer', 'a/answer', 'b/answer', 'single/slow', 'metered/metered'])
      expect(refused.json.error.message).toContain(m);
    const chosen = await ended(await start('fallback_agent', { model: 'b/answer' }));
    expect(chosen.answer).toBe('from b');
    expect(answeredTurn(chosen).answered_by).toBe('b/answer');
    expect(answeredTurn(chosen).fallback).toBeUndefined();
  });

  it("holds a provider's requests to its concurrency limit: the others wait for a slot instead of reaching it", async () => {
    const runs = await Promise.all([1, 2, 3].map(() => start('single_agent')));
    await waitFor(
      async () => (await metric('agent_reach_llm_provider_waiting', 'provider="single"')) === 2,
      10_000,
      'two requests waiting for the provider',
    );
    expect(simC.inFlight).toBe(1);
    for (const runId of runs) expect((await ended(runId)).answer).toBe('slowly');
    expect(simC.requests.filter((r) => r.scenario === 'slow')).toHaveLength(3);
  });

  it("holds a provider's requests to its rate limit: past it, a request waits for the window and never reaches the provider", async () => {
    const runs = await Promise.all([1, 2, 3].map(() => start('metered_agent')));
    await waitFor(
      async () => (await metric('agent_reach_llm_provider_waiting', 'provider="metered"')) === 1,
      10_000,
      'one request waiting for the rate window',
    );
    const views = await waitFor(async () => {
      const all = await Promise.all(runs.map(view));
      return all.filter((v) => v.status === 'succeeded').length === 2 ? all : undefined;
    });
    const waiting = views.find((v) => v.status !== 'succeeded')!.run_id as string;
    // Not ended: its model request waits in this scheduler (its first checkpoint comes after it).
    expect(['queued', 'running']).toContain((await view(waiting)).status);
    expect(await metric('agent_reach_llm_provider_waiting', 'provider="metered"')).toBe(1);
    expect(simC.requests.filter((r) => r.scenario === 'metered')).toHaveLength(2);
    expect((await request(api, 'POST', `/v1/runs/${waiting}/cancel`)).status).toBe(202);
    expect((await ended(waiting)).status).toBe('cancelled');
    expect(simC.requests.filter((r) => r.scenario === 'metered')).toHaveLength(2);
  });

  it('shows the cost and the tokens per model of a run in agent-reach runs show', async () => {
    const { prompt_tokens: p, completion_tokens: c } = priced.usage;
    const shown = await runCli({ REDIS_URL, AR_KEY_PREFIX: t.prefix }, ['runs', 'show', priced.run_id]);
    expect(shown.code, shown.stderr).toBe(0);
    const money = String(Number(priced.cost.toPrecision(6)));
    expect(shown.stdout).toContain(`model b/answer: 1 turns, ${p}+${c} tokens, cost ${money}`);
    expect(shown.stdout).toContain(`cost: ${money}`);
    expect(shown.stdout).toContain('answered by b/answer (passed over: a/answer failed)');
  });
});
