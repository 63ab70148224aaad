import { writeFile, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { AgentReachError, defineTool, Type, toolJobId } from '@agent-reach/protocol';
import { loadAgents, loadConfig, parseAgents, ToolRegistry } from '@agent-reach/shared';

const ok = defineTool({
  name: 'lookup',
  description: 'Looks a thing up.',
  parameters: Type.Object({ id: Type.String({ format: 'uuid' }) }, { additionalProperties: false }),
  handler: ({ id }) => ({ id }),
});

const codeOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    return { code: (err as AgentReachError).code, message: (err as Error).message };
  }
  throw new Error('expected a throw');
};

describe('tool registration', () => {
  it('exports the OpenAI function-calling spec for the requested names only, in order', () => {
    const reg = new ToolRegistry().register(ok, { ...ok, name: 'other' });
    const spec = reg.openAiTools(['other', 'missing', 'lookup']);
    expect(spec.map((s) => s.function.name)).toEqual(['other', 'lookup']);
    expect(JSON.parse(JSON.stringify(spec[1]))).toEqual({
      type: 'function',
      function: {
        name: 'lookup',
        description: 'Looks a thing up.',
        parameters: {
          type: 'object',
          additionalProperties: false,
          required: ['id'],
          properties: { id: { type: 'string', format: 'uuid' } },
        },
      },
    });
  });

  it('compiles schemas with formats on: a malformed uuid fails validation', () => {
    const tool = new ToolRegistry().register(ok).get('lookup');
    expect(tool?.validate({ id: 'not-a-uuid' })).toBe(false);
    expect(tool?.validate({ id: '123e4567-e89b-12d3-a456-426614174000' })).toBe(true);
  });

  const bad: Array<[string, object, RegExp]> = [
    ['a bad name', { name: 'has space' }, /tool "has space": name must match/],
    ['a zero timeout', { timeoutMs: 0 }, /tool "lookup": timeoutMs must be a number > 0/],
    ['a negative timeout', { timeoutMs: -5 }, /timeoutMs must be a number > 0/],
    ['zero attempts', { retry: { maxAttempts: 0 } }, /tool "lookup": retry.maxAttempts must be an integer/],
    ['an unknown backoff', { retry: { backoff: 'exponential' } }, /retry.backoff must be "linear"/],
    ['a bad group', { group: 'Bad Group' }, /tool "lookup": group must match/],
    [
      'a non-object schema',
      { parameters: { type: 'string' } },
      /tool "lookup": parameters must be a JSON Schema with type "object"/,
    ],
    [
      'an invalid schema',
      { parameters: { type: 'object', properties: { a: { type: 'strin' } } } },
      /tool "lookup": parameters is not a valid JSON Schema/,
    ],
    ['an empty description', { description: ' ' }, /tool "lookup": description must be a non-empty string/],
  ];
  for (const [what, patch, message] of bad) {
    it(`fails at registration with TOOL_DEFINITION_INVALID for ${what}`, () => {
      const err = codeOf(() => new ToolRegistry().register({ ...ok, ...patch } as typeof ok));
      expect(err.code).toBe('TOOL_DEFINITION_INVALID');
      expect(err.message).toMatch(message);
    });
  }

  it('refuses to register the same name twice', () => {
    expect(codeOf(() => new ToolRegistry().register(ok, ok)).code).toBe('TOOL_DUPLICATE');
  });

  it('derives job ids from run and call without colons', () => {
    expect(toolJobId('run:1', 'call:a')).toBe('run_1.call_a');
  });
});

describe('config loading', () => {
  it('applies defaults and freezes the result', () => {
    const c = loadConfig({});
    expect(c.redisUrl).toBe('redis://127.0.0.1:6379');
    expect(c.executor.concurrency).toBe(50);
    expect(c.executor.groups).toBeUndefined();
    expect(loadConfig({ EXECUTOR_GROUPS: 'default, slow' }).executor.groups).toEqual(['default', 'slow']);
    expect(Object.isFrozen(c.executor)).toBe(true);
  });

  it('reports every bad variable at once, by its name', () => {
    const err = codeOf(() =>
      loadConfig({ EXECUTOR_CONCURRENCY: 'many', REDIS_URL: 'http://x', EXECUTOR_GROUPS: 'a,B C' }),
    );
    expect(err.code).toBe('CONFIG_INVALID');
    expect(err.message).toMatch(/EXECUTOR_CONCURRENCY must be integer/);
    expect(err.message).toMatch(/REDIS_URL must match pattern/);
    expect(err.message).toMatch(/EXECUTOR_GROUPS must match pattern/);
  });
});

describe('agents file', () => {
  it('gives each agent its reachable set and nothing to an unknown agent', () => {
    const a = parseAgents('agents:\n  - name: a\n    tools: [x, y]\n', 'agents.yaml', ['x', 'y']);
    expect([...a.reachable('a')]).toEqual(['x', 'y']);
    expect(a.reachable('b').size).toBe(0);
  });

  it('names the file, the agent and the field of each problem', () => {
    const text =
      'agents:\n  - name: ok_agent\n    tools: [x]\n    max_iterations: 0\n  - name: other\n    tool: [x]\n';
    const err = codeOf(() => parseAgents(text, 'conf/agents.yaml'));
    expect(err.code).toBe('AGENTS_INVALID');
    expect(err.message).toMatch(/conf\/agents.yaml: agent "ok_agent": max_iterations must be >= 1/);
    // The misspelt field is one problem, with a did-you-mean, not also a missing `tools`.
    expect(err.message).toMatch(
      /conf\/agents.yaml: agent "other": unknown field "tool" \(did you mean "tools"\?\)/,
    );
    expect(err.message).not.toMatch(/required property 'tools'/);
  });

  it('refuses a tool that is not registered, suggesting the closest name', () => {
    const err = codeOf(() =>
      parseAgents('agents:\n  - name: a\n    tools: [query_wether]\n', 'a.yaml', ['query_weather']),
    );
    expect(err.message).toBe(
      'a.yaml: agent "a": tools[0] "query_wether" is not a registered tool (did you mean "query_weather"?)',
    );
  });

  it('reports unreadable files and broken YAML with the file name', async () => {
    expect(codeOf(() => loadAgents('/nonexistent/agents.yaml')).message).toMatch(
      /\/nonexistent\/agents.yaml: cannot read/,
    );
    const dir = await mkdtemp(path.join(tmpdir(), 'ar-agents-'));
    const file = path.join(dir, 'agents.yaml');
    await writeFile(file, 'agents: [\n');
    expect(codeOf(() => loadAgents(file)).message).toMatch(/agents.yaml: not valid YAML/);
  });

  it('accepts the shipped agents file against the demo tools', () => {
    const a = loadAgents('config/agents.yaml', [
      'query_weather',
      'write_markdown_file',
      'get_full_result',
      'query_order_status',
    ]);
    expect([...a.agents.keys()]).toEqual(['trip_planner', 'customer_service_agent']);
  });
});
