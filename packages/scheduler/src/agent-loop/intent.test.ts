import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadAgents } from '@agent-reach/shared';
import { classifyIntent, type Intent } from './intent.js';
import { buildVocabulary } from './vocabulary.js';
import { resolveLimits } from './run-agent.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../..');
const fixture = JSON.parse(readFileSync(path.join(ROOT, 'test/fixtures/intents.json'), 'utf8')) as {
  tools: string[];
  requests: Array<{ lang: 'zh' | 'en'; intent: Intent; input: string }>;
};
// The demo's vocabulary: its tools' names and the example requests its agents declare in config/agents.yaml.
const demo = loadAgents(path.join(ROOT, 'config/agents.yaml'));
const TOOLS = buildVocabulary({
  tools: fixture.tools.map((name) => ({ name })),
  examples: Object.assign({}, ...[...demo.agents.values()].map((a) => a.examples ?? {})),
});
const intentOf = (input: string, tools: Parameters<typeof classifyIntent>[1] = TOOLS) =>
  classifyIntent(input, tools).intent;

describe('classifyIntent', () => {
  it('classifies at least 90% of the labelled Chinese and English requests right, in each language', () => {
    expect(fixture.requests.length).toBeGreaterThanOrEqual(60);
    for (const lang of ['zh', 'en'] as const) {
      const rs = fixture.requests.filter((r) => r.lang === lang);
      const right = rs.filter((r) => intentOf(r.input) === r.intent).length;
      expect(right / rs.length).toBeGreaterThanOrEqual(0.9);
    }
  });

  it('answers greetings and general questions without a tool', () => {
    expect(classifyIntent('你好！', TOOLS)).toEqual({ intent: 'simple', signals: ['small_talk'] });
    expect(intentOf('hello')).toBe('simple');
    expect(intentOf('Why do orders sometimes arrive late?')).toBe('simple');
    expect(intentOf('什么是退款流程？')).toBe('simple');
  });

  it('takes one named tool with no sequence or enumeration as one tool call', () => {
    expect(classifyIntent('上海周末天气怎么样？', TOOLS)).toEqual({
      intent: 'single_tool',
      signals: ['one_tool'],
    });
    expect(intentOf('Where is my order ORD-100001?')).toBe('single_tool');
  });

  it('says multi-step for sequences, several tools, several things and numbered lists, with the signal', () => {
    expect(classifyIntent('先查北京天气，再写到文件里', TOOLS)).toMatchObject({
      intent: 'multi_step',
      signals: expect.arrayContaining(['sequence', 'several_tools']),
    });
    expect(classifyIntent('分别查一下北京、上海的天气', TOOLS).signals).toContain('several_things');
    expect(classifyIntent('Weather in Beijing and Shanghai, please', TOOLS).signals).toContain('enumeration');
    expect(classifyIntent('1. check ORD-1\n2. check ORD-2', TOOLS).signals).toContain('list');
  });

  it('knows an agent without tools can only answer, and a tool outside the known topics by its name', () => {
    expect(classifyIntent('check the weather, then write a file', [])).toEqual({
      intent: 'simple',
      signals: ['no_tools'],
    });
    const translator = [{ name: 'translate_text' }];
    expect(intentOf('please translate this sentence into German', translator)).toBe('single_tool');
    expect(intentOf('tell me a joke', translator)).toBe('simple');
  });

  it("names a tool by its description's and parameters' words and by an agent's examples, not only its name", () => {
    const payroll = buildVocabulary({
      tools: [
        {
          name: 'get_payslip',
          description: 'Monthly salary statement of one employee.',
          parameters: { type: 'object', properties: { month: { enum: ['january', 'february'] } } },
        },
      ],
      examples: { get_payslip: ['我这个月的工资条'] },
    });
    expect(classifyIntent('my salary for february', payroll)).toEqual({
      intent: 'single_tool',
      signals: ['one_tool'],
    });
    expect(classifyIntent('工资条在哪里', payroll).intent).toBe('single_tool');
    expect(intentOf('my salary for february')).toBe('simple');
  });
});

