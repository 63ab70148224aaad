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
      'w.yaml: workflow "broken": node "b": input uses "{{weather}}"; a template may use {{request}} and {{nodes.ID.output}}',
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

describe('node input templates', () => {
  it('lists the nodes a template uses and the expressions it cannot resolve', () => {
    expect(templateRefs('{{ request }} {{nodes.a.output}} {{ nodes.b.output }} {{x}}')).toEqual({
      nodes: ['a', 'b'],
      unknown: ['x'],
    });
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
