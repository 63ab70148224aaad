import { afterEach, beforeEach } from 'vitest';
import type { RunState } from '@agent-reach/scheduler';
import { createRunState, RunStore } from '@agent-reach/scheduler/internal';
import { testRedis } from '@agent-reach/testing';

export type TestRedis = ReturnType<typeof testRedis>;

/**
 * A run store on a fresh key prefix of the real Redis for each test of the calling `describe` (records
 * kept 60 s), cleaned up after it; returns what the current test uses.
 */
export function useRunStore(): () => { t: TestRedis; store: RunStore } {
  let current: { t: TestRedis; store: RunStore } | undefined;
  beforeEach(() => {
    const t = testRedis();
    current = { t, store: new RunStore(t.redis, t.keys, { retentionS: 60 }) };
  });
  afterEach(async () => {
    await current?.t.cleanup();
  });
  return () => current as { t: TestRedis; store: RunStore };
}

/** A run of `agent_a` asked "hello", running. */
export function runningRun(runId = 'run_a'): RunState {
  const state = createRunState({ runId, agent: 'agent_a', input: 'hello', deadlineMs: 60_000 });
  state.status = 'running';
  return state;
}

/** Ends a run with the model's final answer `answer` (its next checkpoint is its last). */
export function endWithAnswer(state: RunState, answer: string): void {
  state.messages.push({ role: 'assistant', content: answer });
  state.outcome = {
    status: 'succeeded',
    reason: 'final_answer',
    answer,
    usage: state.usage,
    iterations: 2,
    steps: state.steps,
  };
  state.status = 'succeeded';
}
