import type { TaskStep } from '@agent-reach/protocol';
import { checkBudgets } from './guards.js';
import { reachableTools, type RunContext } from './run-context.js';
import type { RunState } from './run-state.js';
import type { NextStep } from './steps.js';
import { renderTaskStack } from './task-stack.js';

/**
 * The task stack's promise (the seeds' long-task habit): a run does not quietly succeed with planned
 * steps left undone. A final answer given while steps naming a tool are open sends the model back, up
 * to the run's `taskReminders`, with a message naming them; an answer after that ends the run with the
 * answer, `succeeded`/`tasks_incomplete`, the report naming the steps left open.
 */

/**
 * This run's steps of the task stack naming a tool that are still open (steps naming none are done by
 * the answer; steps carried from a session's earlier run are shown to the model but not held against it).
 */
export function openToolSteps(state: Pick<RunState, 'plan'>): TaskStep[] {
  return (state.plan?.steps ?? []).filter((s) => !s.done && s.tool !== undefined && !s.carried);
}

/**
 * Sends a final answer back once more when it leaves steps open that the agent in charge can still do,
 * the run has reminders left and its budgets room for another turn; else lets it end. Emits
 * `tasks_open` either way when steps are open. The answer is already in the history.
 */
export function remindOpenSteps(run: RunContext, turn: number): NextStep | undefined {
  const { state, limits, deps } = run;
  const open = openToolSteps(state);
  if (open.length === 0) return undefined;
  const used = state.taskReminders ?? 0;
  const reachable = new Set(reachableTools(deps));
  // A reminder is a model turn: only when the run could take one, so a spent budget ends with the answer.
  const remind =
    used < limits.taskReminders &&
    open.some((s) => reachable.has(s.tool as string)) &&
    checkBudgets(state, limits) === undefined;
  run.emit({
    type: 'tasks_open',
    turn,
    open: open.map((s) => ({ ...s })),
    action: remind ? 'remind' : 'accept',
    reminders_left: Math.max(0, limits.taskReminders - used - (remind ? 1 : 0)),
  });
  if (!remind) return undefined;
  state.taskReminders = used + 1;
  state.messages.push({ role: 'system', content: reminderMessage(state, open) });
  return { type: 'run_again' };
}

/** What the model reads after answering with open steps: which, and what to do about them. */
function reminderMessage(state: RunState, open: TaskStep[]): string {
  const names = open.map((s) => `"${s.title}" (tool: ${s.tool})`).join('; ');
  return (
    `Guard: you gave a final answer, but these steps of the task stack are still open: ${names}. ` +
    'Do them now by calling their tools, then answer again. If one cannot be done, answer saying which ' +
    `and why.\n${renderTaskStack(state.plan.steps)}`
  );
}

/** The outcome's reason and report for a final answer that leaves steps open; undefined when none are. */
export function incompleteTasks(state: RunState): { reason: 'tasks_incomplete'; report: string } | undefined {
  const open = openToolSteps(state);
  if (open.length === 0) return undefined;
  const list = open.map((s) => `${s.title} (tool: ${s.tool})`).join('; ');
  const reminded = state.taskReminders ?? 0;
  const after =
    reminded === 0 ? '' : `, after being sent back ${reminded === 1 ? 'once' : `${reminded} times`}`;
  const steps = `${open.length} step${open.length === 1 ? '' : 's'}`;
  return {
    reason: 'tasks_incomplete',
    report: `the model answered with ${steps} of its task stack still open${after}: ${list}`.slice(0, 2000),
  };
}
