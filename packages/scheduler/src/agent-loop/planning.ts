import type { ChatCompletion } from 'openai/resources/chat/completions';
import type { LlmClient } from '../model/llm.js';
import { llmFailed } from './llm-failure.js';
import { chargeSideRequest } from './model-usage.js';
import { modelSignals, offeredTools, reachableTools, turnOptions, type RunContext } from './run-context.js';
import type { StepResult } from './steps.js';
import { keepReachable, requestPlan } from './task-stack.js';

/**
 * Asks the model for a plan once, before the first turn. Steps naming a tool the agent cannot reach are
 * dropped; a plan of one step is not kept (the task itself says as much).
 */
export async function planStep(run: RunContext): Promise<StepResult> {
  const { state, deps } = run;
  const tools = await offeredTools(run);
  const started = performance.now();
  const { deadline, signal, close } = modelSignals(run);
  let plan: Awaited<ReturnType<typeof requestPlan>>;
  // The plan's answer is charged like a turn's: its tokens and cost go to the model that answered.
  let answer: ChatCompletion | undefined;
  const llm: LlmClient = {
    model: deps.llm.model,
    complete: (...args) => deps.llm.complete(...args),
    completeJson: async (...args) => (answer = await deps.llm.completeJson(...args)),
  };
  try {
    plan = await requestPlan(
      llm,
      state.input,
      tools.map((t) => t.name),
      signal,
      turnOptions(run),
    );
  } catch (err) {
    return { next: llmFailed(run, err, 0, started, deadline) };
  } finally {
    close();
  }
  const { kept, dropped } = keepReachable(plan.steps, new Set(reachableTools(deps)));
  state.plan = {
    requested: true,
    steps: [...state.plan.steps, ...(kept.length > 1 ? kept : [])],
  };
  if (answer)
    chargeSideRequest(run, answer, deps.llm, Math.round(performance.now() - started), { purpose: 'plan' });
  run.emit({
    type: 'plan',
    steps: state.plan.steps,
    ...(plan.error ? { error: plan.error } : {}),
    ...(dropped.length > 0 ? { dropped } : {}),
  });
  return { checkpoint: 'plan', next: { type: 'run_again' } };
}
