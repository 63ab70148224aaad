import type { AttemptFacts } from '@agent-reach/protocol';
import type { RunFacts } from './run-facts.js';
import type { Expectations } from './types.js';

/** Whether an attempt's run finished its task, and the steps it left open (docs/evals.md, `task_completion`). */
export interface TaskCompletion {
  complete: boolean;
  /** Each open step: a step of the run's task stack, or a tool the case requires that no call reached. */
  open: string[];
}

/**
 * A run's task is complete when the run succeeded and none of its tasks is open. Its tasks are the steps
 * of its task stack (a run that ends `tasks_incomplete` has some open) and the tools the case requires
 * (`tools_called`, `tools_in_order`): a run planned without the task stack, or whose plan left a step out,
 * is held to what the case asks all the same. The outcome alone is not enough: a model that forgets a
 * step still answers, and the run still succeeds.
 */
export function taskCompletion(e: Expectations, f: RunFacts): TaskCompletion {
  const reached = new Set(f.reached);
  const planned = f.tasks
    .filter((t) => !t.done && !t.carried)
    .map((t) => (t.tool ? `${t.title} (${t.tool})` : t.title));
  const required = [...new Set([...(e.tools_called ?? []), ...(e.tools_in_order ?? [])])];
  const open = [...planned, ...required.filter((t) => !reached.has(t)).map((t) => `${t} (required)`)];
  return { complete: f.status === 'succeeded' && open.length === 0, open };
}

/**
 * Whether an attempt counts as complete: its recorded verdict, or, in a report written before attempts
 * recorded one, a succeeded run that did not end `tasks_incomplete`.
 */
export function attemptComplete(facts: AttemptFacts | undefined): boolean {
  if (facts?.tasks_complete !== undefined) return facts.tasks_complete;
  return facts?.status === 'succeeded' && facts.reason !== 'tasks_incomplete';
}
