import type { RunEvent, StepKind } from '../agent-loop/events.js';
import { RunLost, type CheckpointWrite } from '../agent-loop/run-agent.js';
import type { RunState } from '../agent-loop/run-state.js';
import { CheckpointRefused, type RunCheckpointer, type RunStore } from './run-store.js';

/**
 * Where one run's checkpoints live, as its owner sees them (after LangGraph's checkpoint saver): the
 * run worker hands `save` to the loop as its checkpoint hook and reads the record back with `load`.
 */
export interface CheckpointSaver {
  /** The run's last checkpoint, with the decisions made since it parked, and whether a cancel is pending. */
  load(): Promise<{ state: RunState | undefined; cancelRequested: boolean }>;
  /**
   * Snapshots the state and the events since the last checkpoint now, after the step `step`; the
   * returned write sends them. It throws `RunLost` when another process owns the run now.
   */
  save(state: RunState, events: RunEvent[], step: StepKind): CheckpointWrite;
}

/** What the run's owner does with what a checkpoint write learns. */
export interface CheckpointHooks {
  /** A person asked to cancel the run. */
  onCancelRequested(): void;
  /** A checkpoint was written. */
  afterSave(): void;
}

/** The checkpoint saver of a run claimed from the store: writes go through the claim's writer. */
export function createCheckpointSaver(
  store: RunStore,
  writer: RunCheckpointer,
  hooks: CheckpointHooks,
): CheckpointSaver {
  return {
    load: () => store.load(writer.runId),
    save: (state, events) => {
      const send = writer.prepare(state, events);
      return async () => {
        try {
          const { cancelRequested } = await send();
          if (cancelRequested) hooks.onCancelRequested();
        } catch (err) {
          if (err instanceof CheckpointRefused && err.lost) throw new RunLost(err.message);
          throw err;
        }
        hooks.afterSave();
      };
    },
  };
}
