import { describe, expect, it } from 'vitest';
import { parseAgents } from './agents.js';
import { variantAgent, variantProblems } from './agent-variant.js';
import { loadConfig } from './config.js';

const AGENTS = parseAgents(
  `agents:
  - name: weather
    instructions: Be brief.
    tools: [query_weather, noop]
    max_iterations: 6
    loop: { repeat_limit: 3, max_failed_rounds: 4 }
  - name: other
    tools: [noop]
`,
  'agents.yaml',
);
const weather = AGENTS.agents.get('weather')!;
const CITY_SCHEMA = {
  type: 'object',
  properties: { city: { type: 'string', enum: ['广州', '上海'] } },
};
const check = (overrides: Record<string, unknown>) =>
  variantProblems(
    { agents: AGENTS, parametersOf: (tool) => (tool === 'query_weather' ? CITY_SCHEMA : undefined) },
    'weather',
    { name: 'v1', overrides },
  );

describe('variantAgent', () => {
  it("replaces the fields a variant sets, merges its loop settings over the agent's, and leaves the agent in force as it was", () => {
    const merged = variantAgent(weather, {
      instructions: 'Answer in one line.',
      max_iterations: 2,
      loop: { repeat_limit: 1 },
    });
    expect(merged).toMatchObject({
      name: 'weather',
      instructions: 'Answer in one line.',
      max_iterations: 2,
      tools: ['query_weather', 'noop'],
      loop: { repeat_limit: 1, max_failed_rounds: 4 },
    });
    expect(weather).toMatchObject({
      instructions: 'Be brief.',
      max_iterations: 6,
      loop: { repeat_limit: 3 },
    });
  });

  it('returns the agent itself when the run has no variant', () => {
    expect(variantAgent(weather, undefined)).toBe(weather);
  });
});

describe('variantProblems', () => {
  it('accepts a variant the agents file would accept merged', () => {
    expect(
      check({
        instructions: 'x',
        allowed_topic: ['weather'],
        topic_policy: 'warn',
        examples: { query_weather: ['rain in 广州?'] },
        tools: { query_weather: { description: 'd', aliases: { city: { 广州省: '广州' } } } },
      }),
    ).toEqual([]);
  });

  it('names a key a variant may not hold, with a guess', () => {
    const [problem] = check({ instruction: 'x' });
    expect(problem).toContain('overrides.instruction is not something a variant may override');
    expect(problem).toContain('did you mean "instructions"?');
  });

  it('names a tool the agent does not list, and aliases the tool schema refuses', () => {
    expect(check({ tools: { query_wether: { description: 'd' } } })[0]).toContain(
      'agent "weather" does not list tool "query_wether" (did you mean "query_weather"?)',
    );
    const aliases = check({ tools: { query_weather: { aliases: { city: { canton: 'Guangzhou' } } } } });
    expect(aliases[0]).toContain('overrides.tools.query_weather.aliases.city');
    expect(aliases[0]).toContain('Guangzhou');
  });

  it("reports the merged agent's problems as the agents file names them, and only that agent's", () => {
    const problems = check({ max_iterations: 0, examples: { billing: ['refund?'] } });
    expect(problems.length).toBe(2);
    expect(problems.every((p) => p.startsWith('variant "v1": agent "weather"'))).toBe(true);
    expect(problems.join('\n')).toContain('max_iterations');
    expect(problems.join('\n')).toContain('examples."billing"');
  });
});

describe('variant limits', () => {
  it("refuses a limit above the agent's own setting, naming it, and one above the fleet's where the agent sets none", () => {
    const own = check({ max_iterations: 7 });
    expect(own).toEqual([
      'overrides.max_iterations 7 is above what agent "weather" may use (6, its max_iterations in the agents file): a variant may lower a limit, never raise it; raise it in the agents file',
    ]);
    const fleet = variantProblems(
      {
        agents: AGENTS,
        ceilings: { max_iterations: 15, max_tokens: 1000, max_wall_time_ms: 5000, max_output_tokens: 300 },
      },
      'weather',
      {
        name: 'v1',
        overrides: { max_tokens: 1001, max_wall_time_ms: 5000, loop: { max_output_tokens: 301 } },
      },
    );
    expect(fleet).toHaveLength(2);
    expect(fleet[0]).toContain(
      'overrides.max_tokens 1001 is above what agent "weather" may use (1000, the fleet\'s RUN_TOKEN_BUDGET)',
    );
    expect(fleet[1]).toContain('overrides.loop.max_output_tokens 301');
  });

  it("accepts limits at or under the agent's", () => {
    expect(check({ max_iterations: 6, max_tokens: 200_000, loop: { max_output_tokens: 2000 } })).toEqual([]);
  });
});

describe('API_VARIANT_KEYS', () => {
  const env = {
    API_KEYS: 'ops:ops-key-0123456789abcdef,desk:desk-key-0123456789abcdef:weather',
    AGENTS_FILE: 'agents.yaml',
  };

  it('leaves `variants` unset (the default rule) without the variable, and marks exactly the listed keys with it', () => {
    expect(loadConfig(env).api.keys.map((k) => k.variants)).toEqual([undefined, undefined]);
    const marked = loadConfig({ ...env, API_VARIANT_KEYS: 'desk' }).api.keys;
    expect(marked.map((k) => [k.name, k.variants])).toEqual([
      ['ops', false],
      ['desk', true],
    ]);
  });

  it('refuses a name no key has', () => {
    expect(() => loadConfig({ ...env, API_VARIANT_KEYS: 'opz' })).toThrow(
      'API_VARIANT_KEYS names "opz", which is not a key of API_KEYS',
    );
  });
});
