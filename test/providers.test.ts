import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDev, type DevStack } from '@agent-reach/cli';
import { startLlmSim, type LlmSim, type Scenario } from '@agent-reach/llm-sim';
import { FULL_KEY, request } from './helpers/api.js';
import { runCli } from './helpers/cli.js';
import { startLoopHarness } from './helpers/loop.js';
import { writeAgentsFile } from './helpers/mcp.js';
import { atConfigVersion, ROOT, startSchedulerChild, type Child } from './helpers/processes.js';
import { REDIS_URL, testRedis, waitFor } from './helpers/redis.js';

/** The inspector's own functions (plain browser modules, untyped): a routed turn's line and waterfall spans. */
type UiEvent = { type: string } & Record<string, unknown>;
const UI = path.join(ROOT, 'packages/scheduler/ui');
const inspector = async () => ({
  ...((await import(path.join(UI, 'model-route.js'))) as { routeLine(e: UiEvent): string }),
  ...((await import(path.join(UI, 'waterfall.js'))) as {
    spans(events: UiEvent[], end: number): Array<{ kind: string; label: string; note: string }>;
  }),
});

/** Answers of the first provider while it is down: every request a 503. */
const DOWN: Scenario = {
  name: 'answer',
  turns: [{ content: 'from a', fault: { type: 'server_error', status: 503, times: 1_000_000 } }],
};
const UP: Scenario = { name: 'answer', turns: [{ content: 'from a' }] };

/** Prices of the second provider's model, per million tokens. */
const PRICE = { input: 3, output: 15 };

/** A scheduler child with the given agents, a providers file beside them, and the given environment. */
async function startWithProviders(
  prefix: string,
  agentsFile: string,
  providers: unknown,
  env: Record<string, string>,
): Promise<{ scheduler: Child; api: string; metricsUrl: string; providersFile: string }> {
  const providersFile = path.join(path.dirname(agentsFile), 'providers.yaml');
  writeFileSync(providersFile, JSON.stringify(providers));
  const scheduler = startSchedulerChild({
    REDIS_URL,
    AR_KEY_PREFIX: prefix,
    AGENTS_FILE: agentsFile,
    OPENAI_API_KEY: 'test',
    SCHEDULER_METRICS_PORT: '0',
    API_KEYS: `tester:${FULL_KEY}`,
    API_PORT: '0',
    API_HOST: '127.0.0.1',
    LLM_TIMEOUT_MS: '10000',
    ...env,
  });
  const ready = await scheduler.ready;
  return {
    scheduler,
    api: String(ready.apiUrl),
    metricsUrl: `http://127.0.0.1:${String(ready.metricsPort)}/metrics`,
    providersFile,
  };
}

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
    ({ scheduler, api, metricsUrl } = await startWithProviders(t.prefix, agentsFile, providers, {
      OPENAI_BASE_URL: simB.url,
      OPENAI_MODEL: 'answer',
      PROVIDER_A_KEY: 'key-of-a',
    }));
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
    expect(answeredTurn(run).fallback).toEqual([
      { model: 'a/answer', reason: 'breaker_open', message: expect.stringContaining('provider "a"') },
    ]);
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
    expect(shown.stdout).toContain('answered by b/answer (passed over: a/answer failed: provider "a"');
  });
});

