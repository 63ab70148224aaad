import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { isFinalStatus, type RunVariant } from '@agent-reach/protocol';
import { FULL_KEY, LIMITED_KEY, startApiHarness, TEST_MODELS, type ApiHarness } from './helpers/api.js';
import { enqueueRun } from '@agent-reach/client/queue';
import { replayRun } from '@agent-reach/scheduler';
import { startSchedulerChild, type Child } from './helpers/processes.js';
import { startRunsHarness, testEnv } from './helpers/runs.js';
import { REDIS_URL, waitFor } from './helpers/redis.js';

/** The model's call with a city as people write it (广州省), which query_weather's enum does not hold. */
const CITY_SCENARIO = {
  name: 'city-province',
  turns: [
    { tool_calls: [{ name: 'query_weather', arguments: { city: '广州省' } }] },
    { content: 'the weekend in Guangzhou' },
  ],
};
const ALIASES = { query_weather: { aliases: { city: { 广州省: '广州' } } } };

type Recorded = { scenario: string | null; body: unknown };
interface ChatBody {
  messages: Array<{ role: string; content?: unknown }>;
  tools?: Array<{ function: { name: string; description: string; parameters: Record<string, unknown> } }>;
}
const bodyOf = (r: Recorded) => r.body as ChatBody;
/** The model requests of the run whose user message is `input`. */
const requestsOf = (requests: readonly Recorded[], input: string) =>
  requests.filter((r) => bodyOf(r).messages?.some((m) => m.role === 'user' && m.content === input));
const systemText = (r: Recorded) =>
  bodyOf(r)
    .messages.filter((m) => m.role === 'system')
    .map((m) => String(m.content))
    .join('\n');
const weatherSpec = (r: Recorded) => bodyOf(r).tools?.find((t) => t.function.name === 'query_weather');

