import { errorResult, toolMessageContent } from '@agent-reach/protocol';
import { redisUnavailable } from '@agent-reach/shared';
import {
  markFinished,
  markParked,
  unansweredCalls,
  type FinalStatus,
  type RunOutcome,
  type RunState,
} from './run-state.js';
import { rejectedByPerson } from './approvals.js';
import { cancelChildren } from './agent-tools.js';
import { incompleteTasks } from './open-tasks.js';
import { CheckpointFailed, RunLost } from './checkpoints.js';
import { RunRecordBehind } from '../fleet/dispatcher.js';
import type { RunContext } from './run-context.js';
import type { EndStep } from './steps.js';

/** Ends the run with the outcome an end step names, and checkpoints it. */
export async function endRun(run: RunContext, step: EndStep): Promise<RunOutcome> {
  switch (step.type) {
    case 'final_output': {
      // An answer leaving task-stack steps open still ends the run, marked so (see open-tasks.ts).
      const open = step.reason === undefined ? incompleteTasks(run.state) : undefined;
      const report = open?.report ?? step.report;
      return finish(
        run,
        'succeeded',
        open?.reason ?? step.reason ?? (step.truncated ? 'final_answer_truncated' : 'final_answer'),
        {
          answer: step.answer,
          ...(step.output !== undefined ? { output: step.output } : {}),
          ...(report ? { report } : {}),
        },
      );
    }
    case 'fail':
      return finish(run, 'failed', step.reason, {
        ...(step.answer !== undefined ? { answer: step.answer } : {}),
        report: step.report,
      });
    case 'guard_stop':
      run.emit({ type: 'guard', guard: step.stop.guard, action: 'stop', report: step.stop.report });
      return finish(run, step.stop.status, step.stop.guard, { report: step.stop.report });
    case 'cancel':
      return finish(run, 'cancelled', 'cancelled', { report: 'the run was cancelled' });
  }
}

/** Parks the run until a person decides (the state says which calls wait). */
export async function park(
  run: RunContext,
  why: 'park_for_approval' | 'await_children' = 'park_for_approval',
): Promise<'parked'> {
  // A run waiting for its child runs is still running: it waits as it would for a tool.
  if (why === 'park_for_approval') markParked(run.state);
  await run.checkpoint('parked');
  return 'parked';
}

/**
 * A step threw. Losing the run (or Redis) leaves the state as last checkpointed, for whoever runs it
 * next; anything else ends the run `internal_error`.
 */
export async function endOnError(run: RunContext, err: unknown): Promise<RunOutcome | 'released'> {
  if (err instanceof RunLost || run.deps.release?.aborted) {
    run.log.warn('run released: this process no longer owns it');
    return 'released';
  }
  if (err instanceof CheckpointFailed) throw err;
  // The run's record went back (a failover lost its last step): resume from what it holds.
  if (err instanceof RunRecordBehind) throw new CheckpointFailed(err);
  // Redis could not serve a step (down, paused, out of memory): resume from the last checkpoint later.
  if (redisUnavailable(err)) throw new CheckpointFailed(err);
  run.log.error({ err }, 'run failed');
  try {
    return await finish(run, 'failed', 'internal_error', { report: (err as Error).message });
  } catch (last) {
    if (last instanceof RunLost) return 'released';
    throw last;
  }
}

async function finish(
  run: RunContext,
  status: FinalStatus,
  reason: string,
  extra: { answer?: string; output?: unknown; report?: string },
): Promise<RunOutcome> {
  const { state } = run;
  await cancelChildren(run);
  const outcome: RunOutcome = {
    status,
    reason,
    ...extra,
    usage: { ...state.usage },
    iterations: state.iterations,
    steps: state.steps,
  };
  // A run that ends part-way through a turn still leaves a valid conversation: every call the model
  // made is answered, those never settled as not run.
  for (const call of unansweredCalls(state)) {
    state.messages.push({
      role: 'tool',
      tool_call_id: call.id,
      content: toolMessageContent(
        errorResult(
          { toolCallId: call.id, name: call.name },
          { kind: 'unavailable', message: `not answered: the run ended (${reason})`, retryable: false },
        ),
      ),
    });
  }
  markFinished(state, outcome);
  run.emit({ type: 'run_finished', outcome });
  await run.checkpoint('finished');
  return outcome;
}

/** Error kinds that mean the platform refused a call before any tool ran. */
const PLATFORM_REFUSALS: ReadonlySet<string> = new Set([
  'unknown_tool',
  'forbidden',
  'circuit_open',
  'unavailable',
]);

/**
 * A report when the run made tool calls and the platform refused every one (so no tool ever ran and
 * no person turned one down): such a run is not reported as a success.
 */
export function platformRefusals(state: RunState): string | undefined {
  if (state.steps.length === 0) return undefined;
  const all = state.steps.every(
    (s) =>
      !s.ok &&
      s.error_kind !== undefined &&
      PLATFORM_REFUSALS.has(s.error_kind) &&
      !rejectedByPerson(state, s.tool_call_id),
  );
  if (!all) return undefined;
  const seen = [...new Set(state.steps.map((s) => `${s.tool.slice(0, 64)}: ${s.error_kind}`))].slice(0, 10);
  return `the model answered without any tool having run: every tool call was refused (${seen.join('; ')})`;
}
