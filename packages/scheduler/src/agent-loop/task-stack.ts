import type { LlmClient } from '../llm.js';
import type { RunState, TaskStep, Usage } from './run-state.js';

const PLAN_INSTRUCTIONS =
  'Break the user request into a short plan before acting. Answer only with a JSON object ' +
  '{"steps": [{"title": "<what to do>", "tool": "<tool name, if one is needed>"}]} with 1 to 6 steps, ' +
  'in order. A request that needs a single action has a single step.';

/** Asks the model for a plan; the steps become the run's task stack. A plan the model botches is skipped. */
export async function requestPlan(
  llm: LlmClient,
  input: string,
  toolNames: string[],
  signal?: AbortSignal,
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
  );
  const usage = res.usage
    ? {
        prompt_tokens: res.usage.prompt_tokens,
        completion_tokens: res.usage.completion_tokens,
        total_tokens: res.usage.total_tokens,
      }
    : undefined;
  const text = res.choices[0]?.message.content ?? '';
  try {
    const parsed = JSON.parse(text) as { steps?: unknown };
    if (!Array.isArray(parsed.steps)) throw new Error('no "steps" array');
    const steps = parsed.steps.flatMap((s): TaskStep[] => {
      if (typeof s === 'string' && s.trim()) return [{ title: s.trim(), done: false }];
      const o = s as { title?: unknown; tool?: unknown };
      if (typeof o?.title !== 'string' || !o.title.trim()) return [];
      return [
        {
          title: o.title.trim(),
          ...(typeof o.tool === 'string' && o.tool ? { tool: o.tool } : {}),
          done: false,
        },
      ];
    });
    return { steps: steps.slice(0, 10), ...(usage ? { usage } : {}) };
  } catch (err) {
    return { steps: [], ...(usage ? { usage } : {}), error: `unusable plan: ${(err as Error).message}` };
  }
}

/** Ticks off the step a successful tool call completes: the first open step naming that tool, else the first open step. */
export function tickOff(state: RunState, tool: string): TaskStep | undefined {
  const open = state.plan.steps.filter((s) => !s.done);
  const step = open.find((s) => s.tool === tool) ?? open.find((s) => s.tool === undefined) ?? open[0];
  if (step) step.done = true;
  return step;
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
