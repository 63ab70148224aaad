import { errorResult, type ToolResult } from '@agent-reach/protocol';
import { TIMED_OUT, waitAtMost } from '@agent-reach/shared';
import type { RunState } from './run-state.js';
import { requestApprovals } from './approvals.js';
import { awaitChildren, childOf, dispatchBeside } from './agent-tools.js';
import { repeatNudge, type GuardStop } from './guards.js';
import type { RunContext } from './run-context.js';
import type { OwedCall, StepResult } from './steps.js';
import { holdOpen, tickOff } from './task-stack.js';
import { resolveToolCalls, resultForModel } from './tool-calls.js';
import { guardToolArguments, guardToolResults } from './guardrail-steps.js';

/**
 * Answers the calls a model turn owes, unless one waits for a person: then the run parks. Past the
 * deadline nothing waits for a person: the owed calls are answered as not run.
 */
export async function toolRound(run: RunContext, owed: OwedCall[], fresh: boolean): Promise<StepResult> {
  const { state, deps } = run;
  // A call its tool guardrails block is answered before anything could run it: no person, child or executor.
  const blocked = await guardToolArguments(run, owed);
  const open = blocked.size > 0 ? owed.filter((c) => !blocked.has(c.id)) : owed;
  if (Date.now() < state.deadlineAt && requestApprovals(state, open, deps, run.emit)) {
    return { next: { type: 'park_for_approval' } };
  }
  if (await awaitChildren(run, open)) {
    await dispatchBeside(run, open, fresh);
    return { next: { type: 'await_children' } };
  }
  const stopped = await answerCalls(run, owed, fresh);
  return {
    checkpoint: 'tool_results',
    next: stopped ? { type: 'guard_stop', stop: stopped } : { type: 'run_again' },
  };
}

/** Answers the owed calls; returns a guard stop when too many rounds in a row failed. */
async function answerCalls(
  run: RunContext,
  owed: OwedCall[],
  fresh: boolean,
): Promise<GuardStop | undefined> {
  const { state, deps, limits } = run;
  const turn = state.iterations;
  run.emit({
    type: 'tool_dispatched',
    turn,
    calls: owed.map((c) => ({ tool_call_id: c.id, tool: c.name, arguments: c.arguments })),
  });
  const local = new Map((state.localResults ?? []).map((r) => [r.tool_call_id, r]));
  const answeredLocally = new Set(local.keys());
  const toRun = owed.filter((c) => !local.has(c.id));
  const remainingMs = state.deadlineAt - Date.now();
  // The wait is bounded by the run's deadline; calls still out then are answered here as not observed.
  const ran =
    toRun.length > 0 && remainingMs > 0
      ? await withinMs(resolveToolCalls(state, toRun, deps, fresh, answeredLocally), remainingMs)
      : toRun.length > 0
        ? undefined
        : [];
  const late = ran === undefined;
  const byId = new Map(
    toRun.map((c, i) => [
      c.id,
      ran?.[i] ??
        errorResult(
          { toolCallId: c.id, name: c.name },
          {
            kind: 'unavailable',
            message: "no result before the run's deadline: the run stopped without waiting for this call",
            retryable: false,
          },
        ),
    ]),
  );
  const results = await guardToolResults(
    run,
    owed,
    owed.map((c) => local.get(c.id) ?? (byId.get(c.id) as ToolResult)),
  );
  delete state.localResults;
  for (const [i, result] of results.entries()) {
    const call = owed[i] as OwedCall;
    record(run, call, result, turn, answeredLocally.has(call.id) ? 'local' : 'dispatched');
  }
  if (late) {
    return {
      guard: 'deadline',
      status: 'not_converged',
      report: `the run passed its wall-clock deadline while waiting for ${toRun.length} tool call(s)`,
    };
  }
  if (state.turnNote) {
    state.messages.push({ role: 'system', content: state.turnNote });
    delete state.turnNote;
  }
  if (state.guard.nudged && state.guard.repeatCount === limits.repeatLimit) {
    state.messages.push({
      role: 'system',
      content: repeatNudge(state.guard.lastSignature ?? '', state.guard.repeatCount),
    });
  }
  if (results.some((r) => !r.ok)) deps.breakers.invalidate?.();
  return countFailedRound(state, results, limits);
}

