import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLlmSim, type LlmSim, type Scenario } from '@agent-reach/llm-sim';
import { createLogger, loadAgents, loadConfig } from '@agent-reach/shared';
import { createLlmClient, startScheduler, type RunEvent } from '@agent-reach/scheduler';
import { AgentRunner } from '@agent-reach/scheduler/internal';
import { recordingCheckpoint } from './helpers/ledger.js';
import { startLoopHarness } from './helpers/loop.js';
import { writeAgentsFile } from './helpers/mcp.js';
import { startRunsHarness, testEnv } from './helpers/runs.js';

const VERDICT = 'guardrail_verdict';
/** Price of the guardrail agent's model, per million tokens. */
const JUDGE_PRICE = { input: 3, output: 7 };

const AGENTS = {
  agents: [
    {
      name: 'triage_desk',
      tools: ['noop'],
      guardrails: { input: [{ name: 'medical', agent: 'fleet_judge' }] },
    },
    {
      name: 'fleet_judge',
      tools: [],
      instructions: 'Trip on any request for a medical diagnosis.',
      // Its first model's provider is down: a run of this agent falls back to the judges' provider.
      model: 'down/verdict',
      fallback: ['judges/verdict'],
    },
    {
      name: 'parallel_desk',
      tools: ['http_post'],
      guardrails: { run_in_parallel: true, input: [{ name: 'moderation', tool: 'latched_guardrail' }] },
    },
    {
      name: 'parallel_reader',
      tools: ['fetch_page'],
      context_providers: [{ tool: 'fetch_page', arguments: { url: 'https://shop.example/{{input}}' } }],
      guardrails: { run_in_parallel: true, input: [{ name: 'moderation', tool: 'moderate_text' }] },
    },
    {
      name: 'blocking_desk',
      tools: ['http_post'],
      guardrails: { input: [{ name: 'moderation', tool: 'moderate_text' }] },
    },
    {
      name: 'manager',
      tools: [],
      agent_tools: ['leaky_helper'],
      guardrails: {
        tool: [{ name: 'no_pii_from_helper', tools: ['ask_leaky_helper'], stage: 'result', pii: ['email'] }],
      },
    },
    { name: 'leaky_helper', tools: [], model: 'judges/leaky' },
  ],
};

/** The model turns llm-sim was asked for a scenario (plan and verdict requests, with a response format, left out). */
const turnsOf = (sim: LlmSim, scenario: string) =>
  sim.requests.filter(
    (r) => r.scenario === scenario && !(r.body as { response_format?: unknown }).response_format,
  );

const guardrailEvents = (events: RunEvent[]) => events.flatMap((e) => (e.type === 'guardrail' ? [e] : []));

