import { RunLost } from './checkpoints.js';
import type { RunContext } from './run-context.js';
import type { NextStep } from './steps.js';
import { withCauses } from '../model/llm.js';
import { ModelCallFailed } from '../model/provider-failure.js';
import { AllModelsFailed } from '../model/providers.js';

/**
 * Where a model call that failed after the SDK's retries (a turn or the plan) leads: cancelled if the run
 * was, the `deadline` guard if the run's deadline aborted it, else `llm_error`.
 */
export function llmFailed(
  run: RunContext,
  err: unknown,
  turn: number,
  started: number,
  deadline?: AbortSignal,
): NextStep {
  const { deps, state } = run;
  if (deps.release?.aborted) throw new RunLost();
  if (deps.signal?.aborted) return { type: 'cancel' };
  const e = err as { status?: number };
  // A provider's failure already names the provider, the model, the URL and the causes.
  const message =
    err instanceof ModelCallFailed || err instanceof AllModelsFailed ? err.message : withCauses(err);
  const late = deadline?.aborted === true || Date.now() >= state.deadlineAt;
  run.emit({
    type: 'llm_error',
    turn,
    model: deps.llm.model,
    latency_ms: Math.round(performance.now() - started),
    message: late ? 'aborted at the run deadline' : message.slice(0, 2000),
    ...(typeof e.status === 'number' ? { status: e.status } : {}),
    ...(err instanceof AllModelsFailed ? { fallback: err.skipped } : {}),
  });
  if (late) {
    return {
      type: 'guard_stop',
      stop: {
        guard: 'deadline',
        status: 'not_converged',
        report: 'the run passed its wall-clock deadline while waiting for the model',
      },
    };
  }
  run.log.error({ err }, 'LLM call failed after its retries');
  return {
    type: 'fail',
    reason: 'llm_error',
    report: `the model could not be reached: ${message}`,
  };
}
