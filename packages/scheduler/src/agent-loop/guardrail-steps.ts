import { errorResult, type ToolResult } from '@agent-reach/protocol';
import { toolPatternMatches, type GuardrailSpec, type ToolGuardrailSpec } from '@agent-reach/shared';
import { runGuardrails, type GuardrailTrip } from './guardrails.js';
import type { RunContext } from './run-context.js';
import type { NextStep, OwedCall, StepResult } from './steps.js';
import { resultForModel } from './tool-calls.js';
import { inputGuardrails, parallelInputVerdict, runTripped } from './parallel-guardrails.js';

/**
 * Where the agent's guardrails meet the loop (docs/guardrails.md): input guardrails as a step before
 * anything else of the run's first pass (context providers, plan, first model call); output guardrails as
 * a step between the final answer and the run's end; tool guardrails inside a tool round, on a call's
 * arguments before anything runs it (approval, child run, dispatch) and on its result before the model
 * reads it.
 */

/** True while a run that has not taken a model turn yet owes its request the input guardrails. */
export function needsInputGuardrails(run: RunContext): boolean {
  return (run.deps.agent.guardrails?.input?.length ?? 0) > 0 && run.state.iterations === 0;
}

/**
 * Checks the request with the blocking input guardrails; a trip ends the run `guardrail_tripped` before
 * any model call or tool runs. Then starts the parallel ones (parallel-guardrails.ts), which the first
 * turn waits for; context providers call tools, so a run that asks them first waits for them here.
 */
export async function inputGuardrailStep(
  run: RunContext,
  after: NextStep,
  waitForParallel: boolean,
): Promise<StepResult> {
  const specs = inputGuardrails(run, false);
  let trip = await runGuardrails(run, specs, { stage: 'input', text: run.state.input, ref: 'request' });
  const parallel = trip ? undefined : parallelInputVerdict(run);
  if (parallel && waitForParallel) trip = await parallel;
  return { checkpoint: 'tool_results', next: trip ? runTripped(trip, 'input') : after };
}

/**
 * A final answer of an agent with output guardrails is held (in the state, so a resumed run checks it
 * rather than asking the model again) for the `output_guardrails` step; undefined when there are none.
 */
export function holdForOutputGuardrails(run: RunContext, next: NextStep): StepResult | undefined {
  if (next.type !== 'final_output' || (run.deps.agent.guardrails?.output?.length ?? 0) === 0)
    return undefined;
  const { messages } = run.state;
  // The answer's message leaves the history (and so a session's next run) until it passes.
  const last = messages.at(-1);
  const said = last?.role === 'assistant' && typeof last.content === 'string' ? last.content : undefined;
  if (said !== undefined) messages.pop();
  run.state.pendingFinal = {
    answer: next.answer,
    truncated: next.truncated,
    ...(next.output !== undefined ? { output: next.output } : {}),
    ...(said !== undefined ? { said } : {}),
  };
  return { checkpoint: 'llm_response', next: { type: 'output_guardrails' } };
}

/** Checks the held final answer (the JSON text of a structured output); a trip ends the run without it. */
export async function outputGuardrailStep(run: RunContext): Promise<StepResult> {
  const held = run.state.pendingFinal;
  if (!held) return { next: { type: 'run_again' } };
  const specs = run.deps.agent.guardrails?.output ?? [];
  const target = { stage: 'output' as const, text: held.answer, ref: `turn_${run.state.iterations}` };
  const trip = await runGuardrails(run, specs, target);
  delete run.state.pendingFinal;
  const said = trip ? `[answer withheld by guardrail "${trip.spec.name}"]` : held.said;
  if (said !== undefined) run.state.messages.push({ role: 'assistant', content: said });
  if (trip) return { next: runTripped(trip, 'output') };
  return {
    next: {
      type: 'final_output',
      answer: held.answer,
      truncated: held.truncated,
      ...(held.output !== undefined ? { output: held.output } : {}),
    },
  };
}

/** The agent's tool guardrails that watch `tool` at `stage`. */
function watching(run: RunContext, tool: string, stage: 'arguments' | 'result'): ToolGuardrailSpec[] {
  return (run.deps.agent.guardrails?.tool ?? []).filter(
    (g) =>
      (g.stage ?? 'both') !== (stage === 'arguments' ? 'result' : 'arguments') &&
      g.tools.some((p) => toolPatternMatches(p, tool)),
  );
}

/** The structured error a call gets in place of its run or its result. */
function guardrailError(call: OwedCall, trip: GuardrailTrip, stage: 'arguments' | 'result'): ToolResult {
  const failed = trip.verdict.verdict === 'error';
  const message =
    stage === 'arguments'
      ? `blocked by guardrail "${trip.spec.name}" before it ran: ${failed ? 'the check failed (fail_closed): ' : ''}${trip.verdict.reason}`
      : `the result was withheld by guardrail "${trip.spec.name}": ${failed ? 'the check failed (fail_closed): ' : ''}${trip.verdict.reason}`;
  return errorResult(
    { toolCallId: call.id, name: call.name },
    { kind: 'guardrail', message, guardrail: trip.spec.name, retryable: false },
  );
}

/**
 * Checks the arguments of the owed calls that the tool guardrails watch and have no answer yet. A call
 * that trips is answered here with a `guardrail` error (recorded as the call's result, so no executor
 * ever runs it) and is never published. Returns the ids of the calls answered so.
 */
export async function guardToolArguments(run: RunContext, owed: OwedCall[]): Promise<Set<string>> {
  const { state, deps } = run;
  const answered = new Set((state.localResults ?? []).map((r) => r.tool_call_id));
  const blocked: ToolResult[] = [];
  for (const call of owed) {
    if (answered.has(call.id)) continue;
    const specs = watching(run, call.name, 'arguments');
    if (specs.length === 0) continue;
    const target = {
      stage: 'arguments' as const,
      text: call.arguments,
      ref: call.id,
      tool: call.name,
      toolCallId: call.id,
    };
    const trip = await runGuardrails(run, specs, target);
    if (trip) blocked.push(guardrailError(call, trip, 'arguments'));
  }
  if (blocked.length === 0) return new Set();
  const recorded = deps.dispatcher.recordLocal
    ? await deps.dispatcher.recordLocal(state.runId, blocked)
    : blocked;
  state.localResults = [...(state.localResults ?? []), ...recorded];
  return new Set(blocked.map((r) => r.tool_call_id));
}

/**
 * Checks the results of the calls that the tool guardrails watch, as the model would read them, however
 * they were answered: by an executor, by a child run (an agent tool's answer is a model's text), or by the
 * loop itself (a refusal, a person's rejection). A result that trips is replaced, for the model, by a
 * `guardrail` error (the call's record keeps what the tool or the child returned). A call a guardrail
 * already blocked is not checked again.
 */
export async function guardToolResults(
  run: RunContext,
  owed: OwedCall[],
  results: ToolResult[],
): Promise<ToolResult[]> {
  const out = [...results];
  for (const [i, call] of owed.entries()) {
    const result = results[i];
    if (!result || result.error?.kind === 'guardrail') continue;
    const specs = watching(run, call.name, 'result');
    if (specs.length === 0) continue;
    const target = {
      stage: 'result' as const,
      text: resultForModel(result),
      ref: call.id,
      tool: call.name,
      toolCallId: call.id,
    };
    const trip = await runGuardrails(run, specs as GuardrailSpec[], target);
    if (trip)
      out[i] = {
        ...guardrailError(call, trip, 'result'),
        duration_ms: result.duration_ms,
        attempts: result.attempts,
      };
  }
  return out;
}
