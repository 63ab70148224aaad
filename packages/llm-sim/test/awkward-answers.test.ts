import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatCompletionTool } from 'openai/resources/chat/completions';
import { startLlmSim, type LlmSim, type Scenario } from '../src/index.js';
import { client } from './helpers.js';

const tools: ChatCompletionTool[] = [
  {
    type: 'function',
    function: {
      name: 'query_weather',
      parameters: { type: 'object', properties: { city: { type: 'string' } } },
    },
  },
  {
    type: 'function',
    function: { name: 'noop', parameters: { type: 'object', properties: { value: { type: 'string' } } } },
  },
];

const scenarios: Scenario[] = [
  {
    name: 'awkward-calls',
    turns: [
      {
        tool_calls: [
          { name: 'noop', id: null },
          { name: 'noop', id: '' },
          { name: 'noop', id: 'same' },
          { name: 'noop', id: 'same', type: null },
          { name: 'noop', type: 'custom' },
        ],
      },
    ],
  },
  { name: 'refusing', turns: [{ refusal: 'I cannot help with that.' }] },
  { name: 'thinking', turns: [{ reasoning: 'The user says hi; greet back.', content: 'hello' }] },
  { name: 'filtered', turns: [{ content: 'half', finish_reason: 'content_filter' }] },
  {
    name: 'planner-with-tools',
    plan: ['think', { title: 'look it up', tool: 'query_weather' }],
    turns: [{ content: 'ok' }],
  },
  { name: 'random', random: { seed: 3 }, turns: [] },
];

let sim: LlmSim;
beforeAll(async () => {
  sim = await startLlmSim({ scenarios });
});
afterAll(async () => sim.close());

const ask = (model: string, content = 'hi') =>
  client(sim).chat.completions.create({ model, messages: [{ role: 'user', content }], tools });

describe('awkward answers on request', () => {
  it('sends tool calls with the ids and types a scenario scripts, missing ones left out', async () => {
    const res = await ask('awkward-calls');
    const calls = res.choices[0]!.message.tool_calls as unknown as Array<Record<string, unknown>>;
    expect(calls.map((c) => ['id' in c ? c.id : 'absent', 'type' in c ? c.type : 'absent'])).toEqual([
      ['absent', 'function'],
      ['', 'function'],
      ['same', 'function'],
      ['same', 'absent'],
      [expect.stringMatching(/^call_[0-9a-f]{24}$/), 'custom'],
    ]);
  });

  it('sends a scripted refusal and a scripted finish reason', async () => {
    const refused = await ask('refusing');
    expect(refused.choices[0]).toMatchObject({
      finish_reason: 'stop',
      message: { content: null, refusal: 'I cannot help with that.' },
    });
    const filtered = await ask('filtered');
    expect(filtered.choices[0]).toMatchObject({
      finish_reason: 'content_filter',
      message: { content: 'half' },
    });
  });

  it('sends a scripted reasoning text as message.reasoning_content beside the answer, and none unscripted', async () => {
    const thinking = await ask('thinking');
    expect(thinking.choices[0]!.message).toMatchObject({
      content: 'hello',
      reasoning_content: 'The user says hi; greet back.',
    });
    expect((await ask('refusing')).choices[0]!.message).not.toHaveProperty('reasoning_content');
    expect(() =>
      sim.addScenario({ name: 'bad-thinking', turns: [{ content: 'x', reasoning: 5 as never }] }),
    ).toThrow(/turns\[0\]\.reasoning/);
  });

  it('answers planning requests with steps that name tools', async () => {
    const res = await client(sim).chat.completions.create({
      model: 'planner-with-tools',
      messages: [{ role: 'user', content: 'plan' }],
      response_format: { type: 'json_object' },
    });
    expect(JSON.parse(res.choices[0]!.message.content!)).toEqual({
      steps: ['think', { title: 'look it up', tool: 'query_weather' }],
    });
  });
});

describe('random answers', () => {
  it('gives the same answer to the same request and different answers to different conversations', async () => {
    const a = await ask('random', 'conversation one');
    const b = await ask('random', 'conversation one');
    expect(b.choices[0]!.message).toEqual(a.choices[0]!.message);
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => ask('random', `c${i}`)));
    expect(new Set(answers.map((r) => JSON.stringify(r.choices[0]!.message))).size).toBeGreaterThan(10);
  });

  it('emits well-formed tool calls with offered and unknown names, JSON arguments and awkward ids', async () => {
    const answers = await Promise.all(Array.from({ length: 200 }, (_, i) => ask('random', `fuzz ${i}`)));
    const calls = answers.flatMap(
      (r) => (r.choices[0]!.message.tool_calls ?? []) as unknown as Array<Record<string, any>>,
    );
    expect(calls.length).toBeGreaterThan(200);
    for (const c of calls) {
      expect(typeof c.function.name).toBe('string');
      expect(() => JSON.parse(c.function.arguments as string)).not.toThrow();
    }
    const names = new Set(calls.map((c) => c.function.name as string));
    expect(names.has('query_weather') && names.has('noop')).toBe(true);
    expect([...names].some((n) => n !== 'query_weather' && n !== 'noop')).toBe(true);
    expect(calls.some((c) => !('id' in c))).toBe(true);
    expect(calls.some((c) => c.id === '')).toBe(true);
    expect(calls.some((c) => !('type' in c))).toBe(true);
    expect(calls.some((c) => /^call_t\d+_\d+$/.test(String(c.id)))).toBe(true);
    const withinOne = answers.some((r) => {
      const ids = (r.choices[0]!.message.tool_calls ?? []).map((c) => c.id).filter(Boolean);
      return new Set(ids).size < ids.length;
    });
    expect(withinOne).toBe(true);
    const reasons = new Set(answers.map((r) => r.choices[0]!.finish_reason));
    expect([...reasons].sort()).toEqual(['content_filter', 'length', 'stop', 'tool_calls']);
    expect(answers.some((r) => r.choices[0]!.message.refusal)).toBe(true);
    expect(answers.some((r) => (r.choices[0]!.message.tool_calls ?? []).length === 0)).toBe(true);
  });
});
