import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type OpenAI from 'openai';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import { startLlmSim, validateScenario, type LlmSim, type NoisyMistake } from '../src/index.js';
import { client, functionCalls, postRaw } from './helpers.js';
import {
  CITIES,
  fileTool,
  firstCallValid,
  mailTool,
  playTask,
  toolResult,
  weatherQuestions,
  weatherTool,
} from './noisy-helpers.js';

let sim: LlmSim;
let openai: OpenAI;
beforeAll(async () => {
  sim = await startLlmSim({
    scenarios: [
      {
        name: 'always-drifts',
        turns: [],
        noisy: { seed: 1, rates: { enum_drift: 1, enum_drift_hinted: 1 } },
      },
      {
        name: 'careful',
        turns: [],
        noisy: { rates: { hallucinated_tool: 0, enum_drift: 0, unknown_field: 0 } },
      },
    ],
  });
  openai = client(sim);
});
afterAll(async () => sim.close());

const QUESTIONS = weatherQuestions(300);
const THREE_STEPS = (city: string, i: number) =>
  `先查一下${city}天气，然后写一份周末出行建议存成 md 文件，最后发邮件通知我 #${i}`;
const TASK_STACK =
  '## Task stack\n1. [ ] Query the weather (tool: query_weather)  <- current\n2. [ ] Write the plan (tool: write_markdown_file)\n3. [ ] Send the email (tool: send_email)';

async function firstCall(model: string, question: string, tools: ChatCompletionTool[]) {
  const res = await openai.chat.completions.create({
    model,
    messages: [{ role: 'user', content: question }],
    tools,
  });
  const [call] = functionCalls(res);
  return { call: call!, mistakes: (sim.requests.at(-1)?.mistakes ?? []) as NoisyMistake[] };
}

/** The first calls of every question, one seed per question, with or without the aliases and examples. */
async function askAll(hints: boolean) {
  const tools = [weatherTool(hints)];
  const out = [];
  for (const [i, q] of QUESTIONS.entries()) out.push(await firstCall(`sim-noisy-${i}`, q, tools));
  return out.map((c) => ({ ...c, valid: firstCallValid(tools, c.call.name, c.call.arguments) }));
}

/** Each side asked once (the answers are the same every time): several tests read them. */
const asked = new Map<boolean, ReturnType<typeof askAll>>();
const firstCalls = (hints: boolean) => {
  if (!asked.has(hints)) asked.set(hints, askAll(hints));
  return asked.get(hints)!;
};

