import { describe, expect, it } from 'vitest';
import type { AgentReachError } from '@agent-reach/protocol';
import { parseAgents } from './agents.js';
import { agentToolTargets } from './agent-tools-config.js';

const refused = (text: string): AgentReachError => {
  try {
    parseAgents(text, 'a.yaml');
  } catch (err) {
    return err as AgentReachError;
  }
  throw new Error('expected the configuration to be refused');
};

describe('agent_tools in the agents file', () => {
  it('names every problem at once: an unknown agent with a did-you-mean, the agent itself, a target twice, a clashing tool name', () => {
    const err = refused(
      [
        'agents:',
        '  - name: planner',
        '    tools: [ask_helper]',
        '    agent_tools: [reseacher, planner, researcher, {agent: researcher, name: other}, helper]',
        '  - name: researcher',
        '    tools: []',
        '  - name: helper',
        '    tools: []',
      ].join('\n'),
    );
    expect(err.code).toBe('AGENTS_INVALID');
    expect(err.details).toEqual([
      'a.yaml: agent "planner": agent_tools[0] "reseacher" is not a declared agent (did you mean "researcher"?)',
      'a.yaml: agent "planner": agent_tools[1] "planner" calls the agent itself',
      'a.yaml: agent "planner": agent_tools[3] "researcher" is listed twice',
      'a.yaml: agent "planner": agent_tools[4]: the tool name "ask_helper" is also one of the agent\'s tools',
    ]);
  });

  it('refuses a malformed entry, a tool name the providers would not accept and a depth out of range', () => {
    const err = refused(
      [
        'agents:',
        '  - name: planner',
        '    tools: []',
        '    max_agent_depth: 0',
        '    agent_tools: [{agent: researcher, name: "ask researcher"}, {agent: researcher, timeout: 3}]',
        '  - name: researcher',
        '    tools: []',
      ].join('\n'),
    );
    const text = (err.details as string[]).join('\n');
    expect(text).toContain('agent "planner": max_agent_depth');
    expect(text).toContain('agent_tools.0.name');
    expect(text).toContain('agent_tools.1');
  });

  it('gives each target its tool name: ask_<agent> unless declared', () => {
    const file = parseAgents(
      [
        'agents:',
        '  - name: planner',
        '    tools: []',
        '    agent_tools: [researcher, {agent: writer, name: draft, description: Drafts text.}]',
        '  - name: researcher',
        '    tools: []',
        '  - name: writer',
        '    tools: []',
      ].join('\n'),
      'a.yaml',
    );
    expect(agentToolTargets(file.agents.get('planner')!)).toEqual([
      { agent: 'researcher', name: 'ask_researcher' },
      { agent: 'writer', name: 'draft', description: 'Drafts text.' },
    ]);
  });
});
