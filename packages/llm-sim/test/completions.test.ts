import { NotFoundError } from 'openai';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startLlmSim, validateScenario, type LlmSim, type Scenario } from '../src/index.js';
import { client, functionCalls, withToolResults } from './helpers.js';

const scenarios: Scenario[] = [
  {
    name: 'trip',
    turns: [
      { tool_calls: [{ name: 'query_weather', arguments: { city: '上海' } }] },
      {
        tool_calls: [
          {
            name: 'write_file',
            arguments: {
              path: 'trip.md',
              days: '{{results.query_weather.content.days}}',
              text: 'Weather: {{ results.query_weather.content.summary }} ({{results.query_weather.content.days}} days)',
              first: '{{results.query_weather.content.items.0.id}}',
              nested: ['{{ last.content.items[1] }}'],
              fallback: "{{ results.query_weather.content.nope ?? 'unknown' }}",
              missing: '{{results.query_weather.content.nope}}',
            },
          },
        ],
      },
      { content: 'Saved to {{results.write_file.content.path}}.' },
    ],
  },
  {
    name: 'loop',
    turns: [{ content: 'first' }, { tool_calls: [{ name: 'ping', arguments: {} }], repeat: true }],
  },
  { name: 'planner', plan: ['query the weather', 'write the plan'], turns: [{ content: 'planned' }] },
  { name: 'chatty', turns: [{ content: 'abcdefghij'.repeat(10) }] },
  { name: 'counter', turns: [{ content: 't0' }, { content: 't1' }, { content: 't2' }, { content: 't3' }] },
];

const weather = { ok: true, content: { summary: '多云 22°C', days: 2, items: [{ id: 'x1' }, { id: 'x2' }] } };

let sim: LlmSim;
beforeAll(async () => {
  sim = await startLlmSim({ scenarios });
});
afterAll(async () => {
  await sim.close();
});
beforeEach(() => sim.clearRequests());

/** A conversation with `n` assistant text turns before the final user message. */
function conversation(n: number, first = 'start'): ChatCompletionMessageParam[] {
  const messages: ChatCompletionMessageParam[] = [{ role: 'user', content: first }];
  for (let i = 0; i < n; i += 1)
    messages.push({ role: 'assistant', content: `a${i}` }, { role: 'user', content: `u${i}` });
  return messages;
}

