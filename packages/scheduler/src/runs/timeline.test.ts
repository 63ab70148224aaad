import { describe, expect, it } from 'vitest';
import type { RunEvent } from '../agent-loop/events.js';
import { renderTimeline } from './timeline.js';

const T0 = 1_790_000_000_000;

/** A finished call of the weather tool, `at` ms into the run, with what the test gives it. */
function result(at: number, extra: Partial<Extract<RunEvent, { type: 'tool_result' }>>): RunEvent {
  return {
    type: 'tool_result',
    at: T0 + at,
    turn: 1,
    tool_call_id: `call_${at}`,
    tool: 'query_weather',
    arguments: '{"city":"Hangzhou"}',
    ok: true,
    kind: 'ok',
    duration_ms: 200,
    attempts: 1,
    answered: 'dispatched',
    ...extra,
  };
}

const render = (events: RunEvent[]) => renderTimeline(events.map((event, i) => ({ id: `${i}-0`, event })));

describe('the run timeline printed by the CLI', () => {
  it("prints a retried call's attempts, each with its outcome and duration, on a line under the call", () => {
    const lines = render([
      result(0, {
        duration_ms: 215,
        attempts: 2,
        attempt_log: [
          { attempt: 1, offset_ms: 0, duration_ms: 120, outcome: 'timeout' },
          { attempt: 2, offset_ms: 180, duration_ms: 35, outcome: 'ok' },
        ],
      }),
    ]).split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^\+\s+0 ms {4}ok\s+query_weather \[call_0\] 215 ms, 2 attempt\(s\)/);
    // Indented under the call's text, past the time column.
    expect(lines[1]).toBe(`${' '.repeat(12)}    attempts: 1 timeout 120 ms, 2 ok 35 ms`);
  });

  it('prints no attempts line for a call that took one attempt, or whose retries carry no timings', () => {
    const lines = render([
      result(0, {}),
      result(300, {
        attempts: 1,
        attempt_log: [{ attempt: 1, offset_ms: 0, duration_ms: 200, outcome: 'ok' }],
      }),
      result(600, { attempts: 3 }),
    ]).split('\n');
    expect(lines).toHaveLength(3);
    expect(lines.some((l) => l.includes('attempts:'))).toBe(false);
    expect(lines[2]).toContain('3 attempt(s)');
  });
});

describe('guardrail events in the timeline', () => {
  it('prints a blocked call with its guardrail, stage, tool, action and reason', () => {
    const line = render([
      {
        type: 'guardrail',
        at: T0,
        guardrail: 'no_exfiltration',
        stage: 'arguments',
        check: 'pii',
        verdict: 'tripped',
        action: 'blocked_call',
        reason: "the call's arguments hold PII: e-mail address l***@example.com",
        tool: 'http_post',
        tool_call_id: 'call_7',
        duration_ms: 0,
      },
    ]);
    expect(line).toMatch(
      /guardrail no_exfiltration tripped on the arguments of http_post \[call_7\]: blocked call: the call's arguments hold PII/,
    );
  });

  it("names a run's variant where the run started, and nothing when it has none", () => {
    const started = (variant?: { name: string; overrides: Record<string, unknown> }) =>
      render([
        {
          type: 'run_started',
          at: T0,
          agent: 'weather',
          input: 'rain?',
          model: 'gpt-4o-mini',
          ...(variant ? { variant } : {}),
        },
      ]);
    expect(started({ name: 'with-aliases', overrides: { max_iterations: 3 } })).toContain(
      'run started: agent weather (variant with-aliases), model gpt-4o-mini: rain?',
    );
    expect(started()).toContain('run started: agent weather, model gpt-4o-mini: rain?');
  });
  it('names the child run an agent-tool call started and answered by', () => {
    const lines = render([
      {
        type: 'child_run_started',
        at: T0,
        tool_call_id: 'call_5',
        tool: 'ask_researcher',
        agent: 'researcher',
        child_run_id: 'run_child',
        depth: 1,
      },
      result(5, {
        tool: 'ask_researcher',
        tool_call_id: 'call_5',
        answered: 'local',
        child_run_id: 'run_child',
      }),
    ]).split('\n');
    expect(lines[0]).toMatch(
      /child run run_child of researcher started for ask_researcher \[call_5\], depth 1$/,
    );
    expect(lines[1]).toContain(
      'ask_researcher [call_5] 200 ms, 1 attempt(s), answered by child run run_child',
    );
  });

  it("prints a plan request and a guardrail agent's request with their tokens and the model that answered", () => {
    const usage = { latency_ms: 40, prompt_tokens: 120, completion_tokens: 30 } as const;
    const lines = render([
      { type: 'llm_usage', at: T0, purpose: 'plan', model: 'm', ...usage },
      {
        type: 'llm_usage',
        at: T0 + 5,
        purpose: 'guardrail',
        guardrail: 'pii_judge',
        model: 'm',
        ...usage,
        answered_by: 'openai/gpt',
        cost: 0.0012,
      },
    ]).split('\n');
    expect(lines[0]).toMatch(/plan request: 40 ms, 120\+30 tokens$/);
    expect(lines[1]).toMatch(
      /guardrail pii_judge request: 40 ms, 120\+30 tokens; answered by openai\/gpt, cost /,
    );
  });
});