/**
 * Counts a round in which every call failed. A round whose every failure is the model's own arguments
 * (`invalid_arguments`: it will correct them) counts against the argument-fix limit instead, and leaves
 * the failed rounds as they were; a round with a success resets both.
 */
function countFailedRound(
  state: RunState,
  results: ToolResult[],
  limits: RunContext['limits'],
): GuardStop | undefined {
  const g = state.guard;
  const kinds = () =>
    results.map((r) => `${r.name}: ${r.error?.kind ?? 'error'} (${r.error?.message ?? ''})`).join('; ');
  if (!results.every((r) => !r.ok)) {
    g.failedRounds = 0;
    g.argumentFixRounds = 0;
    return undefined;
  }
  if (results.every((r) => r.error?.kind === 'invalid_arguments')) {
    g.argumentFixRounds = (g.argumentFixRounds ?? 0) + 1;
    if (g.argumentFixRounds < limits.maxArgumentFixRounds) return undefined;
    return {
      guard: 'argument_fix_rounds',
      status: 'failed',
      report: `${g.argumentFixRounds} tool rounds in a row were refused for invalid arguments; last round: ${kinds()}`,
    };
  }
  g.failedRounds += 1;
  if (g.failedRounds < limits.maxFailedRounds) return undefined;
  return {
    guard: 'failed_rounds',
    status: 'failed',
    report: `${g.failedRounds} tool rounds in a row failed; last round: ${kinds()}`,
  };
}

/**
 * One call's result into the history, the steps and the events; a success ticks off its plan step.
 * `forModel` replaces what the model reads of the result (a context provider's cut result).
 */
export function record(
  run: RunContext,
  call: OwedCall,
  recorded: ToolResult,
  turn: number,
  answered: 'local' | 'dispatched',
  forModel?: (result: ToolResult) => string,
): void {
  const { state } = run;
  // Who ran the call and how often it was tried are for people, not for the model.
  const { executor_id: executorId, ...result } = recorded;
  const kind = result.ok ? (result.no_result ? 'no_result' : 'ok') : 'error';
  const content = forModel ? forModel(result) : resultForModel(result);
  state.messages.push({ role: 'tool', tool_call_id: call.id, content });
  // What the run's step and its `tool_result` event both say of the call.
  const shared = {
    turn,
    tool_call_id: call.id,
    tool: call.name,
    arguments: call.arguments,
    ok: result.ok,
    duration_ms: result.duration_ms,
    attempts: result.attempts,
    ...(result.attempt_log ? { attempt_log: result.attempt_log } : {}),
    ...(result.truncated ? { truncated: true } : {}),
    kind,
    answered,
    ...(executorId ? { executor_id: executorId } : {}),
    ...(childOf(state, call.id) ? { child_run_id: childOf(state, call.id)?.runId } : {}),
  } as const;
  state.steps.push({
    ...shared,
    ...(result.error ? { error_kind: result.error.kind } : {}),
    ...(result.error?.detail ? { error_detail: result.error.detail } : {}),
    ...(result.ref ? { ref: result.ref } : {}),
  });
  run.emit({ type: 'tool_result', ...shared, ...(result.error ? { error: result.error } : {}), result });
  if (result.ok) {
    const step = tickOff(state, call.name);
    if (step) run.emit({ type: 'step_done', step: { ...step } });
  } else holdOpen(state, call.name);
}

/** `promise`'s value, or undefined when it has not settled within `ms`. */
async function withinMs<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  const value = await waitAtMost(promise, ms);
  return value === TIMED_OUT ? undefined : value;
}

/** Answers every call of a turn without running it, so the history stays a valid conversation. */
export function answerNotRun(
  state: RunState,
  calls: Array<{ id: string; name: string }>,
  message: string,
): void {
  delete state.localResults;
  delete state.turnNote;
  for (const c of calls) {
    state.messages.push({
      role: 'tool',
      tool_call_id: c.id,
      content: resultForModel(
        errorResult({ toolCallId: c.id, name: c.name }, { kind: 'unavailable', message, retryable: false }),
      ),
    });
  }
}
