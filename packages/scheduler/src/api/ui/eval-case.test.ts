import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
// @ts-expect-error: a plain ES module of the inspector's pages (no declarations).
import * as evalCaseModule from '../../../ui/eval-case.js';

interface Case {
  id: string;
  agent: string;
  input: string;
  model?: string;
  history?: string[];
  output_schema?: Record<string, unknown>;
  expect: Record<string, unknown>;
}
const { answerFragment, caseIdOf, datasetJsonl, datasetYaml, evalCase } = evalCaseModule as {
  answerFragment(answer: string | undefined, max?: number): string;
  caseIdOf(runId: string): string;
  datasetJsonl(c: Case): string;
  datasetYaml(c: Case): string;
  evalCase(
    request: Omit<Case, 'id' | 'expect'>,
    run: { run_id: string; status: string },
    events: Array<{ type: string; ok?: boolean; tool?: string }>,
    choice: { id: string; contains: string; tools: 'in_order' | 'as_set' | 'none'; status: boolean },
  ): Case;
};

/** Strings a YAML writer gets wrong when it writes them bare: each must come back as the same string. */
const TRICKY = [
  'yes',
  'no',
  'null',
  '~',
  '0x1F',
  '1e3',
  '- a list?',
  'key: value',
  '# not a comment',
  '  padded  ',
  'line one\nline two',
  'a "quoted" \\ backslash',
  '广州省周末天气怎么样',
  '',
  '@at *star &amp !bang %percent `tick`',
  'tab\there',
  '\u2028 separator',
];

describe("the playground's eval case", () => {
  const events = [
    { type: 'llm_request' },
    { type: 'tool_result', ok: false, tool: 'no_such_tool' },
    { type: 'tool_result', ok: true, tool: 'query_weather' },
    { type: 'tool_result', ok: true, tool: 'query_order_status' },
    { type: 'tool_result', ok: true, tool: 'query_weather' },
  ];
  const run = { run_id: 'run_1', status: 'succeeded' };
  const request = { agent: 'test_agent', input: 'Weather?', model: 'sim', history: ['hi'] };

  it('expects the tools the run reached, refused calls left out, in order or as a set as chosen', () => {
    const inOrder = evalCase(request, run, events, { id: '', contains: '', tools: 'in_order', status: true });
    expect(inOrder).toEqual({
      id: 'playground-run_1',
      ...request,
      expect: {
        status: 'succeeded',
        tools_in_order: ['query_weather', 'query_order_status', 'query_weather'],
      },
    });
    const asSet = evalCase(request, run, events, {
      id: 'mine',
      contains: ' sunny ',
      tools: 'as_set',
      status: false,
    });
    expect(asSet).toMatchObject({
      id: 'mine',
      expect: { tools_called: ['query_weather', 'query_order_status'], answer: { contains: ['sunny'] } },
    });
    expect(
      evalCase(request, run, events, { id: '', contains: '', tools: 'none', status: false }).expect,
    ).toEqual({});
  });

  it('writes YAML and JSONL that read back as the same case, whatever the strings hold', () => {
    const c = evalCase(
      {
        agent: 'test_agent',
        input: TRICKY.join(' | '),
        history: TRICKY,
        output_schema: {
          type: 'object',
          properties: Object.fromEntries(TRICKY.map((t, i) => [t || `empty${i}`, { const: t }])),
          required: [],
          additionalProperties: false,
        },
      },
      run,
      events,
      { id: '', contains: TRICKY[9]!, tools: 'in_order', status: true },
    );
    const yaml = parse(datasetYaml(c)) as { name: string; cases: Case[] };
    expect(yaml).toEqual({ name: 'playground', cases: [c] });
    const jsonl = datasetJsonl(c);
    expect(jsonl.endsWith('\n') && jsonl.indexOf('\n') === jsonl.length - 1).toBe(true);
    expect(JSON.parse(jsonl)).toEqual(c);
  });

  it('takes the first sentence of an answer as the fragment to expect, cut at a word', () => {
    expect(answerFragment('It is sunny in Hangzhou. Take a hat.')).toBe('It is sunny in Hangzhou.');
    expect(answerFragment('广州周末晴。记得带伞')).toBe('广州周末晴。');
    expect(answerFragment('## Done\n\n- restock')).toBe('## Done');
    expect(answerFragment('word '.repeat(30), 20)).toBe('word word word word');
    expect(answerFragment(undefined)).toBe('');
  });

  it('makes a case id the dataset accepts from any run id', () => {
    expect(caseIdOf('run_0f2/../x y')).toMatch(/^[A-Za-z0-9_.:-]{1,128}$/);
    expect(caseIdOf('run_' + 'a'.repeat(200)).length).toBeLessThanOrEqual(128);
  });
});
