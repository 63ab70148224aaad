import { errorResult } from '@agent-reach/protocol';
import type { ToolCatalogEntry } from '@agent-reach/shared';
import { checkRepeat, checkTokenBudget, repeatNudge, turnSignature } from './guards.js';
import { llmFailed } from './llm-failure.js';
import { readModelTurn, type ModelTurn } from './model-answer.js';
import { buildMessages, toolSpecs } from './prompt.js';
import { modelSignals, reachableTools, turnOptions, type RunContext } from './run-context.js';
import { platformRefusals } from './run-end.js';
import type { NextStep, StepResult } from './steps.js';
import { finishOpenSteps } from './task-stack.js';
import { remindOpenSteps } from './open-tasks.js';
import { answerNotRun } from './tool-round.js';
import { structuredAnswer, turnFormat } from './structured-output.js';
import { chargeRequest } from './model-usage.js';
import { takeHandoff } from './handoffs.js';
import { holdForOutputGuardrails } from './guardrail-steps.js';
import { discardFirstTurn, guardFirstTurn, runTripped } from './parallel-guardrails.js';

/** Asks the model for its next turn with the tools offered now, records the answer, and resolves it. */
export async function modelTurn(run: RunContext, tools: ToolCatalogEntry[]): Promise<StepResult> {
  const { state, deps } = run;
  const turn = state.iterations + 1;
  const started = performance.now();
  const { deadline, signal, close } = modelSignals(run);
  let res;
  // Beside parallel input guardrails the answer is not streamed: it may yet be discarded.
  const guard = guardFirstTurn(run, signal);
  const live = guard ? undefined : deps.answerDeltas?.(state.runId, turn);
  const format = turnFormat(run);
  try {
    res = await deps.llm.complete(
      buildMessages(deps.agent, state, tools),
      toolSpecs(tools),
      guard?.signal ?? signal,
      live?.listener,
      { ...turnOptions(run), ...(format ? { responseFormat: format } : {}) },
    );
  } catch (err) {
    // A run cancelled or let go does not wait for the verdicts.
    const stopped = deps.signal?.aborted === true || deps.release?.aborted === true;
    const trip = stopped ? undefined : await guard?.verdict();
    return { next: trip ? runTripped(trip, 'input') : llmFailed(run, err, turn, started, deadline) };
  } finally {
    close();
    guard?.close();
    // The answer's last text is published before the turn is checkpointed, so followers see it first.
    await live?.close();
  }
  const trip = await guard?.verdict();
  if (trip) {
    const latency = Math.round(performance.now() - started);
    const names = tools.map((t) => t.name);
    return { checkpoint: 'llm_response', next: discardFirstTurn(run, res, trip, latency, names) };
  }
  const answer = readModelTurn(res, state, turn, reachableTools(deps));
  const { calls } = answer;
  state.iterations = turn;
  // Which declared model answered (routed runs), its tokens and cost.
  const charged = chargeRequest(state, res, deps.llm, Math.round(performance.now() - started));
  run.emit({
    type: 'llm_request',
    turn,
    ...charged,
    finish_reason: answer.finishReason,
    tool_calls: calls.length,
    tools_offered: tools.map((t) => t.name),
    message: {
      content: answer.content,
      ...(answer.refusal !== undefined ? { refusal: answer.refusal } : {}),
      ...(calls.length
        ? {
            tool_calls: calls.map((c) => ({
              id: c.id,
              name: c.name,
              arguments: c.arguments,
              ...(c.original
                ? { arguments_chars: c.original.chars, arguments_sha256: c.original.sha256 }
                : {}),
            })),
          }
        : {}),
    },
    ...(answer.droppedCalls > 0 ? { dropped_tool_calls: answer.droppedCalls } : {}),
    ...(answer.reasoning !== undefined ? { reasoning: answer.reasoning } : {}),
  });
  if (calls.length > 0 && answer.refusal === undefined && answer.finishReason !== 'content_filter')
    return resolveCalls(run, answer);
  const next = resolveAnswer(run, answer, turn);
  const held = holdForOutputGuardrails(run, next);
  if (held) return held;
  // An answer sent back for missing the output schema is a turn like any other: recorded before the next.
  return next.type === 'run_again' ? { checkpoint: 'llm_response', next } : { next };
}