describe('per-run variants: overrides of an agent for one run only, through the API (real fleet on llm-sim)', () => {
  let h: ApiHarness;
  beforeAll(async () => {
    h = await startApiHarness({ allowedModels: [...TEST_MODELS, CITY_SCENARIO.name] });
    h.sim.addScenario(CITY_SCENARIO);
  });
  afterAll(async () => {
    await h.close();
  });

  const start = async (body: Record<string, unknown>, key: string = FULL_KEY) =>
    h.call('POST', '/v1/runs', { body, key });
  const finished = async (runId: string) =>
    waitFor(
      async () => {
        const view = (await h.call('GET', `/v1/runs/${runId}`)).json;
        return isFinalStatus(view.status) ? view : undefined;
      },
      20_000,
      `run ${runId} to end`,
    );

  it("gives the model of a variant's run the variant's instructions, tool description and examples, and a concurrent run of the same agent the configuration in force", async () => {
    const variant: RunVariant = {
      name: 'terse-weather',
      overrides: {
        instructions: 'VARIANT-INSTRUCTIONS: answer in one line.',
        tools: {
          query_weather: {
            description: 'VARIANT-DESCRIPTION of the weekend weather.',
            examples: [{ city: '广州' }],
          },
        },
      },
    };
    const inputs = { variant: 'hello from the variant run', plain: 'hello from the plain run' };
    // Both runs are accepted before either is waited on: they run side by side on the same scheduler.
    const [withVariant, plain] = await Promise.all([
      start({ agent: 'test_agent', input: inputs.variant, variant }),
      start({ agent: 'test_agent', input: inputs.plain }),
    ]);
    expect(withVariant.status).toBe(201);
    expect(plain.status).toBe(201);
    expect(withVariant.json.variant).toEqual(variant);
    const [viewA, viewB] = await Promise.all([
      finished(withVariant.json.run_id),
      finished(plain.json.run_id),
    ]);
    expect(viewA).toMatchObject({ status: 'succeeded', variant });
    expect(viewB.status).toBe('succeeded');
    expect(viewB.variant).toBeUndefined();

    const seenA = requestsOf(h.sim.requests, inputs.variant);
    const seenB = requestsOf(h.sim.requests, inputs.plain);
    expect(seenA.length).toBeGreaterThan(0);
    expect(seenB.length).toBeGreaterThan(0);
    for (const r of seenA) {
      expect(systemText(r)).toContain('VARIANT-INSTRUCTIONS');
      expect(weatherSpec(r)?.function.description).toBe('VARIANT-DESCRIPTION of the weekend weather.');
      expect(weatherSpec(r)?.function.parameters.examples).toEqual([{ city: '广州' }]);
    }
    for (const r of seenB) {
      expect(systemText(r)).not.toContain('VARIANT-INSTRUCTIONS');
      expect(weatherSpec(r)?.function.description).toContain(
        'Weekend (Saturday and Sunday) weather forecast',
      );
      expect(weatherSpec(r)?.function.parameters.examples).toBeUndefined();
    }

    const started = (await h.control.events(withVariant.json.run_id)).find(
      (e) => e.event.type === 'run_started',
    );
    expect(started?.event).toMatchObject({ type: 'run_started', variant });
  });

  it("heals an argument with the variant's aliases in its run only: the same call without the variant is refused as invalid", async () => {
    // The variant names the model (the scenario) itself; the plain run names it in its request.
    const variant: RunVariant = {
      name: 'city-aliases',
      overrides: { model: CITY_SCENARIO.name, tools: ALIASES },
    };
    const inputs = {
      healed: 'weekend weather in 广州省 (variant)',
      refused: 'weekend weather in 广州省 (plain)',
    };
    const [healed, refused] = await Promise.all([
      start({ agent: 'test_agent', input: inputs.healed, variant }),
      start({ agent: 'test_agent', input: inputs.refused, model: CITY_SCENARIO.name }),
    ]);
    const [viewA, viewB] = await Promise.all([finished(healed.json.run_id), finished(refused.json.run_id)]);
    expect(viewA.steps).toEqual([expect.objectContaining({ tool: 'query_weather', ok: true })]);
    expect(viewB.steps).toEqual([
      expect.objectContaining({ tool: 'query_weather', ok: false, error_kind: 'invalid_arguments' }),
    ]);
    expect(requestsOf(h.sim.requests, inputs.healed).map((r) => r.scenario)).toEqual([
      CITY_SCENARIO.name,
      CITY_SCENARIO.name,
    ]);
    // The model of the variant's run reads the arguments its call ran with.
    const toolMessages = requestsOf(h.sim.requests, inputs.healed).flatMap((r) =>
      bodyOf(r).messages.filter((m) => m.role === 'tool'),
    );
    expect(String(toolMessages[0]?.content)).toContain('"normalized_arguments":{"city":"广州"}');

    // A live replay runs the call again with the variant the run had: healed again, no difference.
    const replay = await replayRun(
      healed.json.run_id,
      { runner: h.schedulers[0]!.runner, store: h.control.store },
      { live: true },
    );
    expect(replay.calls).toEqual([expect.objectContaining({ tool: 'query_weather', source: 'live' })]);
    expect(replay.differences).toEqual([]);
    expect((await h.control.get(replay.runId))?.state?.variant).toEqual(variant);
  });

  it("applies a variant's loop settings to its run: max_iterations 1 stops a run that keeps calling tools", async () => {
    h.sim.addScenario({
      name: 'calls-forever',
      turns: [{ tool_calls: [{ name: 'noop', arguments: { value: 'again' } }], repeat: true }],
    });
    const api = await h.extraServer({ allowedModels: [...TEST_MODELS, 'calls-forever'] });
    const startOn = async (variant?: RunVariant) => {
      const res = await fetch(`${api.url}/v1/runs`, {
        method: 'POST',
        headers: { authorization: `Bearer ${FULL_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          agent: 'test_agent',
          input: 'call noop until told to stop',
          model: 'calls-forever',
          ...(variant ? { variant } : {}),
        }),
      });
      return ((await res.json()) as { run_id: string }).run_id;
    };
    try {
      const [limited, plain] = await Promise.all([
        startOn({ name: 'one-turn', overrides: { max_iterations: 1 } }),
        startOn(),
      ]);
      const [viewA, viewB] = await Promise.all([finished(limited), finished(plain)]);
      expect(viewA).toMatchObject({ status: 'not_converged', iterations: 1 });
      // The agent in force is untouched: the same run without the variant goes on past one turn.
      expect(viewB.iterations).toBeGreaterThan(1);
    } finally {
      await api.close();
    }
  });

  it("checks a variant carried by a job added to the queue directly: the client's enqueueRun starts a run with one, and one naming a tool the agent does not list ends the run invalid_job naming it", async () => {
    const variant: RunVariant = { name: 'queued', overrides: { instructions: 'VARIANT-FROM-THE-QUEUE' } };
    const { runId } = await enqueueRun({
      redisUrl: REDIS_URL,
      prefix: h.prefix,
      agent: 'test_agent',
      input: 'hello from a queued variant',
      variant,
    });
    expect(await finished(runId)).toMatchObject({ status: 'succeeded', variant });
    const seen = requestsOf(h.sim.requests, 'hello from a queued variant');
    expect(seen.length).toBeGreaterThan(0);
    for (const r of seen) expect(systemText(r)).toContain('VARIANT-FROM-THE-QUEUE');

    const refused = await h.control.start({
      agent: 'weather_only',
      input: 'hello',
      variant: { name: 'unlisted', overrides: { tools: { noop: { description: 'x' } } } },
    });
    const outcome = await h.control.wait(refused, 20_000);
    expect(outcome).toMatchObject({ status: 'failed', reason: 'invalid_job' });
    expect(outcome.report).toContain('agent "weather_only" does not list tool "noop"');
  });

  it("starts a session's message with a variant for that run only: the session's next run is as configured", async () => {
    const sessionId = `variant-session-${Date.now()}`;
    expect((await h.call('POST', '/v1/sessions', { body: { session_id: sessionId } })).status).toBe(201);
    const variant: RunVariant = { name: 'in-session', overrides: { instructions: 'VARIANT-IN-SESSION' } };
    const first = await h.call('POST', `/v1/sessions/${sessionId}/messages`, {
      body: { agent: 'test_agent', input: 'first message of the session', variant },
    });
    expect(first.status, first.text).toBe(201);
    expect(await finished(first.json.run_id)).toMatchObject({ status: 'succeeded', variant });
    const second = await h.call('POST', `/v1/sessions/${sessionId}/messages`, {
      body: { agent: 'test_agent', input: 'second message of the session' },
    });
    expect((await finished(second.json.run_id)).variant).toBeUndefined();
    const [firstSeen] = requestsOf(h.sim.requests, 'first message of the session');
    const secondSeen = h.sim.requests.filter((r) =>
      bodyOf(r).messages?.some((m) => m.role === 'user' && m.content === 'second message of the session'),
    );
    expect(systemText(firstSeen!)).toContain('VARIANT-IN-SESSION');
    expect(secondSeen.length).toBeGreaterThan(0);
    for (const r of secondSeen) expect(systemText(r)).not.toContain('VARIANT-IN-SESSION');
  });

  it('refuses a variant with a key a variant may not hold, naming the key, with 400', async () => {
    const res = await start({
      agent: 'test_agent',
      input: 'hello',
      variant: { name: 'bad', overrides: { instructionz: 'x' } },
    });
    expect(res.status).toBe(400);
    expect(res.json.error.code).toBe('VALIDATION_FAILED');
    expect(res.json.error.details).toEqual(
      expect.arrayContaining([expect.objectContaining({ property: 'instructionz' })]),
    );
    expect(res.json.error.message).toBe(
      'body/variant/overrides must NOT have additional properties "instructionz"',
    );
  });

  it('refuses a variant naming a tool the agent does not list, naming the tool, with 400', async () => {
    const res = await start({
      agent: 'weather_only',
      input: 'hello',
      variant: { name: 'other-tool', overrides: { tools: { noop: { description: 'x' } } } },
    });
    expect(res.status).toBe(400);
    expect(res.json.error.code).toBe('VALIDATION_FAILED');
    expect(res.json.error.message).toContain('agent "weather_only" does not list tool "noop"');
  });

  it('refuses aliases for an argument the tool does not have, or to a value outside its enum, with 400', async () => {
    const res = await start({
      agent: 'test_agent',
      input: 'hello',
      variant: {
        name: 'bad-aliases',
        overrides: { tools: { query_weather: { aliases: { town: { a: 'b' } } } } },
      },
    });
    expect(res.status).toBe(400);
    expect(res.json.error.message).toContain('overrides.tools.query_weather.aliases.town');
  });

  it('refuses a variant whose merged agent the agents file would refuse, naming the field, with 400', async () => {
    const tooMany = await start({
      agent: 'test_agent',
      input: 'hello',
      variant: { name: 'too-many', overrides: { max_iterations: 500 } },
    });
    expect(tooMany.status).toBe(400);
    expect(tooMany.json.error.message).toContain('variant "too-many"');
    expect(tooMany.json.error.message).toContain('max_iterations');
    const noTopics = await start({
      agent: 'test_agent',
      input: 'hello',
      variant: { name: 'policy-alone', overrides: { topic_policy: 'warn' } },
    });
    expect(noTopics.status).toBe(400);
    expect(noTopics.json.error.message).toContain('topic_policy "warn" needs allowed_topic');
  });

  it("refuses a variant raising a limit past what the agent may use (the fleet's, as the agent sets none), naming each field and ceiling, with 400, and takes one that lowers them", async () => {
    const limits = (max_iterations: number, max_tokens: number, max_wall_time_ms: number, out: number) => ({
      max_iterations,
      max_tokens,
      max_wall_time_ms,
      loop: { max_output_tokens: out },
    });
    const raised = await start({
      agent: 'test_agent',
      input: 'hello',
      variant: { name: 'unbounded', overrides: limits(20, 1_000_000, 86_400_000, 100_000) },
    });
    expect(raised.status, raised.text).toBe(400);
    expect(raised.json.error.code).toBe('VALIDATION_FAILED');
    const message = raised.json.error.message as string;
    expect(message).toContain('overrides.max_iterations 20 is above what agent "test_agent" may use (15,');
    expect(message).toContain(
      `overrides.max_tokens 1000000 is above what agent "test_agent" may use (200000, the fleet's RUN_TOKEN_BUDGET)`,
    );
    expect(message).toContain(
      `overrides.max_wall_time_ms 86400000 is above what agent "test_agent" may use (600000, the fleet's RUN_DEADLINE_MS)`,
    );
    expect(message).toContain(
      `overrides.loop.max_output_tokens 100000 is above what agent "test_agent" may use (2000, the fleet's MAX_OUTPUT_TOKENS)`,
    );
    expect(message).toContain('a variant may lower a limit, never raise it');
    const lowered = await start({
      agent: 'test_agent',
      input: 'hello',
      model: 'echo',
      variant: { name: 'bounded', overrides: limits(3, 5000, 60_000, 500) },
    });
    expect(lowered.status, lowered.text).toBe(201);
    expect((await finished(lowered.json.run_id)).status).toBe('succeeded');
  });

  it("refuses a body nested thousands of levels deep (a variant's tool examples or loop, an eval report's overrides) with 400 naming the depth, where it answered 500", async () => {
    const deep = (n: number) => '{"a":'.repeat(n) + '1' + '}'.repeat(n);
    const bodies: Array<[string, string]> = [
      [
        '/v1/runs',
        `{"agent":"test_agent","input":"hi","variant":{"name":"d","overrides":{"tools":{"query_weather":{"examples":[${deep(5000)}]}}}}}`,
      ],
      [
        '/v1/runs',
        `{"agent":"test_agent","input":"hi","variant":{"name":"d","overrides":{"loop":${deep(5000)}}}}`,
      ],
      [
        '/v1/evals',
        `{"id":"ev_deep","dataset":{"name":"x","cases":1},"variants":[{"overrides":${deep(5000)}}]}`,
      ],
    ];
    for (const [path, raw] of bodies) {
      const res = await h.call('POST', path, { raw });
      expect(res.status, res.text).toBe(400);
      expect(res.json.error).toMatchObject({
        code: 'VALIDATION_FAILED',
        message: 'the body nests objects and arrays more than 128 levels deep',
      });
    }
    // Nesting inside strings is text, not depth; a body at the bound is parsed and checked as usual.
    const text = await start({ agent: 'test_agent', input: '{['.repeat(1000), model: 'echo' });
    expect(text.status, text.text).toBe(201);
    const atBound = await h.call('POST', '/v1/runs', {
      raw: `{"agent":"test_agent","input":"hi","metadata":${deep(127)}}`,
    });
    expect(atBound.status).toBe(400);
    expect(atBound.json.error.message).not.toContain('levels deep');
  });

  it('refuses a variant naming a model that is not declared, with 400 MODEL_NOT_ALLOWED naming it', async () => {
    const res = await start({
      agent: 'test_agent',
      input: 'hello',
      variant: { name: 'other-model', overrides: { fallback: ['not-a-declared-model'] } },
    });
    expect(res.status).toBe(400);
    expect(res.json.error.code).toBe('MODEL_NOT_ALLOWED');
    expect(res.json.error.message).toContain('overrides.fallback "not-a-declared-model"');
  });

  it('refuses a variant from a key limited to some agents, and from a full key the configuration does not allow, with 403 saying why', async () => {
    const variant = { name: 'any', overrides: { instructions: 'x' } };
    const limited = await start({ agent: 'weather_only', input: 'hello', variant }, LIMITED_KEY);
    expect(limited.status).toBe(403);
    expect(limited.json.error.message).toContain('limited to some agents');
    // Without the variant, the same key may start the run.
    expect((await start({ agent: 'weather_only', input: 'hello' }, LIMITED_KEY)).status).toBe(201);

    const api = await h.extraServer({
      apiKeys: [{ key: FULL_KEY, name: 'tester', variants: false }],
    });
    try {
      const res = await fetch(`${api.url}/v1/runs`, {
        method: 'POST',
        headers: { authorization: `Bearer ${FULL_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ agent: 'test_agent', input: 'hello', variant }),
      });
      expect(res.status).toBe(403);
      const body = (await res.json()) as { error: { message: string } };
      expect(body.error.message).toContain('does not allow it variants');
    } finally {
      await api.close();
    }
  });
});

describe('per-run variants survive a scheduler killed mid-run (real processes)', () => {
  let h: Awaited<ReturnType<typeof startRunsHarness>> | undefined;
  const children: Child[] = [];
  afterEach(async () => {
    for (const c of children.splice(0)) {
      c.kill('SIGKILL');
      await c.exited;
    }
    await h?.close();
    h = undefined;
  });

  // Two scheduler processes start and one run's lock lapses: on a loaded machine that takes a while.
  it("resumes a run on another scheduler with its variant: the variant's instructions and aliases still apply after the kill", async () => {
    h = await startRunsHarness({}, { scheduler: false });
    h.sim.addScenario({
      name: 'variant-kill',
      turns: [
        // The first answer hangs: the scheduler asking for it is killed while it waits.
        { ...CITY_SCENARIO.turns[0], fault: { type: 'hang', times: 1 } },
        { content: 'answered after the takeover' },
      ],
    });
    const env = testEnv(h.prefix, h.sim, {
      RUN_LOCK_DURATION_MS: '2000',
      RUN_STALLED_INTERVAL_MS: '1000',
      LLM_TIMEOUT_MS: '120000',
      LLM_MAX_RETRIES: '0',
    });
    const first = startSchedulerChild(env);
    children.push(first);
    await first.ready;
    const variant: RunVariant = {
      name: 'survives',
      overrides: { instructions: 'VARIANT-AFTER-KILL', tools: ALIASES },
    };
    const input = 'weekend weather in 广州省, please';
    const runId = await h.control.start({ agent: 'test_agent', input, model: 'variant-kill', variant });
    await waitFor(async () => (h!.sim.inFlight > 0 ? true : undefined), 15_000, 'the hung model call');
    first.kill('SIGKILL');
    await first.exited;
    const second = startSchedulerChild(env);
    children.push(second);
    await second.ready;

    const outcome = await h.control.wait(runId, 60_000);
    expect(outcome).toMatchObject({ status: 'succeeded', answer: 'answered after the takeover' });
    // The call ran with the variant's alias, on the scheduler that took the run over.
    expect(outcome.steps).toEqual([expect.objectContaining({ tool: 'query_weather', ok: true })]);
    const answered = requestsOf(h.sim.requests, input).filter((r) => r.scenario === 'variant-kill');
    expect(answered.length).toBeGreaterThanOrEqual(2);
    for (const r of answered) expect(systemText(r)).toContain('VARIANT-AFTER-KILL');
    const run = await h.control.get(runId);
    expect(run?.state?.variant).toEqual(variant);
    const types = (await h.control.events(runId)).map((e) => e.event.type);
    expect(types.filter((t) => t === 'run_started')).toHaveLength(1);
  }, 120_000);
});
