import { StateDeltaWriter } from '@agent-reach/protocol';
import type { ChatMessage, RunState } from '../agent-loop/run-state.js';
import { callArguments, storedStateJson } from './stored-record.js';

/**
 * How a checkpoint's state is stored (see protocol's state-record.ts):
 * - `delta` (default): a base, then per checkpoint a line of what changed (steps appended, tasks ticked,
 *   counters), a new base from time to time, on a rewrite of the history and at the run's end;
 * - `whole`: the whole state at every checkpoint, as records were written before deltas (kept to measure
 *   against and to write records of the earlier format in tests).
 */
export type StateFormat = 'delta' | 'whole';

/**
 * Writes one run's stored state for one checkpoint writer. A step is stored without its `arguments` when
 * an assistant message of the stored history holds them (the reader puts them back from it), so a call's
 * arguments are kept once; a rewrite of the history writes a new base, stored against the new history.
 */
export class StoredStateWriter {
  readonly #deltas = new StateDeltaWriter();
  #calls: Map<string, string> | undefined;

  constructor(private readonly format: StateFormat) {}

  /**
   * What the checkpoint writes for the state: a base to SET, a delta line (`\n…`) to APPEND, or '' for
   * nothing. `fresh` are the messages the checkpoint appends (all of them when `rewrite`).
   */
  next(
    state: Omit<RunState, 'messages'>,
    messages: readonly ChatMessage[],
    fresh: readonly ChatMessage[],
    rewrite: boolean,
  ): string {
    if (state.outcome) return storedStateJson(state, messages);
    if (this.format === 'whole') return JSON.stringify(state);
    if (rewrite || !this.#calls) this.#calls = callArguments(messages);
    else for (const [id, args] of callArguments(fresh)) this.#calls.set(id, args);
    const calls = this.#calls;
    const steps = state.steps.map((s) => {
      if (calls.get(s.tool_call_id) !== s.arguments) return s;
      const { arguments: _args, ...rest } = s;
      return rest;
    });
    return this.#deltas.next({ ...state, steps }, rewrite);
  }
}