/** A turn that ends the run: the model refused, was filtered, or answered without a tool call. */
function resolveAnswer(run: RunContext, answer: ModelTurn, turn: number): NextStep {
  const { state } = run;
  const text = answer.content ?? '';
  const kept = text.trim() ? { answer: text } : {};
  if (answer.refusal !== undefined) {
    // A refusing model's calls are not run; its refusal stays in the history as what it said.
    state.messages.push({ role: 'assistant', content: answer.refusal });
    const report = `the model declined to answer: ${answer.refusal.slice(0, 1000)}`;
    return { type: 'fail', reason: 'refused', ...kept, report };
  }
  if (answer.finishReason === 'content_filter') {
    if (text.trim()) state.messages.push({ role: 'assistant', content: text });
    const report =
      "the provider's content filter stopped the model's answer; no tool call of that turn was run";
    return { type: 'fail', reason: 'content_filter', ...kept, report };
  }
  if (!text.trim()) {
    return answer.finishReason === 'length'
      ? {
          type: 'fail',
          reason: 'output_truncated',
          report: 'the model reached its output token limit before writing any answer or tool call',
        }
      : {
          type: 'fail',
          reason: 'empty_answer',
          report: `the model answered with no text and no tool call (finish_reason ${answer.finishReason})`,
        };
  }
  state.messages.push({ role: 'assistant', content: text });
  const refused = platformRefusals(state);
  if (refused) return { type: 'fail', reason: 'no_tool_available', answer: text, report: refused };
  const reminded = remindOpenSteps(run, turn);
  if (reminded) return reminded;
  const next = structuredAnswer(run, text, turn, answer.finishReason === 'length' || answer.textCut);
  if (next.type === 'final_output')
    for (const step of finishOpenSteps(state)) run.emit({ type: 'step_done', step: { ...step } });
  return next;
}

/**
 * A turn with tool calls: recorded in the history with the results already known locally, then the
 * token budget and repeat guards decide whether its calls run.
 */
function resolveCalls(run: RunContext, answer: ModelTurn): StepResult {
  const { state, limits } = run;
  const { calls } = answer;
  state.messages.push({
    role: 'assistant',
    content: answer.content,
    tool_calls: calls.map((c) => ({
      id: c.id,
      type: 'function',
      function: { name: c.name, arguments: c.arguments },
    })),
  });
  const local = calls.flatMap((c) =>
    c.refused ? [errorResult({ toolCallId: c.id, name: c.name }, c.refused)] : [],
  );
  if (local.length > 0) state.localResults = local;
  else delete state.localResults;
  if (answer.droppedCalls > 0) {
    state.turnNote =
      `Guard: your last answer made ${calls.length + answer.droppedCalls} tool calls; only the first ` +
      `${calls.length} were taken and the rest were not run. Make at most ${calls.length} calls in one answer.`;
  } else delete state.turnNote;
  const overBudget = checkTokenBudget(state, limits);
  if (overBudget) {
    answerNotRun(state, calls, 'not run: the run used up its token budget');
    return { checkpoint: 'llm_response', next: { type: 'guard_stop', stop: overBudget } };
  }
  const signature = turnSignature(calls);
  const repeat = checkRepeat(state, signature, limits);
  if (repeat === 'nudge') {
    const report = repeatNudge(signature, state.guard.repeatCount);
    run.emit({ type: 'guard', guard: 'repeat', action: 'nudge', report });
  } else if (repeat !== 'ok') {
    // Answer the owed calls without running them, so the history stays a valid conversation.
    answerNotRun(state, calls, 'not run: the run was stopped for repeating this call');
    return { checkpoint: 'llm_response', next: { type: 'guard_stop', stop: repeat } };
  }
  const handoffStop = takeHandoff(run, calls);
  if (handoffStop) {
    answerNotRun(state, calls, 'not run: the run was stopped for handing off too often');
    return { checkpoint: 'llm_response', next: { type: 'guard_stop', stop: handoffStop } };
  }
  const owed = calls.map((c) => ({ id: c.id, name: c.name, arguments: c.arguments }));
  return { checkpoint: 'llm_response', next: { type: 'run_tools', calls: owed, fresh: true } };
}
