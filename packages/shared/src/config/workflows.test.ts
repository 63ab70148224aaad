import { describe, expect, it } from 'vitest';
import type { AgentReachError } from '@agent-reach/protocol';
import { findCycle, parseWorkflows, renderNodeInput, templateRefs } from './workflows.js';

const invalid = (fn: () => unknown): AgentReachError => {
  try {
    fn();
  } catch (err) {
    return err as AgentReachError;
  }
  throw new Error('expected the workflows file to be refused');
};

describe('parseWorkflows', () => {
  it('lists every problem at once, each naming the workflow, the node and the field', () => {
    const text = `
workflows:
  - name: broken
    nodes:
      - id: a
        agent: test_agnt
      - id: b
        agent: test_agent
        depends_on: [a, z]
        input: '{{nodes.a.output}} {{nodes.c.output}} {{weather}}'
      - id: c
        agent: test_agent
        depends_on: [b]
      - id: d
        agent: test_agent
        on_timeout: retry
`;
    const all = invalid(() => parseWorkflows(text, 'w.yaml', ['test_agent']));
    // A field the schema refuses (d's on_timeout) does not hide the problems of the other nodes.
    expect(all.details).toEqual([
      'w.yaml: workflow "broken": node "d": on_timeout must be "abort" or { default: TEXT }',
      'w.yaml: workflow "broken": node "a": agent "test_agnt" is not declared in the agents file (did you mean "test_agent"?)',
      'w.yaml: workflow "broken": node "b": depends_on[1] "z" is not a node of this workflow (did you mean "a"?)',
      'w.yaml: workflow "broken": node "b": input uses "{{weather}}"; a template may use {{request}}, {{nodes.ID.output}} and {{nodes.ID.output.FIELD}}',
      'w.yaml: workflow "broken": node "b": input uses nodes.c.output but "c" is not in depends_on',
      'w.yaml: workflow "broken": node "c": input is required for a node with dependencies (a template over their outputs)',
    ]);
  });

  it('reports a misspelt field with a did-you-mean together with an unknown agent and a cycle', () => {
    const text = `
workflows:
  - name: ring
    nodes:
      - id: a
        agent: plannr
        depend_on: [c]
      - id: b
        agent: planner
        depends_on: [a]
        input: '{{nodes.a.output}}'
        timout_ms: 100
      - id: c
        agent: planner
        depends_on: [b]
        input: '{{nodes.b.output}}'
      - id: d
        agent: planner
        depends_on: [c]
        input: '{{nodes.c.output}}'
  - name: loop
    nodes:
      - { id: x, agent: planner, depends_on: [y], input: '{{nodes.y.output}}' }
      - { id: y, agent: planner, depends_on: [x], input: '{{nodes.x.output}}' }
`;
    const err = invalid(() => parseWorkflows(text, 'w.yaml', ['planner']));
    expect(err.code).toBe('WORKFLOWS_INVALID');
    expect(err.details).toEqual([
      'w.yaml: workflow "ring": node "a": unknown field "depend_on" (did you mean "depends_on"?)',
      'w.yaml: workflow "ring": node "b": unknown field "timout_ms" (did you mean "timeout_ms"?)',
      'w.yaml: workflow "ring": node "a": agent "plannr" is not declared in the agents file (did you mean "planner"?)',
      'w.yaml: workflow "loop": depends_on has a cycle: x → y → x (each waits on the next, so none could ever start)',
    ]);
  });

  it('refuses a node model that is not allowed, with a did-you-mean, and checks none without a list', () => {
    const text = `
workflows:
  - name: w
    nodes:
      - { id: a, agent: planner, model: gpt-4o-mni }
      - { id: b, agent: planner, model: gpt-4o }
`;
    const err = invalid(() =>
      parseWorkflows(text, 'w.yaml', ['planner'], { allowedModels: ['gpt-4o', 'gpt-4o-mini'] }),
    );
    expect(err.details).toEqual([
      'w.yaml: workflow "w": node "a": model "gpt-4o-mni" is not an allowed model (ALLOWED_MODELS: gpt-4o, gpt-4o-mini) (did you mean "gpt-4o-mini"?)',
    ]);
    const { workflows } = parseWorkflows(text, 'w.yaml', ['planner']);
    expect(workflows.get('w')?.nodes.map((n) => n.model)).toEqual(['gpt-4o-mni', 'gpt-4o']);
  });

  it('accepts a node declared after the nodes that depend on it, with defaults filled in', () => {
    const { workflows } = parseWorkflows(
      'workflows:\n  - name: w\n    nodes:\n      - { id: b, agent: x, depends_on: [a], input: "{{nodes.a.output}}" }\n      - { id: a, agent: x }\n',
      'w.yaml',
      ['x'],
    );
    expect(workflows.get('w')?.nodes).toEqual([
      {
        id: 'b',
        agent: 'x',
        input: '{{nodes.a.output}}',
        depends_on: ['a'],
        timeout_ms: 600_000,
        on_timeout: 'abort',
      },
      { id: 'a', agent: 'x', input: '{{request}}', depends_on: [], timeout_ms: 600_000, on_timeout: 'abort' },
    ]);
  });
});