describe('chat completions', () => {
  it('returns the scripted tool call with finish_reason tool_calls and token usage through the SDK', async () => {
    const res = await client(sim).chat.completions.create({
      model: 'trip',
      messages: [{ role: 'user', content: 'go' }],
    });
    expect(res.object).toBe('chat.completion');
    expect(res.id).toMatch(/^chatcmpl-/);
    expect(res.model).toBe('trip');
    const choice = res.choices[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.role).toBe('assistant');
    expect(choice.message.content).toBeNull();
    const [call] = functionCalls(res);
    expect(call!.id).toMatch(/^call_[0-9a-f]{24}$/);
    expect(call!.name).toBe('query_weather');
    expect(JSON.parse(call!.arguments)).toEqual({ city: '上海' });
    expect(res.usage!.prompt_tokens).toBeGreaterThan(0);
    expect(res.usage!.completion_tokens).toBeGreaterThan(0);
    expect(res.usage!.total_tokens).toBe(res.usage!.prompt_tokens + res.usage!.completion_tokens);
  });

  it('gives a repeated identical request the same tool-call ids and another conversation different ones', async () => {
    const ask = (content: string) =>
      client(sim).chat.completions.create({ model: 'trip', messages: [{ role: 'user', content }] });
    const [a, b, c] = await Promise.all([ask('same'), ask('same'), ask('other')]);
    expect(functionCalls(a)[0]!.id).toBe(functionCalls(b)[0]!.id);
    expect(functionCalls(a)[0]!.id).not.toBe(functionCalls(c)[0]!.id);
  });

  it('takes the conversation identity from the x-llm-sim-conversation header when sent', async () => {
    const ask = (content: string, conversation: string) =>
      client(sim).chat.completions.create(
        { model: 'trip', messages: [{ role: 'user', content }] },
        { headers: { 'x-llm-sim-conversation': conversation } },
      );
    const [a, b, c] = await Promise.all([ask('one', 'run-1'), ask('two', 'run-1'), ask('one', 'run-2')]);
    expect(functionCalls(a)[0]!.id).toBe(functionCalls(b)[0]!.id);
    expect(functionCalls(a)[0]!.id).not.toBe(functionCalls(c)[0]!.id);
  });

  it('resolves templates from earlier tool results and keeps whole-value templates typed', async () => {
    const openai = client(sim);
    const start: ChatCompletionMessageParam[] = [{ role: 'user', content: 'plan a trip' }];
    const first = await openai.chat.completions.create({ model: 'trip', messages: start });
    const second = await openai.chat.completions.create({
      model: 'trip',
      messages: withToolResults(start, first, () => weather),
    });
    const args = JSON.parse(functionCalls(second)[0]!.arguments) as Record<string, unknown>;
    expect(args).toEqual({
      path: 'trip.md',
      days: 2,
      text: 'Weather: 多云 22°C (2 days)',
      first: 'x1',
      nested: [{ id: 'x2' }],
      fallback: 'unknown',
      missing: '',
    });
    expect(sim.requests[1]!.warnings).toEqual([
      'turns[1].tool_calls[0].arguments.missing: template {{results.query_weather.content.nope}} did not resolve',
    ]);
  });

  it('fills final content from the latest result of the named tool', async () => {
    const openai = client(sim);
    let messages: ChatCompletionMessageParam[] = [{ role: 'user', content: 'trip to the end' }];
    const first = await openai.chat.completions.create({ model: 'trip', messages });
    messages = withToolResults(messages, first, () => weather);
    const second = await openai.chat.completions.create({ model: 'trip', messages });
    messages = withToolResults(messages, second, () => ({ ok: true, content: { path: '/out/trip.md' } }));
    const third = await openai.chat.completions.create({ model: 'trip', messages });
    expect(third.choices[0]!.message.content).toBe('Saved to /out/trip.md.');
    expect(third.choices[0]!.finish_reason).toBe('stop');
    expect(third.choices[0]!.message.tool_calls).toBeUndefined();
  });

  it('picks the turn from the number of assistant messages in the request', async () => {
    const openai = client(sim);
    const contents = [];
    for (const n of [0, 1, 2, 3]) {
      const res = await openai.chat.completions.create({ model: 'counter', messages: conversation(n) });
      contents.push(res.choices[0]!.message.content);
    }
    expect(contents).toEqual(['t0', 't1', 't2', 't3']);
    expect(sim.requests.map((r) => r.turn)).toEqual([0, 1, 2, 3]);
  });

  it('plays a structured-output request (a json_schema not named plan) from the turns, and records the format asked', async () => {
    const format = {
      type: 'json_schema' as const,
      json_schema: { name: 'answer', schema: { type: 'object' }, strict: false },
    };
    const res = await client(sim).chat.completions.create({
      model: 'counter',
      messages: conversation(1),
      response_format: format,
    });
    expect(res.choices[0]!.message.content).toBe('t1');
    expect(sim.requests[0]!.turn).toBe(1);
    expect((sim.requests[0]!.body as { response_format?: unknown }).response_format).toEqual(format);
  });

  it('answers a request for a JSON Schema the scenario lists under schemas from there, whatever the turn', async () => {
    const own = await startLlmSim({ scenarios: [] });
    own.addScenario({
      name: 'judged',
      schemas: { guardrail_verdict: { content: '{"tripped": true, "reason": "about {{ user }}"}' } },
      turns: [{ content: 't0' }, { content: 't1' }],
    });
    const ask = (name: string) =>
      client(own).chat.completions.create({
        model: 'judged',
        messages: [{ role: 'user', content: 'my chest hurts' }],
        response_format: {
          type: 'json_schema',
          json_schema: { name, schema: { type: 'object' }, strict: false },
        },
      });
    expect((await ask('guardrail_verdict')).choices[0]!.message.content).toBe(
      '{"tripped": true, "reason": "about my chest hurts"}',
    );
    // Another schema's request is a structured-output turn, played from the turns.
    expect((await ask('answer')).choices[0]!.message.content).toBe('t0');
    await own.close();
    expect(() =>
      validateScenario({ name: 'x', turns: [], schemas: { v: { contnet: 'x' } } }, 'inline'),
    ).toThrow(/schemas\.v\.contnet: unknown field/);
  });

  it('adds the folded_turns counts that compaction left in system and user messages', async () => {
    const messages: ChatCompletionMessageParam[] = [
      { role: 'system', content: 'summary of earlier work {"folded_turns": 1}' },
      { role: 'user', content: [{ type: 'text', text: 'context {"folded_turns" :1}' }] },
      { role: 'assistant', content: 'ok' },
      { role: 'user', content: 'continue' },
    ];
    const res = await client(sim).chat.completions.create({ model: 'counter', messages });
    expect(res.choices[0]!.message.content).toBe('t3');
  });

  it('answers Done. with finish_reason stop once the script has run out of turns', async () => {
    const res = await client(sim).chat.completions.create({ model: 'counter', messages: conversation(4) });
    expect(res.choices[0]!.message.content).toBe('Done.');
    expect(res.choices[0]!.finish_reason).toBe('stop');
  });

  it('keeps replaying a last turn marked repeat, with call ids of the turn it plays', async () => {
    const openai = client(sim);
    const answers = await Promise.all(
      [1, 2, 5].map((n) => openai.chat.completions.create({ model: 'loop', messages: conversation(n) })),
    );
    const calls = answers.map((a) => functionCalls(a)[0]!);
    expect(calls.map((c) => c.name)).toEqual(['ping', 'ping', 'ping']);
    expect(new Set(calls.map((c) => c.id)).size).toBe(3);
    expect(answers.map((a) => a.choices[0]!.finish_reason)).toEqual([
      'tool_calls',
      'tool_calls',
      'tool_calls',
    ]);
  });

  it('answers planning requests with the scenario plan without counting turns', async () => {
    const res = await client(sim).chat.completions.create({
      model: 'planner',
      messages: conversation(3),
      response_format: { type: 'json_object' },
    });
    expect(JSON.parse(res.choices[0]!.message.content!)).toEqual({
      steps: ['query the weather', 'write the plan'],
    });
    expect(res.choices[0]!.finish_reason).toBe('stop');
    expect(sim.requests[0]!.turn).toBeNull();
    const schema = await client(sim).chat.completions.create({
      model: 'counter',
      messages: conversation(1),
      response_format: { type: 'json_schema', json_schema: { name: 'plan', schema: { type: 'object' } } },
    });
    expect(JSON.parse(schema.choices[0]!.message.content!)).toEqual({ steps: [] });
  });

  it('cuts content longer than max_tokens and reports finish_reason length', async () => {
    const openai = client(sim);
    const messages: ChatCompletionMessageParam[] = [{ role: 'user', content: 'talk' }];
    const cut = await openai.chat.completions.create({ model: 'chatty', messages, max_tokens: 5 });
    expect(cut.choices[0]!.message.content).toBe('abcdefghij'.repeat(2));
    expect(cut.choices[0]!.finish_reason).toBe('length');
    expect(cut.usage!.completion_tokens).toBe(5);
    const cut2 = await openai.chat.completions.create({
      model: 'chatty',
      messages,
      max_completion_tokens: 3,
    });
    expect(cut2.choices[0]!.message.content).toHaveLength(12);
    const whole = await openai.chat.completions.create({ model: 'chatty', messages, max_tokens: 25 });
    expect(whole.choices[0]!.finish_reason).toBe('stop');
    expect(whole.choices[0]!.message.content).toHaveLength(100);
  });

  it('selects the scenario named by the x-llm-sim-scenario header whatever the model says', async () => {
    const res = await client(sim).chat.completions.create(
      { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] },
      { headers: { 'x-llm-sim-scenario': 'planner' } },
    );
    expect(res.choices[0]!.message.content).toBe('planned');
    expect(res.model).toBe('gpt-4o');
    expect(sim.requests[0]!.scenario).toBe('planner');
  });

  it('answers an unknown model with 404 model_not_found', async () => {
    const err = await client(sim)
      .chat.completions.create({ model: 'gpt-nope', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NotFoundError);
    const e = err as NotFoundError;
    expect(e.status).toBe(404);
    expect(e.code).toBe('model_not_found');
    expect(e.type).toBe('invalid_request_error');
    expect(e.message).toContain("'gpt-nope'");
  });

  it('records lower-cased headers without the authorization header', async () => {
    await client(sim).chat.completions.create(
      { model: 'planner', messages: [{ role: 'user', content: 'hi' }] },
      { headers: { 'X-Run-Id': 'run-7' } },
    );
    const headers = sim.requests[0]!.headers;
    expect(headers['x-run-id']).toBe('run-7');
    expect(headers).not.toHaveProperty('authorization');
    expect(sim.requests[0]).toMatchObject({ scenario: 'planner', turn: 0, status: 200 });
  });

  it('lists one model per scenario on GET /v1/models, including scenarios added later', async () => {
    sim.addScenario({ name: 'late', turns: [{ content: 'late' }] });
    const list = await client(sim).models.list();
    expect(list.data.map((m) => m.id).sort()).toEqual([
      'chatty',
      'counter',
      'late',
      'loop',
      'planner',
      'sim-noisy',
      'trip',
    ]);
    expect(list.data[0]).toMatchObject({ object: 'model', owned_by: 'llm-sim' });
    expect((await client(sim).models.retrieve('late')).id).toBe('late');
  });
});
