import { describe, expect, it } from 'vitest';
import type { NodeResult } from '@agent-reach/protocol';
import type { WorkflowNodeSpec } from '@agent-reach/shared';
import { lowConfidenceFrom, unneededNodes } from './coordinator.js';

const node = (id: string, depends_on: string[] = []): WorkflowNodeSpec => ({
  id,
  agent: 'x',
  input: '{{request}}',
  depends_on,
  timeout_ms: 1000,
  on_timeout: 'abort',
});
const defaulted: NodeResult = { status: 'defaulted', output: 'd', low_confidence: true, at: 0 };

describe('unneededNodes', () => {
  it('finds every node up a chain whose only dependant the watchdog gave a default, and never a final node', () => {
    // slow → mid → summary (defaulted while waiting) → final (running)
    const nodes = [node('final', ['summary']), node('summary', ['mid']), node('mid', ['slow']), node('slow')];
    const done = new Map([['summary', defaulted]]);
    expect(unneededNodes(nodes, done)).toEqual(
      new Map([
        ['mid', ['summary']],
        ['slow', ['summary']],
      ]),
    );
  });

  it('keeps a node another dependant still waits for', () => {
    // slow feeds both a (defaulted) and b (still waiting): b still needs it.
    const nodes = [node('slow'), node('a', ['slow']), node('b', ['slow']), node('end', ['a', 'b'])];
    expect(unneededNodes(nodes, new Map([['a', defaulted]]))).toEqual(new Map());
    expect(
      unneededNodes(
        nodes,
        new Map([
          ['a', defaulted],
          ['b', defaulted],
        ]),
      ),
    ).toEqual(new Map([['slow', ['a', 'b']]]));
  });
});

describe('lowConfidenceFrom', () => {
  it('names the defaulted nodes an input rests on, through answers made from them', () => {
    const done = new Map<string, NodeResult>([
      ['a', { ...defaulted, low_confidence_from: ['a'] }],
      ['b', { status: 'succeeded', output: 'b', low_confidence: true, low_confidence_from: ['a'], at: 0 }],
      ['c', { status: 'succeeded', output: 'c', low_confidence: false, at: 0 }],
    ]);
    expect(lowConfidenceFrom({ done }, ['b', 'c', 'a'])).toEqual(['a']);
    expect(lowConfidenceFrom({ done }, ['c'])).toEqual([]);
  });
});
