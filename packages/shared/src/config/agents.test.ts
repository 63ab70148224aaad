import { describe, expect, it } from 'vitest';
import type { AgentReachError } from '@agent-reach/protocol';
import { parseAgents } from './agents.js';
import { parseConfigDocument } from './live-config.js';

const refused = (fn: () => unknown): AgentReachError => {
  try {
    fn();
  } catch (err) {
    return err as AgentReachError;
  }
  throw new Error('expected the configuration to be refused');
};

describe('parseAgents', () => {
  it('reports a misspelt field with a did-you-mean and still checks the tools of every agent', () => {
    const text = [
      'agents:',
      '  - name: planner',
      '    tols: [query_weather]',
      '  - name: helper',
      '    tools: [query_wether]',
      '    max_iteration: 3',
      'tool_groups:',
      '  slow: { concurency: 2 }',
    ].join('\n');
    const err = refused(() => parseAgents(text, 'a.yaml', ['query_weather']));
    expect(err.code).toBe('AGENTS_INVALID');
    expect(err.details).toEqual([
      'a.yaml: agent "planner": unknown field "tols" (did you mean "tools"?)',
      'a.yaml: agent "helper": unknown field "max_iteration" (did you mean "max_iterations"?)',
      'a.yaml: tool_groups.slow: unknown field "concurency" (did you mean "concurrency"?)',
      'a.yaml: agent "helper": tools[0] "query_wether" is not a registered tool (did you mean "query_weather"?)',
    ]);
  });

  it('names an agent without a name by its index, and a misspelt top-level key', () => {
    const top = refused(() => parseAgents('agent:\n  - tools: []\n', 'a.yaml'));
    expect(top.details).toEqual(['a.yaml: (top level): unknown field "agent" (did you mean "agents"?)']);
    const nameless = refused(() => parseAgents('agents:\n  - tools: []\n    nme: x\n', 'a.yaml'));
    expect(nameless.details).toEqual(['a.yaml: agents[0]: unknown field "nme" (did you mean "name"?)']);
  });
});

describe('parseConfigDocument', () => {
  it('lists a misspelt field, an unknown tool, an unknown agent and a cycle of one document at once', () => {
    const document = {
      agents: [
        { name: 'planner', tols: ['query_weather'] },
        { name: 'helper', tools: ['query_wether'] },
      ],
      workflows: [
        {
          name: 'trip',
          nodes: [
            { id: 'look', agent: 'plannr' },
            { id: 'p', agent: 'helper', depends_on: ['q'], input: '{{nodes.q.output}}' },
            { id: 'q', agent: 'helper', depends_on: ['p'], input: '{{nodes.p.output}}' },
          ],
        },
      ],
    };
    const err = refused(() => parseConfigDocument(document, 'fleet.yaml', { knownTools: ['query_weather'] }));
    expect(err.code).toBe('CONFIG_INVALID');
    expect(err.details).toEqual([
      'fleet.yaml: agent "planner": unknown field "tols" (did you mean "tools"?)',
      'fleet.yaml: agent "helper": tools[0] "query_wether" is not a registered tool (did you mean "query_weather"?)',
      'fleet.yaml: workflow "trip": node "look": agent "plannr" is not declared in the agents file (did you mean "planner"?)',
      'fleet.yaml: workflow "trip": depends_on has a cycle: p → q → p (each waits on the next, so none could ever start)',
    ]);
  });
});