describe('the noisy model', () => {
  it('answers the same request with the same call, id included, and another seed differently somewhere', async () => {
    const tools = [weatherTool(false), fileTool];
    const a = await Promise.all(QUESTIONS.slice(0, 40).map((q) => firstCall('sim-noisy-7', q, tools)));
    const b = await Promise.all(QUESTIONS.slice(0, 40).map((q) => firstCall('sim-noisy-7', q, tools)));
    const c = await Promise.all(QUESTIONS.slice(0, 40).map((q) => firstCall('sim-noisy-8', q, tools)));
    expect(b.map((x) => x.call)).toEqual(a.map((x) => x.call));
    expect(c.map((x) => x.call.arguments)).not.toEqual(a.map((x) => x.call.arguments));
  });

  it('picks the tool a request is about and fills the enum argument from its text', async () => {
    const tools = [fileTool, mailTool, weatherTool(true)];
    const { call } = await firstCall('careful', '广州天气怎么样？', tools);
    expect(call.name).toBe('query_weather');
    expect(JSON.parse(call.arguments)).toEqual({ city: '广州' });
    const file = await firstCall('careful', '把这段话存成 notes.md 文件', tools);
    expect(file.call.name).toBe('write_markdown_file');
    expect(JSON.parse(file.call.arguments)).toMatchObject({ path: 'notes.md' });
  });

  it('sends about a third of first calls invalid without aliases or examples, and about one in twenty with them', async () => {
    const bare = await firstCalls(false);
    const hinted = await firstCalls(true);
    const rate = (xs: Array<{ valid: boolean }>) => xs.filter((x) => !x.valid).length / xs.length;
    expect(rate(bare)).toBeGreaterThan(0.27);
    expect(rate(bare)).toBeLessThan(0.43);
    expect(rate(hinted)).toBeGreaterThan(0.01);
    expect(rate(hinted)).toBeLessThan(0.11);
    // The same draws on both sides: every call the hints leave wrong was wrong without them too.
    hinted.forEach((h, i) => {
      if (!h.valid) expect(bare[i]!.valid).toBe(false);
    });
  });

  it("makes the seeds' mistakes: cities outside the enum, near-miss tool names, invented fields", async () => {
    const bare = await firstCalls(false);
    const mistakes = bare.flatMap((c) => c.mistakes);
    const drifted = mistakes.filter((m) => m.kind === 'enum_drift').map((m) => m.sent as string);
    expect(drifted.length).toBeGreaterThan(50);
    for (const value of drifted) {
      expect(CITIES).not.toContain(value);
      expect(CITIES.some((c) => value.startsWith(c) && /^[市省]$/.test(value.slice(c.length)))).toBe(true);
    }
    expect(drifted).toContain('广州省');
    const names = mistakes.filter((m) => m.kind === 'hallucinated_tool').map((m) => m.sent);
    expect(names.length).toBeGreaterThan(2);
    for (const name of names) expect(['get_weather', 'query_weathr', 'query_weather_info']).toContain(name);
    expect(mistakes.some((m) => m.kind === 'unknown_field')).toBe(true);
    // What the record says matches what was sent.
    for (const c of bare) expect(c.valid).toBe(c.mistakes.length === 0);
  });

  it('sends numbers as strings more often without examples than with them', async () => {
    const ask = async (hints: boolean) => {
      let drift = 0;
      for (let i = 0; i < 200; i += 1) {
        const { call } = await firstCall(`sim-noisy-${i}`, `查一下${CITIES[i % 6]}未来 3 天的天气`, [
          weatherTool(hints),
        ]);
        if (typeof JSON.parse(call.arguments).days === 'string') drift += 1;
      }
      return drift / 200;
    };
    const bare = await ask(false);
    const hinted = await ask(true);
    expect(bare).toBeGreaterThan(0.12);
    expect(bare).toBeLessThan(0.3);
    expect(hinted).toBeLessThan(0.06);
  });

  it('corrects a refused call on the next turn when the error names the problem, rarely when it does not', async () => {
    const tools = [weatherTool(false)];
    const healed = async (vague: boolean) => {
      let wrong = 0;
      let fixed = 0;
      for (const [i, { call, valid }] of (await firstCalls(false)).entries()) {
        const q = QUESTIONS[i]!;
        if (valid) continue;
        wrong += 1;
        const result = toolResult(tools, call.name, call.arguments, vague);
        const res = await openai.chat.completions.create({
          model: `sim-noisy-${i}`,
          tools,
          messages: [
            { role: 'user', content: q },
            {
              role: 'assistant',
              content: null,
              tool_calls: [{ id: call.id, type: 'function', function: call }],
            },
            { role: 'tool', tool_call_id: call.id, content: JSON.stringify(result) },
          ],
        });
        const [next] = functionCalls(res);
        if (next && firstCallValid(tools, next.name, next.arguments)) fixed += 1;
      }
      return { wrong, rate: fixed / wrong };
    };
    const named = await healed(false);
    const vague = await healed(true);
    expect(named.wrong).toBeGreaterThan(60);
    expect(named.rate).toBeGreaterThan(0.88);
    expect(vague.rate).toBeLessThan(0.5);
  });

  it('completes about four in ten three-step tasks without the task stack and most with it', async () => {
    const tools = [weatherTool(true), fileTool, mailTool];
    const completion = async (system?: string) => {
      let done = 0;
      for (let i = 0; i < 200; i += 1) {
        const task = THREE_STEPS(CITIES[i % 6]!, i);
        const { succeeded } = await playTask(openai, `sim-noisy-${i}`, task, {
          tools,
          ...(system ? { system } : {}),
        });
        if (['query_weather', 'write_markdown_file', 'send_email'].every((t) => succeeded.includes(t)))
          done += 1;
      }
      return done / 200;
    };
    const without = await completion();
    const withStack = await completion(`You are a helper.\n\n${TASK_STACK}`);
    expect(without).toBeGreaterThan(0.3);
    expect(without).toBeLessThan(0.55);
    expect(withStack).toBeGreaterThan(0.75);
    expect(withStack).toBeLessThan(0.95);
  });

  it('draws afresh when sent back after answering with a step left out, so most reminded tasks go on', async () => {
    const tools = [weatherTool(true), fileTool, mailTool];
    const remind = 'Guard: you gave a final answer, but steps of the task stack are still open.';
    let forgot = 0;
    let wentOn = 0;
    for (let i = 0; i < 150; i += 1) {
      const task = THREE_STEPS(CITIES[i % 6]!, i);
      // The task stack in the prompt both times: the reminder changes nothing of the rate, only the draw.
      const plain = await playTask(openai, `sim-noisy-${i}`, task, { tools, system: TASK_STACK });
      if (plain.succeeded.length === 3) continue;
      forgot += 1;
      const sentBack = await playTask(openai, `sim-noisy-${i}`, task, { tools, system: TASK_STACK, remind });
      // The same turns up to the first answer: only the reminder changes what comes after.
      expect(sentBack.succeeded.slice(0, plain.succeeded.length)).toEqual(plain.succeeded);
      if (sentBack.succeeded.length > plain.succeeded.length) wentOn += 1;
    }
    expect(forgot).toBeGreaterThan(8);
    expect(wentOn / forgot).toBeGreaterThan(0.6);
  }, 60_000);

  it('calls the steps of a task in the order the request gives them', async () => {
    const tools = [mailTool, fileTool, weatherTool(true)];
    const task = '先查一下上海天气，然后写一份周末出行建议存成 md 文件，最后发邮件通知我';
    const { succeeded } = await playTask(openai, 'careful', task, { tools, system: TASK_STACK });
    expect(succeeded).toEqual(['query_weather', 'write_markdown_file', 'send_email']);
  });

  it('makes one call per enum value when a request names several', async () => {
    const tools = [weatherTool(true), fileTool];
    const messages: ChatCompletionMessageParam[] = [{ role: 'user', content: '对比一下北京和上海的天气' }];
    const cities: unknown[] = [];
    for (let turn = 0; turn < 4; turn += 1) {
      const res = await openai.chat.completions.create({ model: 'careful', messages, tools });
      const [call] = functionCalls(res);
      if (call === undefined) break;
      cities.push(JSON.parse(call.arguments).city);
      messages.push(
        { role: 'assistant', content: null, tool_calls: [{ id: call.id, type: 'function', function: call }] },
        {
          role: 'tool',
          tool_call_id: call.id,
          content: JSON.stringify(toolResult(tools, call.name, call.arguments)),
        },
      );
    }
    expect(cities).toEqual(['北京', '上海']);
  });

  it('sends a refused call it cannot correct once more, then answers with the error', async () => {
    const tools = [weatherTool(true)];
    const refusal = {
      ok: false,
      error: { kind: 'invalid_arguments', message: 'the file was busy', field: '/city' },
    };
    const messages: ChatCompletionMessageParam[] = [{ role: 'user', content: '广州天气怎么样？' }];
    const sent: string[] = [];
    for (let turn = 0; turn < 4; turn += 1) {
      const res = await openai.chat.completions.create({ model: 'careful', messages, tools });
      const [call] = functionCalls(res);
      if (call === undefined) {
        expect(res.choices[0]!.message.content).toContain('the file was busy');
        break;
      }
      sent.push(call.arguments);
      messages.push(
        { role: 'assistant', content: null, tool_calls: [{ id: call.id, type: 'function', function: call }] },
        { role: 'tool', tool_call_id: call.id, content: JSON.stringify(refusal) },
      );
    }
    expect(sent).toEqual(['{"city":"广州"}', '{"city":"广州"}']);
  });

  it('answers a run with an output schema with JSON of its shape, filled from what the tools returned', async () => {
    const tools = [weatherTool(true)];
    const response_format = {
      type: 'json_schema' as const,
      json_schema: {
        name: 'trip_output',
        schema: {
          type: 'object',
          properties: {
            city: { type: 'string' },
            high_c: { type: 'integer' },
            days: { type: 'integer', minimum: 1 },
            advice: { type: 'string' },
          },
          required: ['city', 'high_c', 'days', 'advice'],
        },
      },
    };
    const messages: ChatCompletionMessageParam[] = [{ role: 'user', content: '广州天气怎么样？' }];
    const first = await openai.chat.completions.create({
      model: 'careful',
      messages,
      tools,
      response_format,
    });
    const [call] = functionCalls(first);
    messages.push(
      { role: 'assistant', content: null, tool_calls: [{ id: call!.id, type: 'function', function: call! }] },
      {
        role: 'tool',
        tool_call_id: call!.id,
        content: JSON.stringify({ ok: true, content: { city: '广州', high_c: 27, summary: '晴' } }),
      },
    );
    const final = await openai.chat.completions.create({
      model: 'careful',
      messages,
      tools,
      response_format,
    });
    const output = JSON.parse(final.choices[0]!.message.content!) as Record<string, unknown>;
    expect(output).toMatchObject({ city: '广州', high_c: 27, days: 1 });
    expect(output.advice).toContain('query_weather: 晴');
  });

  it('answers a planning request with the steps of the request, naming the tools', async () => {
    const res = await openai.chat.completions.create({
      model: 'sim-noisy',
      response_format: { type: 'json_object' },
      messages: [
        {
          role: 'system',
          content: 'Plan.\nAvailable tools: query_weather, write_markdown_file, send_email.',
        },
        { role: 'user', content: '查一下北京天气，然后写一份出行建议存成 md 文件' },
      ],
    });
    const plan = JSON.parse(res.choices[0]!.message.content!) as { steps: Array<{ tool?: string }> };
    expect(plan.steps.map((s) => s.tool)).toEqual(['query_weather', 'write_markdown_file']);
  });

  it('answers an unknown model name with a 404 that names the noisy models', async () => {
    const res = await postRaw(sim, { model: 'sim-noisy-x', messages: [{ role: 'user', content: 'hi' }] });
    expect(res.status).toBe(404);
    expect(res.error?.code).toBe('model_not_found');
    expect(res.error?.message).toContain('sim-noisy, sim-noisy-<seed of 1-15 digits>');
  });

  it('uses the rates a scenario sets', async () => {
    for (const q of QUESTIONS.slice(0, 20)) {
      const { call } = await firstCall('always-drifts', q, [weatherTool(true)]);
      expect(CITIES).not.toContain(JSON.parse(call.arguments).city);
    }
  });

  it('refuses a scenario whose noisy rates are out of range or unknown, naming each field', () => {
    expect(() =>
      validateScenario(
        { name: 'x', turns: [], noisy: { seed: 'a', rates: { enum_drift: 2, typo: 0.1 } } },
        'inline',
      ),
    ).toThrow(
      /noisy\.seed: must be a number[\s\S]*noisy\.rates\.typo: unknown field[\s\S]*noisy\.rates\.enum_drift: must be a number between 0 and 1/,
    );
  });
});