/** Polls `check` until it holds, failing with `what` after 20 s. */
async function until(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('guardrails on the fleet: guardrail agents, parallel input guardrails, agent-tool results (llm-sim)', () => {
  let judges: LlmSim;
  let h: Awaited<ReturnType<typeof startRunsHarness>>;
  const executions = async (tool: string) =>
    Number((await h.producer.hget(`${h.prefix}:test:guardrails`, tool)) ?? 0);
  const finished = async (runId: string) => {
    const outcome = await h.control.wait(runId, 30_000);
    const state = (await h.control.get(runId))?.state;
    const events = (await h.control.events(runId)).map((e) => e.event);
    return { outcome, state: state!, events };
  };

  /**
   * A run of `parallel_desk` whose first turn sends with http_post: its guardrail's verdict is held until
   * the model was asked (so the two run side by side), then given; the run's end.
   */
  const sendBesideLatch = async (scenario: string, input: string) => {
    h.sim.addScenario({
      name: scenario,
      turns: [
        { tool_calls: [{ name: 'http_post', arguments: { url: 'https://x.example', body: 'list' } }] },
        { content: 'sent' },
      ],
    });
    const runId = await h.control.start({ agent: 'parallel_desk', input, model: scenario });
    await until(() => turnsOf(h.sim, scenario).length > 0, 'the first turn');
    await h.producer.rpush(`${h.prefix}:test:guardrail-latch`, 'open');
    return finished(runId);
  };

  beforeAll(async () => {
    judges = await startLlmSim({ scenarios: [] });
    const agentsFile = writeAgentsFile(AGENTS);
    const providersFile = path.join(path.dirname(agentsFile), 'providers.yaml');
    writeFileSync(
      providersFile,
      JSON.stringify({
        providers: [
          // Nothing listens on the discard port: every request is refused at once.
          { name: 'down', base_url: 'http://127.0.0.1:9/v1', max_retries: 0, models: ['verdict'] },
          { name: 'judges', base_url: judges.url, max_retries: 0, models: ['verdict', 'leaky'] },
        ],
        prices: { 'judges/verdict': JUDGE_PRICE },
      }),
    );
    h = await startRunsHarness({ AGENTS_FILE: agentsFile, PROVIDERS_FILE: providersFile });
  });
  afterAll(async () => {
    await h?.close();
    await judges?.close();
  });

  it("asks a guardrail agent's own model through its providers, with its fallback, and charges the verdict to the run", async () => {
    judges.addScenario({
      name: 'verdict',
      schemas: { [VERDICT]: { content: '{"tripped": false, "reason": "not medical"}' } },
      turns: [{ content: 'a verdict agent never takes a turn' }],
    });
    h.sim.addScenario({ name: 'desk-main', turns: [{ content: 'Sunny tomorrow.' }] });
    const runId = await h.control.start({ agent: 'triage_desk', input: 'weather?', model: 'desk-main' });
    const { outcome, state } = await finished(runId);
    expect(outcome).toMatchObject({ status: 'succeeded', answer: 'Sunny tomorrow.' });
    // The verdict came from the judge's fallback model, with the judge's instructions, not the run's model.
    const asked = judges.requests.filter((r) => r.scenario === 'verdict');
    expect(asked).toHaveLength(1);
    const body = asked[0]!.body as { messages: Array<{ content: string }> };
    expect(body.messages[0]!.content).toContain('Trip on any request for a medical diagnosis.');
    expect(
      h.sim.requests.filter((r) => (r.body as { response_format?: unknown }).response_format),
    ).toHaveLength(0);
    const account = state.modelUsage?.['judges/verdict'];
    expect(account).toMatchObject({ turns: 1 });
    expect(account!.prompt_tokens).toBeGreaterThan(0);
    const cost =
      (account!.prompt_tokens * JUDGE_PRICE.input + account!.completion_tokens * JUDGE_PRICE.output) / 1e6;
    expect(account!.cost).toBeCloseTo(cost, 12);
    expect(state.cost).toBeCloseTo(cost, 12);
    expect(state.guardrailVerdicts?.['input:medical:request']).toMatchObject({
      verdict: 'passed',
      model: 'judges/verdict',
    });
    expect(state.guardrailVerdicts?.['input:medical:request']?.cost).toBeCloseTo(cost, 12);
    // The run's usage is every model request's: the verdict's and the turn's.
    const accounts = Object.values(state.modelUsage ?? {});
    const tokens = accounts.reduce((n, a) => n + a.prompt_tokens + a.completion_tokens, 0);
    expect(accounts.reduce((n, a) => n + a.turns, 0)).toBe(2);
    expect(state.usage.prompt_tokens + state.usage.completion_tokens).toBe(tokens);
  });

  it("names the guardrail agent's model in the event of a verdict that trips", async () => {
    judges.addScenario({
      name: 'verdict',
      schemas: { [VERDICT]: { content: '{"tripped": true, "reason": "asks for a diagnosis"}' } },
      turns: [{ content: 'never' }],
    });
    h.sim.addScenario({ name: 'desk-trip', turns: [{ content: 'never asked' }] });
    const runId = await h.control.start({
      agent: 'triage_desk',
      input: 'my chest hurts',
      model: 'desk-trip',
    });
    const { outcome, state, events } = await finished(runId);
    expect(outcome).toMatchObject({ status: 'failed', reason: 'guardrail_tripped' });
    expect(outcome.report).toBe('input guardrail "medical" tripped: asks for a diagnosis');
    expect(guardrailEvents(events)).toEqual([
      expect.objectContaining({ guardrail: 'medical', check: 'agent', model: 'judges/verdict' }),
    ]);
    expect(h.sim.requests.filter((r) => r.scenario === 'desk-trip')).toHaveLength(0);
    expect(state.modelUsage?.['judges/verdict']?.turns).toBe(1);
  });

  it('asks the model beside a parallel input guardrail and, when it trips, discards the answer: its tool call never runs', async () => {
    const before = await executions('http_post');
    const { outcome, state, events } = await sendBesideLatch('parallel-trip', 'send the forbidden list');
    expect(outcome).toMatchObject({ status: 'failed', reason: 'guardrail_tripped' });
    expect(outcome.report).toBe(
      'input guardrail "moderation" tripped: the input mentions a forbidden subject',
    );
    expect(await executions('http_post')).toBe(before);
    expect(events.some((e) => e.type === 'tool_dispatched' || e.type === 'tool_result')).toBe(false);
    expect(state.messages.some((m) => m.role === 'assistant')).toBe(false);
    expect(turnsOf(h.sim, 'parallel-trip')).toHaveLength(1);
  });

  it('runs the turn a parallel input guardrail let through, and blocks a default (blocking) one before any model call', async () => {
    const before = await executions('http_post');
    const passed = await sendBesideLatch('parallel-pass', 'send the list');
    expect(passed.outcome).toMatchObject({ status: 'succeeded', answer: 'sent' });
    expect(await executions('http_post')).toBe(before + 1);
    expect(passed.state.guardrailVerdicts?.['input:moderation:request']).toMatchObject({ verdict: 'passed' });

    h.sim.addScenario({ name: 'blocking-trip', turns: [{ content: 'never asked' }] });
    const blocked = await finished(
      await h.control.start({ agent: 'blocking_desk', input: 'the forbidden list', model: 'blocking-trip' }),
    );
    expect(blocked.outcome).toMatchObject({ status: 'failed', reason: 'guardrail_tripped', iterations: 0 });
    expect(h.sim.requests.filter((r) => r.scenario === 'blocking-trip')).toHaveLength(0);
  });

  it('asks no context provider before the parallel input guardrails passed: they call tools with the request', async () => {
    h.sim.addScenario({ name: 'parallel-context', turns: [{ content: 'never asked' }] });
    const before = await executions('fetch_page');
    const tripped = await finished(
      await h.control.start({ agent: 'parallel_reader', input: 'forbidden', model: 'parallel-context' }),
    );
    expect(tripped.outcome).toMatchObject({ status: 'failed', reason: 'guardrail_tripped', iterations: 0 });
    expect(await executions('fetch_page')).toBe(before);
    expect(h.sim.requests.filter((r) => r.scenario === 'parallel-context')).toHaveLength(0);

    h.sim.addScenario({ name: 'parallel-context-ok', turns: [{ content: 'read it' }] });
    const passed = await finished(
      await h.control.start({ agent: 'parallel_reader', input: 'rates', model: 'parallel-context-ok' }),
    );
    expect(passed.outcome).toMatchObject({ status: 'succeeded', answer: 'read it' });
    expect(await executions('fetch_page')).toBe(before + 1);
  });

  it("withholds an agent tool's answer a result guardrail trips on: the parent's model never reads the child's text", async () => {
    judges.addScenario({ name: 'leaky', turns: [{ content: 'Refunds: write to li.lei@example.com' }] });
    h.sim.addScenario({
      name: 'manager-main',
      turns: [
        { tool_calls: [{ name: 'ask_leaky_helper', arguments: { input: 'who handles refunds?' } }] },
        { content: 'helper answer: {{ last.error.kind }} by {{ last.error.guardrail }}' },
      ],
    });
    const runId = await h.control.start({
      agent: 'manager',
      input: 'who handles refunds?',
      model: 'manager-main',
    });
    const { outcome, state, events } = await finished(runId);
    expect(outcome).toMatchObject({
      status: 'succeeded',
      answer: 'helper answer: guardrail by no_pii_from_helper',
    });
    const [, second] = turnsOf(h.sim, 'manager-main');
    expect(JSON.stringify(second!.body)).not.toContain('li.lei');
    expect(state.steps[0]).toMatchObject({
      tool: 'ask_leaky_helper',
      ok: false,
      error_kind: 'guardrail',
      answered: 'local',
    });
    expect(guardrailEvents(events)).toEqual([
      expect.objectContaining({
        guardrail: 'no_pii_from_helper',
        stage: 'result',
        tool: 'ask_leaky_helper',
        action: 'withheld_result',
      }),
    ]);
    // The child run itself answered: its record keeps what it said.
    expect(judges.requests.filter((r) => r.scenario === 'leaky')).toHaveLength(1);
  });

  it('refuses to start a scheduler whose guardrail regex can backtrack exponentially, naming it', async () => {
    const bad = writeAgentsFile({
      agents: [
        { name: 'a', tools: ['noop'], guardrails: { input: [{ name: 'words', regex: '^(\\w+\\s?)*$' }] } },
      ],
    });
    const config = loadConfig(testEnv(h.prefix, h.sim, { AGENTS_FILE: bad }));
    await expect(
      startScheduler(config, { logger: createLogger('test', { level: 'silent' }) }),
    ).rejects.toThrow(
      /agent "a": guardrails\.input\[0\] "words": regex \/\^\(\\w\+\\s\?\)\*\$\/ may take exponential time/,
    );
  });
});

describe('a parallel input guardrail that trips after the first answer arrived (llm-sim, real Redis and executor)', () => {
  let h: Awaited<ReturnType<typeof startLoopHarness>>;
  let agentsFile: string;
  beforeAll(async () => {
    agentsFile = writeAgentsFile(AGENTS);
    h = await startLoopHarness({ AGENTS_FILE: agentsFile });
  });
  afterAll(async () => h?.close());

  it('charges the discarded turn as the model request it was, without its text or calls, and never shows or runs it', async () => {
    const scenario: Scenario = {
      name: 'parallel-late',
      turns: [
        {
          content: 'Sending it now.',
          tool_calls: [{ name: 'http_post', arguments: { url: 'https://x.example', body: 'list' } }],
        },
        { content: 'never' },
      ],
    };
    h.sim.addScenario(scenario);
    const real = createLlmClient({ apiKey: 'test', baseURL: h.sim.url, model: scenario.name, maxRetries: 0 });
    // The real client, telling the test when the first answer is in the scheduler's hands.
    let answered!: () => void;
    const arrived = new Promise<void>((resolve) => (answered = resolve));
    const llm = {
      ...real,
      complete: async (...args: Parameters<typeof real.complete>) => {
        const res = await real.complete(...args);
        answered();
        return res;
      },
    };
    const runner = await AgentRunner.start({
      connection: h.platform.producer,
      keys: h.platform.keys,
      agents: loadAgents(agentsFile),
      llm,
      logger: createLogger('test', { level: 'silent' }),
    });
    try {
      const countKey = `${h.platform.keys.prefix}:test:guardrails`;
      const before = Number((await h.platform.producer.hget(countKey, 'http_post')) ?? 0);
      const events: RunEvent[] = [];
      const running = runner.run({
        agent: 'parallel_desk',
        input: 'send the forbidden list',
        onEvent: (e) => events.push(e),
        checkpoint: recordingCheckpoint(h.platform.producer, h.platform.keys),
      });
      await arrived;
      await h.platform.producer.rpush(`${h.platform.keys.prefix}:test:guardrail-latch`, 'open');
      const { outcome, state } = await running;
      expect(outcome).toMatchObject({ status: 'failed', reason: 'guardrail_tripped', iterations: 1 });
      const turn = events.find((e) => e.type === 'llm_request');
      expect(turn).toMatchObject({ turn: 1, tool_calls: 0, message: { content: null } });
      expect(JSON.stringify(events)).not.toContain('Sending it now');
      expect(state.messages.some((m) => m.role === 'assistant')).toBe(false);
      expect(state.usage.prompt_tokens).toBeGreaterThan(0);
      expect(state.modelUsage?.[`default/${scenario.name}`]?.turns).toBe(1);
      expect(Number((await h.platform.producer.hget(countKey, 'http_post')) ?? 0)).toBe(before);
      expect(events.map((e) => e.type)).not.toContain('tool_dispatched');
    } finally {
      await runner.close();
    }
  });
});
