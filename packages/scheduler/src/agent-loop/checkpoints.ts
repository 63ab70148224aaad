import type { RunState } from './run-state.js';
import type { RunEvent, RunEventBody, StepKind } from './events.js';
import type { AgentLoopDeps } from './loop-options.js';

/** Thrown by a checkpoint write when this process no longer owns the run; never escapes `runAgent`. */
export class RunLost extends Error {
  constructor(message = 'another process owns the run now') {
    super(message);
    this.name = 'RunLost';
  }
}

/** A checkpoint could not be written (Redis away, out of memory, a gap): the run must resume from the last one. */
export class CheckpointFailed extends Error {
  constructor(override readonly cause: unknown) {
    super(`checkpoint failed: ${(cause as Error)?.message ?? String(cause)}`);
    this.name = 'CheckpointFailed';
  }
}

/** A run's event outlet and its ordered checkpoint writer. */
export interface Checkpoints {
  /** Records an event for the next checkpoint and reports it at once (`onEvent`). */
  emit(body: RunEventBody): void;
  /** Checkpoints the state and the events since the last one, after the step `step`. */
  checkpoint(step: StepKind): Promise<void>;
}

/**
 * Checkpoints are written in order, and only the last ones (parking, the end) hold the loop up:
 * - after a plan, tool results or a compaction the write goes behind the next model call; losing it
 *   in a crash costs at most a repeated plan request, since the run's results hash already holds every
 *   tool result and owed calls are answered from it;
 * - a model answer must be durable before its calls are dispatched. With `orderedCheckpoints` (the
 *   checkpoint and the dispatcher share one Redis connection) it is issued before the dispatch and
 *   Redis applies the two in that order, so nothing waits; otherwise it is awaited.
 */
export function createCheckpoints(
  state: RunState,
  deps: Pick<AgentLoopDeps, 'checkpoint' | 'onEvent' | 'orderedCheckpoints' | 'release'>,
): Checkpoints {
  let pending: RunEvent[] = [];
  let behind: Promise<void> = Promise.resolve();
  let behindFailure: unknown;
  const emit = (body: RunEventBody) => {
    const event = { ...body, at: Date.now() } as RunEvent;
    pending.push(event);
    deps.onEvent?.(event, state);
  };
  const checkpoint = async (step: StepKind) => {
    if (deps.release?.aborted) throw new RunLost();
    const events = pending;
    pending = [];
    // A run's start is stored before its first model request: a follower reads it before any live text.
    const mustAwait =
      step === 'started' ||
      step === 'parked' ||
      step === 'finished' ||
      (step === 'llm_response' && !deps.orderedCheckpoints);
    // Snapshot now: the state goes on changing while an earlier write is still in flight.
    const send = deps.checkpoint?.(state, events, step);
    const invoke = async () => {
      // A step is never sent behind one that failed: the store would refuse it as a gap anyway.
      if (!send || behindFailure !== undefined) return;
      try {
        await send();
      } catch (err) {
        throw err instanceof RunLost ? err : new CheckpointFailed(err);
      }
    };
    let write: Promise<void>;
    if (step === 'llm_response' || mustAwait) {
      await behind;
      write = invoke(); // earlier writes have settled: this one is issued now, before anything else
    } else {
      write = behind.then(invoke);
    }
    behind = write.then(
      () => undefined,
      (err: unknown) => {
        behindFailure ??= err;
      },
    );
    if (mustAwait) await write;
    if (behindFailure !== undefined) throw behindFailure;
  };
  return { emit, checkpoint };
}
