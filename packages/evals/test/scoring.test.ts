import type { Run } from '@agent-reach/client';
import { describe, expect, it } from 'vitest';
import { createAjv } from '../src/ajv.js';
import { runFacts, scoreRun, type Expectations } from '../src/index.js';

type Step = { tool: string; args?: unknown; error?: string };

/** A finished run's record as GET /v1/runs/{id} shows it, with these calls. */
function run(steps: Step[], extra: Partial<Run> = {}): Run {
  return {
    run_id: 'run-1',
    agent: 'test_agent',
    status: 'succeeded',
    reason: 'final_answer',
    created_at: 1000,
    updated_at: 1800,
    iterations: steps.length + 1,
    cancel_requested: false,
    usage: { prompt_tokens: 80, completion_tokens: 20, total_tokens: 100 },
    pending_approvals: [],
    answer: 'It is sunny in Hangzhou.',
    steps: steps.map((s, i) => ({
      turn: i + 1,
      tool_call_id: `call_${i}`,
      tool: s.tool,
      arguments: JSON.stringify(s.args ?? {}),
      ok: s.error === undefined,
      ...(s.error ? { error_kind: s.error } : {}),
      duration_ms: 5,
      attempts: 1,
    })),
    ...extra,
  } as Run;
}

const ajv = createAjv();
const score = (e: Expectations, r: Run) => scoreRun(e, runFacts(r), ajv);
const checks = (e: Expectations, r: Run) => score(e, r).failures.map((f) => f.check);

describe('run facts', () => {
  it('counts first-try validity, self-healed arguments, unknown and forbidden calls', () => {
    const f = runFacts(
      run([
        { tool: 'query_weather', args: { city: '广州省' }, error: 'invalid_arguments' },
        { tool: 'query_weather', args: { city: '广州' } },
        { tool: 'qurey_weather', error: 'unknown_tool' },
        { tool: 'orders_write', error: 'forbidden' },
        { tool: 'write_markdown_file', error: 'invalid_arguments' },
      ]),
    );
    expect(f).toMatchObject({
      reached: ['query_weather'],
      validatable: 4,
      validFirstTry: 2,
      invalidArgs: 2,
      selfHealed: 1,
      unknownTools: 1,
      forbidden: 1,
      steps: 6,
      tokens: 100,
      latencyMs: 800,
    });
  });
});

describe('scoring a run against expectations', () => {
  const weather = run([
    { tool: 'query_weather', args: { city: '杭州', days: 2 } },
    { tool: 'write_markdown_file', args: { name: 'plan' } },
  ]);

  it('passes a run that meets every expectation, and says its tools were selected right', () => {
    const s = score(
      {
        tools_called: ['write_markdown_file', 'query_weather'],
        tools_in_order: ['query_weather', 'write_markdown_file'],
        tools_not_called: ['orders_write'],
        arguments: {
          query_weather: {
            city: { equals: '杭州' },
            days: { min: 1, max: 3 },
            $: { schema: { required: ['city'] } },
          },
        },
        status: 'succeeded',
        reason: 'final_answer',
        answer: { contains: ['sunny'], regex: ['Hang\\w+'], not_contains: ['rain'] },
        max_steps: 3,
        max_tokens: 100,
        max_latency_ms: 800,
      },
      weather,
    );
    expect(s).toEqual({ failures: [], toolsSelected: true });
  });

  it('fails each expectation that does not hold, naming what it found', () => {
    const s = score(
      {
        tools_called: ['query_order_status'],
        tools_in_order: ['write_markdown_file', 'query_weather'],
        tools_not_called: ['write_markdown_file'],
        arguments: { query_weather: { city: { regex: '^上海' } } },
        status: 'failed',
        answer: { contains: ['rain'], not_contains: ['sunny'] },
        max_steps: 2,
        max_tokens: 99,
      },
      weather,
    );
    expect(s.toolsSelected).toBe(false);
    expect(s.failures).toEqual([
      {
        check: 'tools_called',
        message: 'not called: query_order_status (called: query_weather, write_markdown_file)',
      },
      {
        check: 'tools_in_order',
        message:
          'expected write_markdown_file → query_weather in that order, called query_weather → write_markdown_file',
      },
      { check: 'tools_not_called', message: 'called: write_markdown_file' },
      {
        check: 'arguments',
        message: 'query_weather: no call matched: city is "杭州", which does not match /^上海/',
      },
      { check: 'status', message: 'status succeeded, expected failed' },
      { check: 'answer_contains', message: 'the answer does not contain "rain"' },
      { check: 'answer_not_contains', message: 'the answer contains "sunny"' },
      { check: 'max_steps', message: '3 steps, at most 2 allowed' },
      { check: 'max_tokens', message: '100 tokens, at most 99 allowed' },
    ]);
  });

  it('checks arguments on the valid call after an invalid one (self-healed), not on the refused one', () => {
    const healed = run([
      { tool: 'query_weather', args: { city: '广州省' }, error: 'invalid_arguments' },
      { tool: 'query_weather', args: { city: '广州' } },
    ]);
    expect(checks({ arguments: { query_weather: { city: '广州' } } }, healed)).toEqual([]);
    const never = run([{ tool: 'query_weather', args: { city: '广州省' }, error: 'invalid_arguments' }]);
    expect(score({ tools_called: ['query_weather'] }, never).failures[0]?.message).toBe(
      'not called: query_weather (called: none)',
    );
  });

  it('checks the structured output against a schema and field matchers', () => {
    const r = run([], { output: { city: 'Hangzhou', temp: 31 } });
    expect(
      checks(
        { output: { schema: { type: 'object', required: ['city'] }, fields: { temp: { max: 35 } } } },
        r,
      ),
    ).toEqual([]);
    expect(
      score({ output: { fields: { temp: { max: 30 }, 'wind.speed': { min: 0 } } } }, r).failures,
    ).toEqual([{ check: 'output', message: 'temp is 31, above 30; wind.speed is missing' }]);
    expect(checks({ output: { schema: { type: 'object' } } }, run([]))).toEqual(['output']);
  });

  it('leaves tool selection unmeasured for a case that expects nothing of tools', () => {
    expect(score({ answer: { contains: ['sunny'] } }, weather).toolsSelected).toBeUndefined();
  });
});