describe('findCycle', () => {
  it('names the first cycle in declaration order, its first node repeated at the end', () => {
    const nodes = [
      { id: 'start', depends_on: [] },
      { id: 'procurement', depends_on: ['start', 'inventory'] },
      { id: 'inventory', depends_on: ['finance'] },
      { id: 'finance', depends_on: ['procurement'] },
    ];
    expect(findCycle(nodes)).toEqual(['procurement', 'inventory', 'finance', 'procurement']);
  });

  it('finds none in a diamond', () => {
    const nodes = [
      { id: 'a', depends_on: [] },
      { id: 'b', depends_on: ['a'] },
      { id: 'c', depends_on: ['a'] },
      { id: 'd', depends_on: ['b', 'c'] },
    ];
    expect(findCycle(nodes)).toBeUndefined();
  });
});

describe('fields of node outputs', () => {
  const CITY = {
    type: 'object',
    additionalProperties: false,
    required: ['city'],
    properties: { city: { type: 'string' } },
  };
  const workflow = (extra: string) => `
workflows:
  - name: brief
    nodes:
      - id: weather
        agent: forecaster
${extra}
      - id: summary
        agent: writer
        depends_on: [weather]
        input: 'for {{ nodes.weather.output.city }} and {{ nodes.weather.output.town }}'
`;

  it("refuses a field that the dependency's output schema cannot have, naming the node and the field", () => {
    const err = invalid(() =>
      parseWorkflows(workflow(''), 'w.yaml', ['forecaster', 'writer'], {
        agentOutputSchemas: new Map([['forecaster', CITY]]),
      }),
    );
    expect(err.details).toEqual([
      'w.yaml: workflow "brief": node "summary": input uses nodes.weather.output.town but the output schema of node "weather" cannot have it: the output has no field "town" (its fields: city)',
    ]);
  });

  it('refuses fields of a dependency that declares no output schema, and checks a node-level schema', () => {
    const none = invalid(() =>
      parseWorkflows(workflow(''), 'w.yaml', ['forecaster', 'writer'], { agentOutputSchemas: new Map() }),
    );
    expect(none.details).toEqual([
      'w.yaml: workflow "brief": node "summary": input uses nodes.weather.output.city but node "weather" declares no output schema (output_schema on the node or on its agent "forecaster"), so its output has no fields',
      'w.yaml: workflow "brief": node "summary": input uses nodes.weather.output.town but node "weather" declares no output schema (output_schema on the node or on its agent "forecaster"), so its output has no fields',
    ]);
    const own =
      '        output_schema: { type: object, properties: { city: { type: string }, town: { type: string } } }';
    const parsed = parseWorkflows(workflow(own), 'w.yaml', ['forecaster', 'writer'], {
      agentOutputSchemas: new Map(),
    });
    expect(parsed.workflows.get('brief')?.nodes[0]?.output_schema).toMatchObject({ type: 'object' });
    const bad = invalid(() =>
      parseWorkflows(workflow('        output_schema: { type: object, propertys: {} }'), 'w.yaml', [
        'forecaster',
        'writer',
      ]),
    );
    expect(bad.details).toEqual([
      'w.yaml: workflow "brief": node "weather": output_schema is not a usable JSON Schema: strict mode: unknown keyword: "propertys"',
    ]);
  });
});

describe('node input templates', () => {
  it('lists the nodes a template uses and the expressions it cannot resolve', () => {
    expect(templateRefs('{{ request }} {{nodes.a.output}} {{ nodes.b.output }} {{x}}')).toEqual({
      nodes: ['a', 'b'],
      fields: [],
      unknown: ['x'],
    });
    expect(templateRefs('{{nodes.a.output.city}} {{ nodes.a.output.days.0.temp }}').fields).toEqual([
      { node: 'a', path: ['city'] },
      { node: 'a', path: ['days', '0', 'temp'] },
    ]);
  });

  it("fills a field of a node's JSON output, and leaves a missing one empty", () => {
    const outputs = new Map([
      [
        'w',
        {
          output: '```json\n{"city": "Oslo", "days": [{"temp": 3}], "tags": ["cold"]}\n```',
          low_confidence: false,
        },
      ],
    ]);
    expect(
      renderNodeInput(
        '{{nodes.w.output.city}} {{nodes.w.output.days.0.temp}} {{nodes.w.output.tags}} [{{nodes.w.output.wind}}]',
        'r',
        outputs,
      ),
    ).toBe('Oslo 3 ["cold"] []');
  });

  it('marks a low-confidence output where a later node sees it, and leaves confident ones as they are', () => {
    const outputs = new Map([
      ['a', { output: '12 crates', low_confidence: false }],
      [
        'b',
        {
          output: 'unknown',
          low_confidence: true,
          note: 'node b timed out after 5 ms; this is its declared default',
        },
      ],
    ]);
    expect(
      renderNodeInput('{{request}}: {{nodes.a.output}} / {{ nodes.b.output }}', 'restock', outputs),
    ).toBe(
      'restock: 12 crates / [low_confidence: node b timed out after 5 ms; this is its declared default] unknown',
    );
  });
});
