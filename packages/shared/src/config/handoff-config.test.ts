import { describe, expect, it } from 'vitest';
import type { AgentReachError } from '@agent-reach/protocol';
import { parseAgents } from './agents.js';
import { handoffTargets } from './handoff-config.js';

const refused = (text: string): AgentReachError => {
  try {
    parseAgents(text, 'a.yaml');
  } catch (err) {
    return err as AgentReachError;
  }
  throw new Error('expected the configuration to be refused');
};

describe('handoffs in the agents file', () => {
  it('reads bare names and full entries, with their descriptions and input filters', () => {
    const file = parseAgents(
      [
        'agents:',
        '  - name: triage',
        '    tools: []',
        '    handoffs:',
        '      - billing',
        '      - { agent: technical, description: devices, input_filter: { last_n: 4 } }',
        '    handoff_reach: configured',
        '    loop: { max_handoffs: 3 }',
        '  - { name: billing, tools: [], handoffs: [{ agent: technical, input_filter: summary }] }',
        '  - { name: technical, tools: [] }',
      ].join('\n'),
      'a.yaml',
    );
    const triage = file.agents.get('triage')!;
    expect(handoffTargets(triage)).toEqual([
      { agent: 'billing' },
      { agent: 'technical', description: 'devices', input_filter: { last_n: 4 } },
    ]);
    expect(triage.handoff_reach).toBe('configured');
    expect(triage.loop?.max_handoffs).toBe(3);
  });

  it('names an unknown target with a did-you-mean, a handoff to the agent itself and a target listed twice', () => {
    const err = refused(
      [
        'agents:',
        '  - name: triage',
        '    tools: []',
        '    handoffs: [biling, triage, technical, technical]',
        '  - { name: billing, tools: [] }',
        '  - { name: technical, tools: [] }',
      ].join('\n'),
    );
    expect(err.code).toBe('AGENTS_INVALID');
    expect(err.details).toEqual([
      'a.yaml: agent "triage": handoffs[0] "biling" is not a declared agent (did you mean "billing"?)',
      'a.yaml: agent "triage": handoffs[1] "triage" hands off to the agent itself',
      'a.yaml: agent "triage": handoffs[3] "technical" is listed twice',
    ]);
  });

  it('refuses a malformed input filter, reach or max_handoffs by field', () => {
    const err = refused(
      [
        'agents:',
        '  - name: triage',
        '    tools: []',
        '    handoffs: [{ agent: billing, input_filter: { last_n: 0 } }]',
        '    handoff_reach: anyone',
        '    loop: { max_handoffs: 0 }',
        '  - { name: billing, tools: [] }',
      ].join('\n'),
    );
    const text = (err.details as string[]).join('\n');
    expect(text).toContain('handoffs.0');
    expect(text).toContain('handoff_reach');
    expect(text).toContain('loop.max_handoffs');
  });
});
