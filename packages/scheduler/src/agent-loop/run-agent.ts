import { markRunning, type RunOutcome, type RunState } from './run-state.js';
import { compactionStep } from './compaction-step.js';
import { classifyIntent } from './intent.js';
import { contextStep } from './context-providers.js';
import { agentVocabulary, checkTopic, offTopicAnswer } from './topic-gate.js';
import type { AgentLoopDeps } from './loop-options.js';
import { modelTurn } from './model-turn.js';
import { planStep } from './planning.js';
import { createRunContext, type RunContext } from './run-context.js';
import { endOnError, endRun, park } from './run-end.js';
import { isEndStep, pickStep, type NextStep, type StepResult, type WorkStep } from './steps.js';
import { toolRound } from './tool-round.js';
import { handoffStep } from './handoffs.js';
import { inputGuardrailStep, needsInputGuardrails, outputGuardrailStep } from './guardrail-steps.js';

export { CheckpointFailed, RunLost } from './checkpoints.js';
export { agentLoopLimits, resolveLimits } from './loop-options.js';
export type { AgentLoopDeps, CheckpointWrite, LoopLimits } from './loop-options.js';

/**
 * Runs (or resumes) an agent run to its outcome, or to `'parked'` when a call waits for a person's
 * approval (the state says which; resume it once decided). Each pass picks the next step, runs it and
 * checkpoints after it, so a run resumed from any checkpoint carries on where it stopped: owed calls are
 * answered (the dispatcher never re-runs a call with a recorded result) and no model turn that was
 * recorded is asked again.
 */
export async function runAgent(
  state: RunState,
  deps: AgentLoopDeps,
): Promise<RunOutcome | 'parked' | 'released'> {
  if (state.outcome) return state.outcome;
  // Decided once, before the first model call, without calling the model; kept across resumes.
  if (!state.intent) {
    const vocabulary = agentVocabulary(deps.agent, deps.catalog);
    state.intent = classifyIntent(state.input, vocabulary);
    const topic = checkTopic(deps.agent, vocabulary, state.input);
    if (topic) state.topic = topic;
  }
  const run = createRunContext(state, deps);
  const started = markRunning(state);
  if (started) {
    run.emit({
      type: 'run_started',
      agent: state.agent,
      input: state.input,
      model: deps.llm.model,
      intent: state.intent.intent,
      intent_signals: state.intent.signals,
      // A session's run may start with the agent its last run handed off to.
      ...(state.inCharge && state.inCharge !== state.agent ? { in_charge: state.inCharge } : {}),
      ...(state.variant ? { variant: state.variant } : {}),
    });
    if (state.topic?.verdict === 'off_topic') {
      const { verdict, action, topics, score, best } = state.topic;
      run.emit({ type: 'topic', verdict, action, topics, score, ...(best ? { best } : {}) });
    }
  }
  let next = firstStep(run);
  try {
    // Stored before anything else happens, so that the stream's stored events come before the first
    // turn's live text, and the run's record exists from its first step. A plan's request publishes no
    // text: the start is stored with the plan, in one checkpoint (a crash before it starts the run anew).
    if (started && !isEndStep(next) && next.type !== 'plan') await run.checkpoint('started');
    for (;;) {
      // A cancelled run does no more work; a step already ending it still ends it as it says.
      if (deps.signal?.aborted && !isEndStep(next)) next = { type: 'cancel' };
      if (isEndStep(next)) return await endRun(run, next);
      if (next.type === 'park_for_approval' || next.type === 'await_children')
        return await park(run, next.type);
      const done = await runStep(run, next);
      if (done.checkpoint) await run.checkpoint(done.checkpoint);
      next = done.next;
    }
  } catch (err) {
    return await endOnError(run, err);
  }
}

/**
 * Where a run starts (or resumes) its loop: a refusal of an off-topic request, the context providers,
 * a plan (only a multi-step request is worth a model call for one), or the next turn.
 */
function firstStep(run: RunContext): NextStep {
  const { state } = run;
  const topic = state.topic;
  if (topic?.verdict === 'off_topic' && topic.action === 'refuse' && state.iterations === 0) {
    return {
      type: 'final_output',
      answer: offTopicAnswer(topic.topics),
      truncated: false,
      reason: 'off_topic',
      report:
        `the request scored ${topic.score} against the agent's tools and topics (${topic.topics.join(', ')}), ` +
        'below the threshold: refused without a model call',
    };
  }
  if (needsInputGuardrails(run)) return { type: 'input_guardrails' };
  return afterInputGuardrails(run);
}

/** The first pass once the request passed the input guardrails: context providers, a plan, or the turn. */
function afterInputGuardrails(run: RunContext): NextStep {
  const { state, deps } = run;
  if ((deps.agent.context_providers?.length ?? 0) > 0 && !state.contextRequested) return { type: 'context' };
  return planOrTurn(run);
}

function planOrTurn(run: RunContext): NextStep {
  const plans = run.limits.planning && run.state.intent?.intent === 'multi_step' && !run.state.plan.requested;
  return plans ? { type: 'plan' } : { type: 'run_again' };
}

async function runStep(run: RunContext, step: WorkStep): Promise<StepResult> {
  switch (step.type) {
    case 'context':
      return contextStep(run, planOrTurn(run));
    case 'plan':
      return planStep(run);
    case 'run_again':
      return { next: await pickStep(run) };
    case 'compact':
      return compactionStep(run, step.tools);
    case 'model_turn':
      return modelTurn(run, step.tools);
    case 'run_tools':
      return toolRound(run, step.calls, step.fresh);
    case 'handoff':
      return handoffStep(run);
    case 'input_guardrails': {
      const after = afterInputGuardrails(run);
      return inputGuardrailStep(run, after, after.type === 'context');
    }
    case 'output_guardrails':
      return outputGuardrailStep(run);
  }
}
