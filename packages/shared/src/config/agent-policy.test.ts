import { describe, expect, it } from 'vitest';
import type { AgentReachError } from '@agent-reach/protocol';
import { parseAgents } from './agents.js';

const problemsOf = (text: string): string[] => {
  try {
    parseAgents(text, 'a.yaml', ['query_weather', 'noop']);
  } catch (err) {
    return (err as AgentReachError).details as string[];
  }
  throw new Error('expected the configuration to be refused');
};

describe('agent policy fields', () => {
  it('accepts topics with a policy, examples by tool or topic, loop settings and context providers', () => {
    const file = parseAgents(
      [
        'agents:',
        '  - name: helper',
        '    tools: [query_weather, noop]',
        '    allowed_topic: [weather]',
        '    topic_policy: warn',
        '    examples: { query_weather: ["明天下雨吗"], weather: ["is it sunny"] }',
        '    loop: { repeat_limit: 2, max_argument_fix_rounds: 5, max_output_tokens: 500 }',
        '    context_providers: [{ tool: noop, arguments: { value: "{{input}}" }, required: true }]',
      ].join('\n'),
      'a.yaml',
      ['query_weather', 'noop'],
    );
    expect(file.agents.get('helper')).toMatchObject({
      topic_policy: 'warn',
      loop: { repeat_limit: 2, max_argument_fix_rounds: 5, max_output_tokens: 500 },
      context_providers: [{ tool: 'noop', required: true }],
    });
  });

  it('reports every policy problem at once, naming the agent and the field', () => {
    expect(
      problemsOf(
        [
          'agents:',
          '  - name: helper',
          '    tools: [query_weather]',
          '    topic_policy: refuse',
          '    examples: { noop: ["do nothing"] }',
          '    loop: { repeat_limit: 0, max_failed_round: 2 }',
          '    context_providers: [{ tool: noop }]',
        ].join('\n'),
      ),
    ).toEqual([
      'a.yaml: agent "helper": loop: unknown field "max_failed_round" (did you mean "max_failed_rounds"?)',
      'a.yaml: agent "helper": loop.repeat_limit must be >= 1',
      'a.yaml: agent "helper": topic_policy "refuse" needs allowed_topic',
      `a.yaml: agent "helper": context_providers[0].tool "noop" is not one of the agent's tools`,
      'a.yaml: agent "helper": examples."noop" names neither one of the agent\'s tools nor one of its allowed_topic',
    ]);
  });

  it('refuses a topic policy other than refuse or warn', () => {
    const [problem] = problemsOf(
      'agents:\n  - name: helper\n    tools: [noop]\n    allowed_topic: [x]\n    topic_policy: block\n',
    );
    expect(problem).toBe('a.yaml: agent "helper": topic_policy must be one of "refuse", "warn"');
  });
});
