import type { Run } from '@agent-reach/client';
import type { AttemptFacts, EvalCaseResult } from '@agent-reach/protocol';
import { describe, expect, it } from 'vitest';
import { runFacts, taskCompletion, variantMetrics, type Expectations } from '../src/index.js';

/** A finished run's record as GET /v1/runs/{id} shows it: these tools called, each successfully. */
function finished(tools: string[], extra: Partial<Run> = {}): Run {
  return {
    run_id: 'run-1',
    agent: 'city_assistant',
    status: 'succeeded',
    reason: 'final_answer',
    created_at: 1000,
    updated_at: 1800,
    iterations: tools.length + 1,
    cancel_requested: false,
    usage: { prompt_tokens: 80, completion_tokens: 20, total_tokens: 100 },
    pending_approvals: [],
    answer: 'Done.',
    steps: tools.map((tool, i) => ({
      turn: i + 1,
      tool_call_id: `call_${i}`,
      tool,
      arguments: '{}',
      ok: true,
      duration_ms: 5,
      attempts: 1,
    })),
    ...extra,
  } as Run;
}

const THREE: Expectations = {
  tools_in_order: ['query_air_quality', 'query_forecast', 'write_markdown_file'],
};
const stack = (done: boolean[]) =>
  ['query_air_quality', 'query_forecast', 'write_markdown_file'].map((tool, i) => ({
    title: `step ${i + 1}`,
    tool,
    done: done[i] ?? false,
  }));

describe('task completion', () => {
  it('counts a run that did every step of its task stack and every required tool as complete, a step an earlier run of its session left open aside', () => {
    const run = finished(['query_air_quality', 'query_forecast', 'write_markdown_file'], {
      tasks: [
        { title: 'mail the plan', tool: 'send_email', done: false, carried: true },
        ...stack([true, true, true]),
      ],
    });
    expect(taskCompletion(THREE, runFacts(run))).toEqual({ complete: true, open: [] });
  });

  it('counts a succeeded run that left a step of its task stack open as not complete, naming the step', () => {
    const run = finished(['query_air_quality', 'query_forecast'], {
      reason: 'tasks_incomplete',
      tasks: stack([true, true, false]),
    });
    expect(taskCompletion({}, runFacts(run))).toEqual({
      complete: false,
      open: ['step 3 (write_markdown_file)'],
    });
  });

  it('holds a run planned without the task stack to the tools its case requires', () => {
    const run = finished(['query_air_quality']);
    expect(taskCompletion(THREE, runFacts(run))).toEqual({
      complete: false,
      open: ['query_forecast (required)', 'write_markdown_file (required)'],
    });
  });

  it('counts a run that did not succeed as not complete, whatever it did', () => {
    const run = finished(['query_air_quality', 'query_forecast', 'write_markdown_file'], {
      status: 'failed',
      reason: 'llm_error',
      tasks: stack([true, true, true]),
    });
    expect(taskCompletion(THREE, runFacts(run))).toEqual({ complete: false, open: [] });
  });

  it("computes a variant's task_completion from each attempt's tasks, and an older report's from status and reason", () => {
    const attempt = (facts: Partial<AttemptFacts>) => ({
      run_id: 'run-1',
      passed: true,
      failures: [],
      steps: 1,
      tokens: 1,
      cost: 0,
      latency_ms: 1,
      facts: {
        status: 'succeeded',
        tools: [],
        validatable_calls: 0,
        valid_first_try: 0,
        invalid_args: 0,
        self_healed: 0,
        unknown_tool_calls: 0,
        forbidden_calls: 0,
        ...facts,
      },
    });
    const cases: EvalCaseResult[] = [
      { id: 'a', attempts: [attempt({ tasks_complete: true })] },
      { id: 'b', attempts: [attempt({ tasks_complete: false, open_tasks: ['x (required)'] })] },
      { id: 'c', attempts: [attempt({ reason: 'final_answer' })] },
      { id: 'd', attempts: [attempt({ reason: 'tasks_incomplete' })] },
    ];
    const metrics = variantMetrics(cases);
    expect(metrics.counts?.task_completion).toEqual([2, 4]);
    expect(metrics.task_completion).toBe(0.5);
  });
});