describe('intent among tools that act on one thing', () => {
  // A clinic's appointments: the tools differ by what they do to an appointment, not by what it is.
  const clinic = buildVocabulary({
    tools: [
      { name: 'book_appointment', description: 'Book an appointment with a doctor at a date and time.' },
      { name: 'cancel_appointment', description: 'Cancel an appointment by its id.' },
      { name: 'reschedule_appointment', description: 'Move an appointment to another date or time.' },
      { name: 'get_appointment', description: 'One appointment: doctor, room, date and time.' },
      { name: 'list_appointments', description: "The patient's appointments, upcoming and past." },
    ],
    examples: { book_appointment: ['给我挂一个牙科的号'], cancel_appointment: ['周四看牙的预约取消掉'] },
  });

  it('names one tool for one action on the thing, not every tool that knows its words', () => {
    expect(classifyIntent('帮我预约下周一上午的牙科', clinic)).toEqual({
      intent: 'single_tool',
      signals: ['one_tool'],
    });
    expect(classifyIntent('把周四看牙的预约改到周五', clinic)).toEqual({
      intent: 'single_tool',
      signals: ['one_tool'],
    });
  });

  it('asks for several steps when the request takes two actions in sequence', () => {
    expect(classifyIntent('先取消周四的预约，再帮我预约周五上午的', clinic)).toMatchObject({
      intent: 'multi_step',
      signals: expect.arrayContaining(['sequence', 'several_tools']),
    });
    expect(classifyIntent('Cancel my appointment and book a new one for Friday', clinic)).toEqual({
      intent: 'multi_step',
      signals: ['several_tools'],
    });
  });

  it('takes "all my appointments" as one call of a tool that lists, and each of several records as several', () => {
    expect(classifyIntent('列出我所有的预约', clinic).intent).toBe('single_tool');
    expect(classifyIntent('Show all my appointments', clinic).intent).toBe('single_tool');
    expect(classifyIntent('查一下每个预约的医生', clinic)).toMatchObject({
      intent: 'multi_step',
      signals: expect.arrayContaining(['several_things']),
    });
  });

  it('reads "my next appointment" as one thing and "next" between actions as a sequence', () => {
    expect(classifyIntent('When is my next appointment?', clinic).intent).toBe('single_tool');
    expect(classifyIntent('Where is the appointment next week?', clinic).intent).toBe('single_tool');
    expect(classifyIntent('Cancel my appointment, next book one on Friday', clinic)).toMatchObject({
      intent: 'multi_step',
      signals: expect.arrayContaining(['sequence']),
    });
  });
});

describe('intent of a request with a condition', () => {
  const courier = buildVocabulary({
    tools: [
      {
        name: 'track_parcel',
        description: 'Where a parcel is: its latest scan and status, by tracking number.',
      },
      { name: 'file_claim', description: 'Open a claim for a parcel that was lost or arrived damaged.' },
      {
        name: 'change_delivery',
        description: 'Change how an incoming parcel is delivered: another day or address.',
      },
    ],
  });

  it('takes a second action on a condition as a sequence, in Chinese and English', () => {
    for (const input of [
      '先帮我查下这个单号的物流，要是丢了就直接申请理赔',
      '看看包裹到哪了，还没发的话帮我改个地址',
      'Check where parcel 8823 is and, if it has not left the depot, redirect it to my office',
    ]) {
      expect(classifyIntent(input, courier)).toMatchObject({
        intent: 'multi_step',
        signals: expect.arrayContaining(['sequence']),
      });
    }
  });

  it('does not take the 及 of 来得及, or a count of what broke, for several things', () => {
    expect(classifyIntent('包裹还来得及改地址吗，来得及就帮我改到公司', courier).intent).toBe('single_tool');
    expect(classifyIntent('收到的包裹破了，里面的杯子碎了两个，怎么赔', courier).intent).toBe('single_tool');
    expect(classifyIntent('比较一下两个包裹的物流', courier)).toMatchObject({ intent: 'multi_step' });
  });
});

describe('iteration limit by intent', () => {
  it("is 15 for multi-step requests and 10 otherwise, and an agent's own max_iterations wins over both", () => {
    const agent = { name: 'a', tools: ['noop'] };
    expect(resolveLimits(agent, {}, 'multi_step').maxIterations).toBe(15);
    expect(resolveLimits(agent, {}, 'single_tool').maxIterations).toBe(10);
    expect(resolveLimits(agent, {}, 'simple').maxIterations).toBe(10);
    expect(resolveLimits({ ...agent, max_iterations: 8 }, {}, 'multi_step').maxIterations).toBe(8);
    expect(
      resolveLimits({ ...agent, max_iterations: 8 }, { maxIterations: 3 }, 'multi_step').maxIterations,
    ).toBe(3);
  });
});
