import { constants } from '@agent-reach/shared';
import type { LlmClient, TurnOptions } from '../model/llm.js';
import { answerText, readUsage } from './model-answer.js';
import type { RunState, TaskStep, Usage } from './run-state.js';

const PLAN_INSTRUCTIONS =
  'Break the user request into a short plan before acting. Answer only with a JSON object ' +
  '{"steps": [{"title": "<what to do>", "tool": "<tool name, if one is needed>"}]} with 1 to 6 steps, ' +
  'in order. A request that needs a single action has a single step.';

/** A plan step's title is shown to the model every turn: long ones are cut. */
const MAX_STEP_TITLE_CHARS = 200;

/** Asks the model for a plan; the steps become the run's task stack. A plan the model botches is skipped. */
export async function requestPlan(
  llm: LlmClient,
  input: string,
  toolNames: string[],
  signal?: AbortSignal,
  turn?: TurnOptions,
): Promise<{ steps: TaskStep[]; usage?: Usage; error?: string }> {
  const res = await llm.completeJson(
    [
      {
        role: 'system',
        content: `${PLAN_INSTRUCTIONS}\nAvailable tools: ${toolNames.join(', ') || '(none)'}.`,
      },
      { role: 'user', content: input },
    ],
    signal,
    turn,
  );
  const usage = readUsage(res);
  try {
    const text = answerText(res) ?? '';
    if (text.length > constants.MAX_MODEL_TEXT_CHARS) throw new Error('the plan is too long');
    const parsed = JSON.parse(text) as { steps?: unknown };
    if (!Array.isArray(parsed.steps)) throw new Error('no "steps" array');
    const steps = parsed.steps.flatMap((s): TaskStep[] => {
      if (typeof s === 'string' && s.trim())
        return [{ title: s.trim().slice(0, MAX_STEP_TITLE_CHARS), done: false }];
      const o = s as { title?: unknown; tool?: unknown };
      if (typeof o?.title !== 'string' || !o.title.trim()) return [];
      return [
        {
          title: o.title.trim().slice(0, MAX_STEP_TITLE_CHARS),
          ...(typeof o.tool === 'string' && o.tool ? { tool: o.tool.slice(0, 128) } : {}),
          done: false,
        },
      ];
    });
    return { steps: steps.slice(0, 10), ...(usage ? { usage } : {}) };
  } catch (err) {
    return { steps: [], ...(usage ? { usage } : {}), error: `unusable plan: ${(err as Error).message}` };
  }
}

/**
 * Splits planned steps into those the agent can carry out and those naming a tool it cannot reach (not
 * its tool, or served by no executor): a step the agent cannot do would sit in the task stack forever.
 */
export function keepReachable(
  steps: TaskStep[],
  reachable: ReadonlySet<string>,
): { kept: TaskStep[]; dropped: Array<{ title: string; tool: string }> } {
  const kept: TaskStep[] = [];
  const dropped: Array<{ title: string; tool: string }> = [];
  for (const step of steps) {
    if (step.tool === undefined || reachable.has(step.tool)) kept.push(step);
    else dropped.push({ title: step.title, tool: step.tool });
  }
  return { kept, dropped };
}

/**
 * The step a call of `tool` works on: the first open step naming that tool (plan order), else the current
 * step when it names no tool. A call never works on a step naming another tool.
 */
function stepOf(state: RunState, tool: string): TaskStep | undefined {
  const open = state.plan.steps.filter((s) => !s.done);
  const current = open[0];
  return open.find((s) => s.tool === tool) ?? (current?.tool === undefined ? current : undefined);
}

/** Ticks off the step a successful call of `tool` completes (see `stepOf`). */
export function tickOff(state: RunState, tool: string): TaskStep | undefined {
  const step = stepOf(state, tool);
  if (step) step.done = true;
  return step;
}

/**
 * A failed call of `tool` leaves its step open, and a step that named no tool now names this one: only
 * its own work succeeding ticks it, never a later call of another tool nor the final answer.
 */
export function holdOpen(state: RunState, tool: string): TaskStep | undefined {
  const step = stepOf(state, tool);
  if (step && step.tool === undefined) step.tool = tool;
  return step;
}

/**
 * On a final answer, the open steps that name no tool (writing the answer, summarizing) are done by it;
 * steps naming a tool that was never called stay open.
 */
export function finishOpenSteps(state: RunState): TaskStep[] {
  const done = state.plan.steps.filter((s) => !s.done && s.tool === undefined);
  for (const s of done) s.done = true;
  return done;
}

/** The task stack as the model reads it every turn. */
export function renderTaskStack(steps: TaskStep[]): string {
  const current = steps.findIndex((s) => !s.done);
  return steps
    .map(
      (s, i) =>
        `${i + 1}. [${s.done ? 'x' : ' '}] ${s.title}${s.tool ? ` (tool: ${s.tool})` : ''}${i === current ? '  <- current' : ''}`,
    )
    .join('\n');
}