/** A provider that refuses every key, as OpenAI answers one: 401 `invalid_api_key`. Counts its requests. */
async function startRefusingProvider(): Promise<{
  url: string;
  requests: () => number;
  close(): Promise<void>;
}> {
  let requests = 0;
  const server: Server = createServer((req, res) => {
    requests += 1;
    req.resume();
    res.writeHead(401, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        error: {
          message: 'Incorrect API key provided: wrong-key.',
          type: 'invalid_request_error',
          param: null,
          code: 'invalid_api_key',
        },
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests: () => requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** The schema of the structured agent's answer. */
const NOTE_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['note'],
  properties: { note: { type: 'string' } },
};

describe('model providers that cannot answer: a killed one, a refused key, a dead URL, a hung one', () => {
  const t = testRedis();
  let good: LlmSim;
  let hung: LlmSim;
  let deadUrl: string;
  let refusing: Awaited<ReturnType<typeof startRefusingProvider>>;
  let scheduler: Child;
  let api: string;
  let metricsUrl: string;

  beforeAll(async () => {
    good = await startLlmSim({
      scenarios: [
        { name: 'm', turns: [{ content: 'from good', repeat: true }] },
        { name: 'so', turns: [{ content: '{"note": "structured"}', repeat: true }] },
        // A 429 whose Retry-After is short, once; and one whose Retry-After is long, every time.
        {
          name: 'short429',
          turns: [
            { content: 'after a short wait', fault: { type: 'rate_limit', retry_after_s: 0.2, times: 1 } },
          ],
        },
        {
          name: 'long429',
          turns: [{ content: 'never', fault: { type: 'rate_limit', retry_after_s: 30, times: 1_000_000 } }],
        },
      ],
    });
    hung = await startLlmSim({
      scenarios: [{ name: 'm', turns: [{ content: 'never', fault: { type: 'hang', times: 1_000_000 } }] }],
    });
    // A provider that was killed: its port refuses connections.
    const killed = await startLlmSim({ scenarios: [] });
    deadUrl = killed.url;
    await killed.close();
    refusing = await startRefusingProvider();
    const agentsFile = writeAgentsFile({
      agents: [
        { name: 'killed_agent', tools: [], model: 'killed/m', fallback: ['good/m'] },
        { name: 'key_agent', tools: [], model: 'badkey/m', fallback: ['good/m'] },
        { name: 'lone_key_agent', tools: [], model: 'badkey/m' },
        { name: 'dns_agent', tools: [], model: 'nowhere/m', fallback: ['good/m'] },
        { name: 'hung_agent', tools: [], model: 'hung/m', fallback: ['good/m'] },
        { name: 'lone_killed_agent', tools: [], model: 'lone/m' },
        {
          name: 'schema_agent',
          tools: [],
          model: 'killed/m',
          fallback: ['good/so'],
          output_schema: NOTE_SCHEMA,
        },
        { name: 'short_429_agent', tools: [], model: 'limited/short429', fallback: ['good/m'] },
        { name: 'long_429_agent', tools: [], model: 'limited/long429', fallback: ['good/m'] },
      ],
    });
    const providers = {
      providers: [
        // Four retries each, as by default: none of them may be spent on what a retry cannot cure.
        { name: 'killed', base_url: deadUrl, max_retries: 4, breaker: { failures: 100 }, models: ['m'] },
        {
          name: 'badkey',
          base_url: refusing.url,
          api_key_env: 'BADKEY_API_KEY',
          max_retries: 4,
          breaker: { failures: 100 },
          models: ['m'],
        },
        {
          name: 'nowhere',
          base_url: 'https://no-such-host.invalid/v1?token=hidden',
          max_retries: 4,
          models: ['m'],
        },
        { name: 'hung', base_url: hung.url, timeout_ms: 300, max_retries: 4, models: ['m'] },
        { name: 'lone', base_url: deadUrl, max_retries: 2, breaker: { failures: 100 }, models: ['m'] },
        { name: 'good', base_url: good.url, max_retries: 0, models: ['m', 'so'] },
        { name: 'limited', base_url: good.url, max_retries: 4, models: ['short429', 'long429'] },
      ],
    };
    ({ scheduler, api, metricsUrl } = await startWithProviders(t.prefix, agentsFile, providers, {
      OPENAI_BASE_URL: good.url,
      OPENAI_MODEL: 'm',
      BADKEY_API_KEY: 'wrong-key',
    }));
  }, 60_000);

  afterAll(async () => {
    scheduler?.kill();
    await scheduler?.exited;
    await Promise.all([good?.close(), hung?.close(), refusing?.close()]);
    await t.cleanup();
  });

  const finished = async (agent: string) => {
    const res = await request(api, 'POST', '/v1/runs', { body: { agent, input: 'say something' } });
    expect(res.status, res.text).toBe(201);
    const runId = res.json.run_id as string;
    return waitFor(
      async () => {
        const v = (await request(api, 'GET', `/v1/runs/${runId}`)).json;
        return ['succeeded', 'failed', 'not_converged', 'cancelled'].includes(v.status) ? v : undefined;
      },
      30_000,
      `run ${runId} to end`,
    );
  };
  const errors = async (provider: string, kind: string) => {
    const text = await (await fetch(metricsUrl)).text();
    const line = text
      .split('\n')
      .find(
        (l) =>
          l.startsWith('agent_reach_llm_provider_errors_total{') &&
          l.includes(`provider="${provider}"`) &&
          l.includes(`kind="${kind}"`),
      );
    return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
  };

  it('moves a turn from a killed provider to its fallback after one refused connection, naming the provider and its URL', async () => {
    const run = await finished('killed_agent');
    expect(run.status).toBe('succeeded');
    expect(run.answer).toBe('from good');
    const [turn] = run.turns;
    expect(turn.answered_by).toBe('good/m');
    expect(turn.fallback).toHaveLength(1);
    expect(turn.fallback[0]).toMatchObject({ model: 'killed/m', reason: 'failed' });
    expect(turn.fallback[0].message).toContain(`provider "killed" (model m, ${deadUrl})`);
    expect(turn.fallback[0].message).toContain('connection refused');
    expect(await errors('killed', 'connection_refused')).toBe(1);
  });

  it('moves a turn whose provider refuses its key to the fallback at once, naming the key variable, and counts the refusal', async () => {
    const before = refusing.requests();
    const run = await finished('key_agent');
    expect(run.status).toBe('succeeded');
    expect(run.turns[0].answered_by).toBe('good/m');
    const message = run.turns[0].fallback[0].message as string;
    expect(message).toContain(`provider "badkey" (model m, ${refusing.url})`);
    expect(message).toContain('API key refused');
    expect(message).toContain('check the key in BADKEY_API_KEY');
    expect(message).not.toContain('wrong-key.'.repeat(2));
    expect(refusing.requests() - before).toBe(1);
    const text = await (await fetch(metricsUrl)).text();
    expect(text).toMatch(/agent_reach_llm_provider_key_refused_total\{provider="badkey"\} [1-9]/);
  });

  it('fails a run whose only provider refuses its key after one request, with an error naming the provider, URL and key variable', async () => {
    const before = refusing.requests();
    const run = await finished('lone_key_agent');
    expect(run.status).toBe('failed');
    expect(run.reason).toBe('llm_error');
    expect(refusing.requests() - before).toBe(1);
    expect(run.report).toContain(`provider "badkey" (model m, ${refusing.url})`);
    expect(run.report).toContain('check the key in BADKEY_API_KEY');
  });

  it('moves a turn whose provider host does not resolve to the fallback at once, naming the URL without its secrets', async () => {
    const run = await finished('dns_agent');
    expect(run.status).toBe('succeeded');
    const message = run.turns[0].fallback[0].message as string;
    expect(message).toContain('provider "nowhere" (model m, https://no-such-host.invalid/v1)');
    expect(message).toContain('host name not found');
    expect(message).not.toContain('hidden');
    expect(await errors('nowhere', 'dns')).toBe(1);
  });

  it('gives a hung provider one timeout, not one per retry, before the fallback answers', async () => {
    const run = await finished('hung_agent');
    expect(run.status).toBe('succeeded');
    expect(run.turns[0].answered_by).toBe('good/m');
    expect(run.turns[0].fallback[0].message).toContain('timed out');
    expect(await errors('hung', 'timeout')).toBe(1);
  });

  it('waits out a short Retry-After at the same provider once, even with a fallback, and answers from there', async () => {
    const run = await finished('short_429_agent');
    expect(run.status).toBe('succeeded');
    expect(run.answer).toBe('after a short wait');
    expect(run.turns[0].answered_by).toBe('limited/short429');
    expect(good.requests.filter((r) => r.scenario === 'short429')).toHaveLength(2);
  });

  it('moves a turn to its fallback at once when the Retry-After of a 429 is longer than a fallback may wait', async () => {
    const run = await finished('long_429_agent');
    expect(run.status).toBe('succeeded');
    expect(run.turns[0].answered_by).toBe('good/m');
    expect(run.turns[0].fallback[0].message).toContain('rate limited');
    expect(good.requests.filter((r) => r.scenario === 'long429')).toHaveLength(1);
  });

  it('still retries a refused connection up to max_retries when the provider is the turn’s only model', async () => {
    const run = await finished('lone_killed_agent');
    expect(run.status).toBe('failed');
    expect(run.report).toContain('provider "lone"');
    expect(run.report).toContain('after 3 attempts');
    expect(await errors('lone', 'connection_refused')).toBe(3);
  });

  it("shows in the inspector's timeline and waterfall which model answered each turn and each model passed over, with its reason", async () => {
    const run = await finished('key_agent');
    const res = await request(api, 'GET', `/v1/runs/${run.run_id as string}/events`);
    const events = res.text
      .split('\n')
      .filter((l) => l.startsWith('data: '))
      .map((l) => JSON.parse(l.slice(6)) as UiEvent);
    const { routeLine, spans } = await inspector();
    const turn = events.find((e) => e.type === 'llm_request')!;
    expect(routeLine(turn)).toBe('answered by good/m after badkey/m failed');
    const [span] = spans(events, Date.now()).filter((s) => s.kind === 'turn');
    expect(span!.label).toBe('Model turn 1 · good/m');
    expect(span!.note).toContain('after badkey/m failed');
    // The timeline of `runs show` says the same, with the reason's message.
    const shown = await runCli({ REDIS_URL, AR_KEY_PREFIX: t.prefix }, [
      'runs',
      'show',
      run.run_id as string,
    ]);
    expect(shown.stdout).toContain('answered by good/m (passed over: badkey/m failed: provider "badkey"');
  });

  it('sends the output schema as response_format on every turn of a routed run, to the fallback too', async () => {
    const asked = good.requests.length;
    const run = await finished('schema_agent');
    expect(run.status, run.report).toBe('succeeded');
    expect(run.output).toEqual({ note: 'structured' });
    const sent = good.requests.slice(asked).map((r) => r.body as { response_format?: unknown });
    expect(sent.length).toBeGreaterThan(0);
    for (const body of sent)
      expect(body.response_format).toMatchObject({
        type: 'json_schema',
        json_schema: { schema: expect.objectContaining({ required: ['note'] }) },
      });
  });
});

describe('the providers file from outside: config check, a scheduler that refuses to start, dev, prices only', () => {
  const t = testRedis();
  let sim: LlmSim;
  let dev: DevStack | undefined;
  let priced: Child | undefined;

  beforeAll(async () => {
    sim = await startLlmSim({ scenarios: [{ name: 'm', turns: [{ content: 'from m', repeat: true }] }] });
  });
  afterAll(async () => {
    priced?.kill();
    await priced?.exited;
    await dev?.close();
    await sim?.close();
    await t.cleanup();
  });

  /** An agents file whose agent names a model no provider declares, and a fallback no provider has. */
  const undeclared = () => {
    const agentsFile = writeAgentsFile({
      agents: [{ name: 'typo_agent', tools: [], model: 'local/mm', fallback: ['elsewhere/m'] }],
    });
    const providersFile = path.join(path.dirname(agentsFile), 'providers.yaml');
    writeFileSync(
      providersFile,
      JSON.stringify({ providers: [{ name: 'local', base_url: sim.url, models: ['m'] }] }),
    );
    return { agentsFile, providersFile };
  };

  it('has config check refuse an agent whose model or fallback is not declared, naming the file, the agent, the declared choices and where to declare it', async () => {
    const { agentsFile, providersFile } = undeclared();
    const checked = await runCli({ REDIS_URL, AGENTS_FILE: agentsFile, OPENAI_MODEL: 'm' }, [
      'config',
      'check',
    ]);
    expect(checked.code).not.toBe(0);
    const out = checked.stdout + checked.stderr;
    expect(out).toContain(
      `${agentsFile}: agent "typo_agent": model "local/mm" is not declared; declared: m, local/m`,
    );
    expect(out).toContain(`agent "typo_agent": fallback "elsewhere/m" is not declared`);
    expect(out).toContain(`declare it under a provider's models in ${providersFile}`);
  });

  it('lets a workflow node name a model the providers file declares, as a run may', async () => {
    const agentsFile = writeAgentsFile({ agents: [{ name: 'plain_agent', tools: [] }] });
    const dir = path.dirname(agentsFile);
    writeFileSync(
      path.join(dir, 'providers.yaml'),
      JSON.stringify({ providers: [{ name: 'local', base_url: sim.url, models: ['m'] }] }),
    );
    writeFileSync(
      path.join(dir, 'workflows.yaml'),
      JSON.stringify({
        workflows: [{ name: 'one', nodes: [{ id: 'a', agent: 'plain_agent', model: 'local/m' }] }],
      }),
    );
    const checked = await runCli({ REDIS_URL, AGENTS_FILE: agentsFile, OPENAI_MODEL: 'm' }, [
      'config',
      'check',
    ]);
    expect(checked.code, checked.stdout + checked.stderr).toBe(0);
  });

  it('has a scheduler that refuses such an agent say which file, agent and model, and how to declare it', async () => {
    const { agentsFile, providersFile } = undeclared();
    const child = startSchedulerChild({
      REDIS_URL,
      AR_KEY_PREFIX: t.prefix,
      AGENTS_FILE: agentsFile,
      OPENAI_API_KEY: 'test',
      OPENAI_BASE_URL: sim.url,
      OPENAI_MODEL: 'm',
      SCHEDULER_METRICS_PORT: '0',
    });
    expect(await child.exited).not.toBe(0);
    expect(child.output()).toContain(
      `${agentsFile}: agent "typo_agent": model "local/mm" is not declared; declared: m, local/m`,
    );
    expect(child.output()).toContain(providersFile);
  });

  it('starts agent-reach dev with a provider whose API key variable is set, and runs its agent there', async () => {
    const agentsFile = writeAgentsFile({ agents: [{ name: 'keyed_agent', tools: [], model: 'keyed/m' }] });
    writeFileSync(
      path.join(path.dirname(agentsFile), 'providers.yaml'),
      JSON.stringify({
        providers: [{ name: 'keyed', base_url: sim.url, api_key_env: 'KEYED_PROVIDER_KEY', models: ['m'] }],
      }),
    );
    dev = await startDev({
      REDIS_URL,
      AR_KEY_PREFIX: t.prefix,
      AGENTS_FILE: agentsFile,
      KEYED_PROVIDER_KEY: 'a-key',
      OPENAI_API_KEY: 'test',
      OPENAI_BASE_URL: sim.url,
      OPENAI_MODEL: 'm',
      API_PORT: '0',
      API_KEYS: `tester:${FULL_KEY}`,
    });
    const res = await request(dev.apiUrl, 'POST', '/v1/runs', {
      body: { agent: 'keyed_agent', input: 'hello' },
    });
    expect(res.status, res.text).toBe(201);
    const run = await waitFor(async () => {
      const v = (await request(dev!.apiUrl, 'GET', `/v1/runs/${res.json.run_id as string}`)).json;
      return v.status === 'succeeded' ? v : undefined;
    });
    expect(run.turns[0].answered_by).toBe('keyed/m');
    const asked = sim.requests.at(-1)!;
    expect(asked.body).toMatchObject({ model: 'm' });
  });

  it('treats a WORKFLOWS_FILE or PROVIDERS_FILE that does not exist as declaring nothing: config check warns, and passes', async () => {
    const agentsFile = writeAgentsFile({ agents: [{ name: 'plain_agent', tools: [] }] });
    const dir = path.dirname(agentsFile);
    const checked = await runCli(
      {
        REDIS_URL,
        AGENTS_FILE: agentsFile,
        WORKFLOWS_FILE: path.join(dir, 'later', 'workflows.yaml'),
        PROVIDERS_FILE: path.join(dir, 'later', 'providers.yaml'),
      },
      ['config', 'check'],
    );
    expect(checked.code, checked.stdout + checked.stderr).toBe(0);
    expect(checked.stdout).toContain(
      `warning: WORKFLOWS_FILE ${path.join(dir, 'later', 'workflows.yaml')} does not exist: no workflows until it is created`,
    );
    expect(checked.stdout).toContain(
      `warning: PROVIDERS_FILE ${path.join(dir, 'later', 'providers.yaml')} does not exist: only the default provider until it does`,
    );
  });

  it('starts a scheduler whose PROVIDERS_FILE does not exist, serving the default provider and saying so', async () => {
    const agentsFile = writeAgentsFile({ agents: [{ name: 'plain_agent', tools: [] }] });
    const missing = path.join(path.dirname(agentsFile), 'later', 'providers.yaml');
    const child = startSchedulerChild({
      REDIS_URL,
      AR_KEY_PREFIX: `${t.prefix}m`,
      AGENTS_FILE: agentsFile,
      PROVIDERS_FILE: missing,
      OPENAI_API_KEY: 'test',
      OPENAI_BASE_URL: sim.url,
      OPENAI_MODEL: 'm',
      SCHEDULER_METRICS_PORT: '0',
      API_KEYS: `tester:${FULL_KEY}`,
      API_PORT: '0',
      API_HOST: '127.0.0.1',
    });
    try {
      const ready = await child.ready;
      const res = await request(String(ready.apiUrl), 'POST', '/v1/runs', {
        body: { agent: 'plain_agent', input: 'hello' },
      });
      expect(res.status, res.text).toBe(201);
      const run = await waitFor(async () => {
        const v = (await request(String(ready.apiUrl), 'GET', `/v1/runs/${res.json.run_id as string}`)).json;
        return v.status === 'succeeded' ? v : undefined;
      });
      expect(run.answer).toBe('from m');
      expect(child.output()).toContain('PROVIDERS_FILE does not exist');
    } finally {
      child.kill();
      await child.exited;
    }
  });

  it("prices the default provider's model from a providers file that holds only prices", async () => {
    const agentsFile = writeAgentsFile({ agents: [{ name: 'plain_agent', tools: [] }] });
    const started = await startWithProviders(
      t.prefix,
      agentsFile,
      { prices: { 'default/m': PRICE } },
      { OPENAI_BASE_URL: sim.url, OPENAI_MODEL: 'm', AR_KEY_PREFIX: `${t.prefix}p` },
    );
    priced = started.scheduler;
    const res = await request(started.api, 'POST', '/v1/runs', {
      body: { agent: 'plain_agent', input: 'hello' },
    });
    expect(res.status, res.text).toBe(201);
    const run = await waitFor(async () => {
      const v = (await request(started.api, 'GET', `/v1/runs/${res.json.run_id as string}`)).json;
      return v.status === 'succeeded' ? v : undefined;
    });
    const { prompt_tokens: p, completion_tokens: c } = run.usage;
    expect(p).toBeGreaterThan(0);
    expect(run.cost).toBeCloseTo((p * PRICE.input + c * PRICE.output) / 1_000_000, 12);
    expect(run.model_usage).toEqual([
      { model: 'default/m', turns: 1, prompt_tokens: p, completion_tokens: c, cost: run.cost },
    ]);
  });
});

describe('every model request of a run is counted and priced', () => {
  let h: Awaited<ReturnType<typeof startLoopHarness>>;
  beforeAll(async () => {
    h = await startLoopHarness();
  });
  afterAll(async () => h?.close());

  it("counts the plan's tokens in the account of the model that answered it, as the run's usage counts them", async () => {
    const { outcome, events, state } = await h.run(
      { name: 'planned-usage', plan: ['fetch rows', 'summarize'], turns: [{ content: 'planned and done' }] },
      { input: 'fetch rows, then fetch more rows, then summarize them' },
    );
    expect(outcome).toMatchObject({ status: 'succeeded', answer: 'planned and done' });
    expect(events.some((e) => e.type === 'plan' && e.steps.length === 2)).toBe(true);
    const requests = h.sim.requests.filter((r) => r.scenario === 'planned-usage');
    expect(requests).toHaveLength(2);
    expect(state.modelUsage).toEqual({
      'default/planned-usage': {
        turns: 2,
        prompt_tokens: state.usage.prompt_tokens,
        completion_tokens: state.usage.completion_tokens,
      },
    });
  });
});

describe('the providers file applied live and versioned, as the agents file is', () => {
  const t = testRedis();
  let first: LlmSim;
  let second: LlmSim;
  let scheduler: Child;
  let api: string;
  let metricsUrl: string;
  let agentsFile: string;
  const cli = (args: string[]) =>
    runCli({ REDIS_URL, AR_KEY_PREFIX: t.prefix, AGENTS_FILE: agentsFile, OPENAI_MODEL: 'm' }, args);

  beforeAll(async () => {
    first = await startLlmSim({
      scenarios: [{ name: 'm', turns: [{ content: 'from first', repeat: true }] }],
    });
    second = await startLlmSim({
      scenarios: [{ name: 'm', turns: [{ content: 'from second', repeat: true }] }],
    });
    agentsFile = writeAgentsFile({ agents: [{ name: 'moving_agent', tools: [], model: 'first/m' }] });
    ({ scheduler, api, metricsUrl } = await startWithProviders(
      t.prefix,
      agentsFile,
      { providers: [{ name: 'first', base_url: first.url, models: ['m'] }] },
      { OPENAI_BASE_URL: first.url, OPENAI_MODEL: 'm' },
    ));
  }, 60_000);

  afterAll(async () => {
    scheduler?.kill();
    await scheduler?.exited;
    await Promise.all([first?.close(), second?.close()]);
    await t.cleanup();
  });

  const answer = async () => {
    const res = await request(api, 'POST', '/v1/runs', { body: { agent: 'moving_agent', input: 'hello' } });
    expect(res.status, res.text).toBe(201);
    return waitFor(async () => {
      const v = (await request(api, 'GET', `/v1/runs/${res.json.run_id as string}`)).json;
      return v.status === 'succeeded' ? v : undefined;
    });
  };

  it('refuses an apply whose agent names a model the new providers do not declare, naming the files and the agent', async () => {
    const dir = path.dirname(agentsFile);
    const providers = path.join(dir, 'providers-second.yaml');
    writeFileSync(
      providers,
      JSON.stringify({ providers: [{ name: 'second', base_url: second.url, models: ['m'] }] }),
    );
    const applied = await cli(['config', 'apply', agentsFile, '--providers', providers]);
    expect(applied.code).toBe(4);
    expect(applied.stderr).toContain(
      `${agentsFile}: agent "moving_agent": model "first/m" is not declared; declared: m, second/m; declare it under a provider's models in ${providers}`,
    );
    expect((await answer()).turns[0].answered_by).toBe('first/m');
  });

  it("has a scheduler refuse a version whose provider's key variable it lacks, keeping the version in force", async () => {
    const dir = path.dirname(agentsFile);
    const providers = path.join(dir, 'providers-keyed.yaml');
    writeFileSync(
      providers,
      JSON.stringify({
        providers: [
          { name: 'first', base_url: first.url, models: ['m'] },
          { name: 'keyed', base_url: second.url, api_key_env: 'KEY_THE_SCHEDULER_LACKS', models: ['m'] },
        ],
      }),
    );
    const applied = await cli(['config', 'apply', agentsFile, '--providers', providers]);
    expect(applied.code, applied.stderr).toBe(0);
    const version = Number(/published configuration version (\d+)/.exec(applied.stdout)?.[1]);
    await waitFor(
      () => scheduler.output().includes('published configuration refused'),
      15_000,
      'the scheduler to refuse the version',
    );
    expect(scheduler.output()).toContain('its API key variable KEY_THE_SCHEDULER_LACKS is not set');
    const text = await (await fetch(metricsUrl)).text();
    expect(/^agent_reach_config_version (\d+)$/m.exec(text)?.[1]).not.toBe(String(version));
    expect((await answer()).turns[0].answered_by).toBe('first/m');
  });

  it('serves the providers of an applied version without a restart, and keeps them in the version history', async () => {
    const dir = path.dirname(agentsFile);
    const providers = path.join(dir, 'providers-both.yaml');
    writeFileSync(
      providers,
      JSON.stringify({
        providers: [
          { name: 'first', base_url: first.url, models: ['m'] },
          { name: 'second', base_url: second.url, models: ['m'] },
        ],
        prices: { 'second/m': PRICE },
      }),
    );
    const moved = path.join(dir, 'agents-moved.yaml');
    writeFileSync(
      moved,
      JSON.stringify({ agents: [{ name: 'moving_agent', tools: [], model: 'second/m' }] }),
    );
    const applied = await cli(['config', 'apply', moved, '--providers', providers]);
    expect(applied.code, applied.stderr).toBe(0);
    expect(applied.stdout).toContain(`model providers: 2 (${providers})`);
    const version = Number(/published configuration version (\d+)/.exec(applied.stdout)?.[1]);
    await atConfigVersion([scheduler], version);
    const run = await answer();
    expect(run.answer).toBe('from second');
    expect(run.turns[0].answered_by).toBe('second/m');
    expect(run.cost).toBeGreaterThan(0);
    const shown = await cli(['config', 'show', String(version)]);
    expect(shown.stdout).toContain(`"base_url": "${second.url}"`);
    // An apply that names no providers keeps the version's own.
    const again = await cli(['config', 'apply', moved]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain(`model providers: 2 (kept from version ${version})`);
  });
});
