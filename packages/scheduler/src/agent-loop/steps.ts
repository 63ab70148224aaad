import type { ToolCatalogEntry } from '@agent-reach/shared';
import { unansweredCalls } from './run-state.js';
import type { StepKind } from './events.js';
import { checkBudgets, type GuardStop } from './guards.js';
import { offeredTools, type RunContext } from './run-context.js';

/** One tool call a model turn made and the run still owes an answer. */
export interface OwedCall {
  id: string;
  name: string;
  arguments: string;
}

/**
 * What a run does next. Every step resolves to one of these (a model turn to `run_tools`, `final_output`,
 * `fail` or `guard_stop`), and `runAgent` runs it: the first five do work, `park_for_approval` and the
 * last four end the pass of the loop.
 */
export type NextStep =
  | { type: 'context' }
  | { type: 'plan' }
  /** Decide from the state alone: owed calls to answer, a budget spent, or a model turn. */
  | { type: 'run_again' }
  | { type: 'compact'; tools: ToolCatalogEntry[] }
  | { type: 'model_turn'; tools: ToolCatalogEntry[] }
  /** The agent's input guardrails check the request (guardrail-steps.ts). */
  | { type: 'input_guardrails' }
  /** The agent's output guardrails check the held final answer (`state.pendingFinal`). */
  | { type: 'output_guardrails' }
  /** `fresh`: the calls come from a model turn taken in this process, so none can have a result yet. */
  | { type: 'run_tools'; calls: OwedCall[]; fresh: boolean }
  /** The calls of a turn that handed off are answered: the target takes charge (see handoffs.ts). */
  | { type: 'handoff' }
  | { type: 'park_for_approval' }
  /** Calls of agent tools wait for their child runs: the run parks until a child's end wakes it. */
  | { type: 'await_children' }
  /**
   * `off_topic`: the answer is the platform's refusal of a request outside the agent's topics;
   * `tasks_incomplete`: steps of the task stack naming a tool are still open (see open-tasks.ts).
   */
  | {
      type: 'final_output';
      answer: string;
      truncated: boolean;
      output?: unknown;
      reason?: 'off_topic' | 'tasks_incomplete';
      report?: string;
    }
  | { type: 'fail'; reason: FailReason; report: string; answer?: string }
  | { type: 'guard_stop'; stop: GuardStop }
  | { type: 'cancel' };

/** `failed` reasons that are not guards (see `RunOutcome`). */
export type FailReason =
  | 'refused'
  | 'content_filter'
  | 'empty_answer'
  | 'output_truncated'
  | 'no_tool_available'
  | 'invalid_output'
  | 'guardrail_tripped'
  | 'llm_error'
  | 'context_failed';

export type WorkStep = Extract<
  NextStep,
  {
    type:
      | 'context'
      | 'plan'
      | 'run_again'
      | 'compact'
      | 'model_turn'
      | 'run_tools'
      | 'handoff'
      | 'input_guardrails'
      | 'output_guardrails';
  }
>;
export type EndStep = Extract<NextStep, { type: 'final_output' | 'fail' | 'guard_stop' | 'cancel' }>;

/** A step done: what comes next, and the checkpoint to take first (none when nothing changed). */
export interface StepResult {
  next: NextStep;
  checkpoint?: StepKind;
}

export function isEndStep(step: NextStep): step is EndStep {
  return (
    step.type === 'final_output' ||
    step.type === 'fail' ||
    step.type === 'guard_stop' ||
    step.type === 'cancel'
  );
}

/**
 * The step a run at rest takes: answer the calls the last model turn owes (a resumed run may owe some),
 * stop on a spent budget, or prepare a model turn with the tools offered now.
 */
export async function pickStep(run: RunContext): Promise<NextStep> {
  const owed = unansweredCalls(run.state);
  if (owed.length > 0) return { type: 'run_tools', calls: owed, fresh: false };
  if (run.state.pendingFinal) return { type: 'output_guardrails' };
  if (run.state.pendingHandoff) return { type: 'handoff' };
  const budget = checkBudgets(run.state, run.limits);
  if (budget) return { type: 'guard_stop', stop: budget };
  return { type: 'compact', tools: await offeredTools(run) };
}
