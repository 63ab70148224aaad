import { describe, expect, it } from 'vitest';
import { EvalInputError, parseDataset } from '../src/index.js';

function problemsOf(text: string, file = 'cases.yaml', agent?: string): string[] {
  try {
    parseDataset(text, file, agent ? { agent } : {});
  } catch (err) {
    if (err instanceof EvalInputError) return [...err.problems];
    throw err;
  }
  return [];
}

describe('datasets', () => {
  it('reads a YAML dataset, giving cases the dataset agent and short matchers their equals form', () => {
    const d = parseDataset(
      [
        'name: weather',
        'agent: test_agent',
        'cases:',
        '  - id: hz',
        '    input: weather in Hangzhou',
        '    expect:',
        '      tools_called: [query_weather]',
        '      arguments: { query_weather: { city: 杭州, days: { min: 1, max: 3 } } }',
        '      answer: { contains: sunny }',
      ].join('\n'),
      'weather.yaml',
    );
    expect(d.name).toBe('weather');
    expect(d.cases[0]).toMatchObject({
      id: 'hz',
      agent: 'test_agent',
      expect: {
        arguments: { query_weather: { city: { equals: '杭州' }, days: { min: 1, max: 3 } } },
        answer: { contains: ['sunny'] },
      },
    });
  });

  it('reads JSONL, a case a line, named after the file, the agent from --agent', () => {
    const d = parseDataset(
      '{"id":"a","input":"x"}\n\n{"id":"b","input":"y","agent":"other"}\n',
      'dir/smoke.jsonl',
      {
        agent: 'test_agent',
      },
    );
    expect(d.name).toBe('smoke');
    expect(d.cases.map((c) => [c.id, c.agent])).toEqual([
      ['a', 'test_agent'],
      ['b', 'other'],
    ]);
  });

  it('names the case, the field and the line of every schema problem at once', () => {
    const problems = problemsOf(
      [
        'agent: test_agent',
        'cases:',
        '  - id: ok',
        '    input: fine',
        '  - id: bad-one',
        '    input: x',
        '    expect:',
        '      tools_caled: [a]',
        '      max_steps: -1',
      ].join('\n'),
    );
    expect(problems).toContain(
      'cases.yaml: case "bad-one" (line 8): expect: must NOT have additional properties "tools_caled"',
    );
    expect(
      problems.some((p) =>
        p.startsWith('cases.yaml: case "bad-one" (line 9): expect.max_steps: must be >= 0'),
      ),
    ).toBe(true);
    expect(problems).toHaveLength(2);
  });

  it('names the JSONL line of a case that is not JSON and of a case missing its input', () => {
    expect(problemsOf('{"id":"a","input":"x"}\n{oops\n', 'c.jsonl', 'test_agent')).toEqual([
      expect.stringMatching(/^c\.jsonl: line 2: not JSON: /),
    ]);
    expect(problemsOf('{"id":"a","input":"x"}\n{"id":"b"}\n', 'c.jsonl', 'test_agent')).toEqual([
      'c.jsonl: case "b" (line 2): (the case): must have required property \'input\'',
    ]);
  });

  it('refuses duplicate ids, a case without an agent, a bad regex, a bad schema and min above max', () => {
    const problems = problemsOf(
      [
        'cases:',
        '  - { id: a, input: x, agent: test_agent }',
        '  - id: a',
        '    input: y',
        '    expect:',
        '      answer: { regex: "([" }',
        '      output: { schema: { type: nope } }',
        '      arguments: { t: { n: { min: 5, max: 1 } } }',
      ].join('\n'),
    );
    expect(problems).toEqual([
      expect.stringMatching(/case "a" \(line 3\): id: the id of case #1 too/),
      expect.stringMatching(/case "a" \(line 3\): agent: no agent/),
      expect.stringMatching(/case "a" \(line 6\): expect\.answer\.regex: not a regular expression/),
      expect.stringMatching(/case "a" \(line 7\): expect\.output\.schema: not a usable JSON Schema/),
      expect.stringMatching(/case "a" \(line 8\): expect\.arguments\.t\.n: min 5 is above max 1/),
    ]);
  });

  it('reports YAML syntax errors with their line, and a document that is not a mapping', () => {
    expect(problemsOf('cases:\n  - id: a\n   input: [\n')[0]).toMatch(/^cases\.yaml: line \d+: /);
    expect(problemsOf('- a\n- b\n')).toEqual([
      'cases.yaml: the dataset must be a mapping with a "cases" list',
    ]);
  });

  it('keeps the eval tags out of a case metadata', () => {
    expect(problemsOf('agent: a\ncases:\n  - { id: a, input: x, metadata: { eval_case: z } }\n')[0]).toMatch(
      /case "a" \(line 3\): metadata/,
    );
  });
});
