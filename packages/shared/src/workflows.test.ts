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
    const err = invalid(() => parseWorkflows(text, 'w.yaml', ['test_agent']));
    expect(err.details).toEqual([
      'w.yaml: workflow "broken": node "d": on_timeout must be "abort" or { default: TEXT }',
    ]);
    const fixed = text.replace('on_timeout: retry', 'on_timeout: { default: none }');
    const all = invalid(() => parseWorkflows(fixed, 'w.yaml', ['test_agent']));
    expect(all.details).toEqual([
      'w.yaml: workflow "broken": node "a": agent "test_agnt" is not declared in the agents file (did you mean "test_agent"?)',
      'w.yaml: workflow "broken": node "b": depends_on[1] "z" is not a node of this workflow (did you mean "a"?)',
      'w.yaml: workflow "broken": node "b": input uses "{{weather}}"; a template may use {{request}} and {{nodes.ID.output}}',
      'w.yaml: workflow "broken": node "b": input uses nodes.c.output but "c" is not in depends_on',
      'w.yaml: workflow "broken": node "c": input is required for a node with dependencies (a template over their outputs)',
    ]);
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
