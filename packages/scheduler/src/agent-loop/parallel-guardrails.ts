import type { ChatCompletion } from 'openai/resources/chat/completions';
import { runsInParallel, type GuardrailSpec } from '@agent-reach/shared';
import { runGuardrails, type GuardrailTrip } from './guardrails.js';
import { chargeRequest } from './model-usage.js';
import type { RunState } from './run-state.js';
import type { RunContext } from './run-context.js';
import type { NextStep } from './steps.js';

/**
 * Input guardrails that run beside the first model call (`run_in_parallel`, as the OpenAI Agents SDK's
 * default): they start once the blocking ones passed, the first turn's request goes out meanwhile, and its
 * answer is used only once they all passed. A trip aborts the call if it is still out; an answer that came
 * first is discarded: not streamed, not in the history, no tool call dispatched. Their verdicts are kept
 * like any guardrail's, so a resumed run does not ask again for one it checkpointed.
 */

/** The verdicts under way in this process, by run (a resumed run starts them again from its state). */
const underway = new WeakMap<RunState, Promise<GuardrailTrip | undefined>>();

/** The agent's input guardrails that block (run before anything else) or run beside the first call. */
export function inputGuardrails(run: RunContext, parallel: boolean): GuardrailSpec[] {
  const g = run.deps.agent.guardrails;
  return (g?.input ?? []).filter((spec) => runsInParallel(g, spec) === parallel);
}

/**
 * The verdict of the parallel input guardrails of a run that has not taken a model turn, started on the
 * first ask; undefined when the agent has none or the run is past its first turn.
 */
export function parallelInputVerdict(run: RunContext): Promise<GuardrailTrip | undefined> | undefined {
  const { state } = run;
  if (state.iterations > 0) return undefined;
  const specs = inputGuardrails(run, true);
  if (specs.length === 0) return undefined;
  let verdict = underway.get(state);
  if (!verdict) {
    verdict = runGuardrails(run, specs, { stage: 'input', text: state.input, ref: 'request' });
    // Awaited by the first turn; a failure (a lost run, a checkpoint that failed) surfaces there.
    verdict.catch(() => undefined);
    underway.set(state, verdict);
  }
  return verdict;
}

/** The first turn's watch on the parallel input guardrails (see `guardFirstTurn`). */
export interface FirstTurnGuard {
  /** The model call's signal: aborted with the run's, or as soon as a parallel guardrail trips. */
  signal: AbortSignal;
  /** The guardrails' verdict: the first that tripped (or failed, `fail_closed`), else undefined. */
  verdict(): Promise<GuardrailTrip | undefined>;
  /** Lets go of the listener on the run's signal; call it once the call ended. */
  close(): void;
}

/** Watches the parallel input guardrails beside the first turn; undefined when there are none to wait for. */
export function guardFirstTurn(run: RunContext, signal: AbortSignal): FirstTurnGuard | undefined {
  const pending = parallelInputVerdict(run);
  if (!pending) return undefined;
  const call = new AbortController();
  const onAbort = () => call.abort(signal.reason);
  if (signal.aborted) onAbort();
  else signal.addEventListener('abort', onAbort, { once: true });
  pending.then(
    (trip) => {
      if (trip) call.abort(new Error(`input guardrail "${trip.spec.name}" tripped`));
    },
    () => undefined,
  );
  return {
    signal: call.signal,
    verdict: () => pending,
    close: () => signal.removeEventListener('abort', onAbort),
  };
}

/** How a run stopped by an input or output guardrail ends: `guardrail_tripped`, naming it and why. */
export function runTripped(trip: GuardrailTrip, stage: 'input' | 'output'): NextStep {
  const how = trip.verdict.verdict === 'error' ? 'failed (fail_closed)' : 'tripped';
  return {
    type: 'fail',
    reason: 'guardrail_tripped',
    report: `${stage} guardrail "${trip.spec.name}" ${how}: ${trip.verdict.reason}`,
  };
}

/**
 * The first turn's answer when a parallel input guardrail tripped: counted and charged as the model
 * request it was (an `llm_request` event without its text or calls), then discarded.
 */
export function discardFirstTurn(
  run: RunContext,
  res: ChatCompletion,
  trip: GuardrailTrip,
  latencyMs: number,
  tools: string[],
): NextStep {
  const { state, deps } = run;
  state.iterations += 1;
  run.emit({
    type: 'llm_request',
    turn: state.iterations,
    ...chargeRequest(state, res, deps.llm, latencyMs),
    finish_reason: res.choices[0]?.finish_reason ?? 'stop',
    tool_calls: 0,
    tools_offered: tools,
    message: { content: null },
  });
  return runTripped(trip, 'input');
}
