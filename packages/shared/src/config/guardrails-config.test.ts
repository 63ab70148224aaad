import { describe, expect, it } from 'vitest';
import { AgentReachError } from '@agent-reach/protocol';
import { parseAgents } from './agents.js';
import { toolPatternMatches } from './guardrails-config.js';

/** The problems `parseAgents` reports for a document, or [] when it accepts it. */
function problems(doc: unknown, knownTools?: string[]): string[] {
  try {
    parseAgents(JSON.stringify(doc), 'agents.yaml', knownTools);
    return [];
  } catch (err) {
    expect(err).toBeInstanceOf(AgentReachError);
    expect((err as AgentReachError).code).toBe('AGENTS_INVALID');
    return [...(err as AgentReachError).details];
  }
}

const agent = (guardrails: unknown, extra: Record<string, unknown> = {}) => ({
  agents: [
    { name: 'desk', tools: ['send_email', 'http_post', 'lookup'], guardrails, ...extra },
    { name: 'judge', tools: [] },
  ],
});

describe('guardrails in the agents file', () => {
  it('accepts each kind of check at each stage, and makes a guardrail tool reachable without offering it', () => {
    const file = parseAgents(
      JSON.stringify(
        agent({
          input: [
            { name: 'short', max_length: 4000 },
            { name: 'terms', blocked_terms: ['AcmeCorp'] },
            { name: 'keys', regex: { pattern: 'sk-[a-z0-9]+', flags: 'i' } },
            { name: 'pii_in', pii: ['all'] },
          ],
          output: [
            { name: 'moderation', tool: 'moderate_text', on_error: 'fail_open', timeout_ms: 2000 },
            { name: 'judged', agent: 'judge' },
          ],
          tool: [{ name: 'no_exfil', tools: ['send_*', 'http_post'], stage: 'arguments', pii: ['email'] }],
        }),
      ),
      'agents.yaml',
    );
    expect(file.reachable('desk').has('moderate_text')).toBe(true);
    expect(file.agents.get('desk')?.tools).not.toContain('moderate_text');
  });

  it('names the agent, the guardrail and the field of every problem at once', () => {
    const found = problems(
      agent({
        input: [
          { name: 'nothing' },
          { name: 'two', max_length: 10, pii: ['email'] },
          { name: 'bad_regex', regex: '(unclosed' },
          { name: 'two', blocked_terms: ['x'] },
          { name: 'judged', agent: 'jugde' },
          { name: 'self', agent: 'desk' },
        ],
        output: [{ name: 'pii_out', pii: ['emails'] }],
        tool: [
          { name: 'typo', tools: ['send_emial'], pii: ['email'] },
          { name: 'glob', tools: ['ftp_*'], pii: ['email'] },
          { name: 'no_tools', pii: ['email'] },
        ],
      }),
    );
    const expected = [
      'agent "desk": guardrails.input[0] "nothing": declares no check: give exactly one of max_length, blocked_terms, regex, pii, tool, agent',
      'agent "desk": guardrails.input[1] "two": declares max_length and pii: give exactly one check',
      'agent "desk": guardrails.input[2] "bad_regex": regex does not compile',
      'agent "desk": guardrails.input[3] "two": name is used by another guardrail of this agent',
      'agent "desk": guardrails.input[4] "judged": agent "jugde" is not an agent of this file (did you mean "judge"?)',
      'agent "desk": guardrails.input[5] "self": agent "desk" is the agent itself',
      'agent "desk": guardrails.output.0.pii.0 must be one of',
      'agent "desk": guardrails.tool[0] "typo": tools[0] "send_emial" is not one of the agent\'s tools (did you mean "send_email"?)',
      'agent "desk": guardrails.tool[1] "glob": tools[0] "ftp_*" matches none of the agent\'s tools',
      'agent "desk": guardrails.tool.2 must have required property \'tools\'',
    ];
    for (const e of expected)
      expect(
        found.some((p) => p.includes(e)),
        `${e}\n  in\n${found.join('\n')}`,
      ).toBe(true);
  });

  it('refuses a guardrail tool no executor registers when the registered tools are known', () => {
    const found = problems(agent({ input: [{ name: 'moderation', tool: 'moderate_txt' }] }), [
      'send_email',
      'http_post',
      'lookup',
      'moderate_text',
    ]);
    expect(found).toEqual([
      'agents.yaml: agent "desk": guardrail tool "moderate_txt" is not a registered tool',
    ]);
  });

  it('refuses a regular expression that can backtrack exponentially, naming it and how to rewrite it', () => {
    const found = problems(
      agent({
        input: [
          { name: 'nested', regex: '(a+)+$' },
          { name: 'words', regex: { pattern: '^(\\w+\\s?)*$', flags: 'i' } },
          { name: 'linear', regex: 'sk-[a-z0-9]{16,}' },
        ],
      }),
    );
    expect(found).toEqual([
      'agents.yaml: agent "desk": guardrails.input[0] "nested": regex /(a+)+$/ may take exponential time on some texts (a quantifier over a group that holds another, such as (a+)+, or more than 25 quantifiers): rewrite it without nested quantifiers, e.g. (a+)+ as a+',
      'agents.yaml: agent "desk": guardrails.input[1] "words": regex /^(\\w+\\s?)*$/ may take exponential time on some texts (a quantifier over a group that holds another, such as (a+)+, or more than 25 quantifiers): rewrite it without nested quantifiers, e.g. (a+)+ as a+',
    ]);
  });

  it('takes run_in_parallel on input guardrails and the agent only, and lets tool guardrails watch agent tools', () => {
    expect(
      problems(
        agent(
          {
            run_in_parallel: true,
            input: [{ name: 'judged', agent: 'judge', run_in_parallel: false }],
            tool: [{ name: 'child_pii', tools: ['ask_judge'], stage: 'result', pii: ['email'] }],
          },
          { agent_tools: ['judge'] },
        ),
      ),
    ).toEqual([]);
    const found = problems(agent({ output: [{ name: 'late', max_length: 5, run_in_parallel: true }] }));
    expect(found).toEqual([
      'agents.yaml: agent "desk": guardrails.output.0: unknown field "run_in_parallel"',
    ]);
  });

  it('matches tool names and globs exactly, escaping every other character', () => {
    expect(toolPatternMatches('send_*', 'send_email')).toBe(true);
    expect(toolPatternMatches('send_*', 'resend_email')).toBe(false);
    expect(toolPatternMatches('http_po?t', 'http_post')).toBe(true);
    expect(toolPatternMatches('a.b', 'axb')).toBe(false);
    expect(toolPatternMatches('lookup', 'lookup_all')).toBe(false);
  });
});
