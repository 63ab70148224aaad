import { isDeepStrictEqual } from 'node:util';
import type { RunOutcome, StepRecord, ToolResult } from '@agent-reach/protocol';
import { parseJsonSafely } from '@agent-reach/shared';
import type { RunEvent } from '../agent-loop/events.js';
import type { ChatMessage, RunState } from '../agent-loop/run-state.js';

/*
 * A run's record keeps each fact once. Its events refer to what its state and messages hold instead of
 * repeating it, and the checkpoint that finishes a run drops the last repeats from the state:
 *
 * - `tool_result`: stored as `{type, tool_call_id, at}`; the rest is the call's step (the state's
 *   `steps`, never compacted away), its result the call's tool message (else the run's results hash,
 *   for a call whose message compaction folded away). Records of the previous release stored the step's
 *   fields and left out only `arguments` and `result`; they are read as before.
 * - `tool_dispatched` and `llm_request`: each call without its `arguments`, which are the assistant
 *   message's (else, once compaction folded that message away, the call's step: compaction folds only
 *   answered turns).
 * - `run_finished`: stored without its `outcome`, which is the final state's.
 * - the final state: its outcome without `steps` (the state's own), and each step without `arguments`
 *   when an assistant message of the final history holds them (nothing folds a finished run's history).
 *
 * An event is stored short only when reading it back from the record as it will be gives exactly the
 * event (checked as it is written); otherwise it is stored whole, so nothing a reader shows is lost.
 */

/** What a run's stored references are read back from. */
export class RecordRefs {
  #steps: Map<string, StepRecord> | undefined;
  #calls: Map<string, string> | undefined;
  #tools: Map<string, string> | undefined;

  constructor(
    private readonly stepList: readonly StepRecord[],
    private readonly messages: readonly ChatMessage[],
    readonly outcome: RunOutcome | undefined,
    private readonly results: Readonly<Record<string, string>> = {},
  ) {}

  step(id: string): StepRecord | undefined {
    this.#steps ??= new Map(this.stepList.map((s) => [s.tool_call_id, s]));
    return this.#steps.get(id);
  }

  /** A call's arguments: its assistant message's, else its step's. */
  arguments(id: string): string | undefined {
    this.#calls ??= callArguments(this.messages);
    return this.#calls.get(id) ?? this.step(id)?.arguments;
  }

  /** A call's result as recorded: its tool message, else its entry in the run's results hash. */
  result(id: string): ToolResult | undefined {
    if (!this.#tools) {
      this.#tools = new Map();
      for (const m of this.messages)
        if (m.role === 'tool' && typeof m.content === 'string') this.#tools.set(m.tool_call_id, m.content);
    }
    return resultOf(this.#tools.get(id) ?? this.results[id]);
  }
}

/** The arguments of every call the assistant messages hold, by call id. */
function callArguments(messages: readonly ChatMessage[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of messages) {
    if (m.role !== 'assistant' || !m.tool_calls) continue;
    for (const c of m.tool_calls) if (c.type === 'function') out.set(c.id, c.function.arguments);
  }
  return out;
}

/** A tool result as recorded (a tool message's content or a results-hash entry), without who ran it. */
function resultOf(raw: string | undefined): ToolResult | undefined {
  if (raw === undefined) return undefined;
  try {
    const parsed = parseJsonSafely<(ToolResult & { executor_id?: string }) | null>(raw);
    if (!parsed || typeof parsed !== 'object' || typeof parsed.ok !== 'boolean') return undefined;
    const { executor_id: _executor, ...result } = parsed;
    return result;
  } catch {
    return undefined;
  }
}

type ToolResultEvent = Extract<RunEvent, { type: 'tool_result' }>;
type LlmRequestEvent = Extract<RunEvent, { type: 'llm_request' }>;
type DispatchedEvent = Extract<RunEvent, { type: 'tool_dispatched' }>;

/** Shorter forms an event may be stored in, shortest first (none: it is stored whole). */
function shortForms(e: RunEvent): object[] {
  switch (e.type) {
    case 'tool_result': {
      const { arguments: _args, result: _result, ...rest } = e;
      return [{ type: e.type, tool_call_id: e.tool_call_id, at: e.at }, rest];
    }
    case 'tool_dispatched':
      return [{ ...e, calls: e.calls.map(({ arguments: _args, ...c }) => c) }];
    case 'llm_request': {
      const calls = e.message.tool_calls;
      if (!calls?.length) return [];
      return [{ ...e, message: { ...e.message, tool_calls: calls.map(({ arguments: _args, ...c }) => c) } }];
    }
    case 'run_finished':
      return [{ type: e.type, at: e.at }];
    default:
      return [];
  }
}

/**
 * An event as the run's stream keeps it: the shortest form that `readStoredEvent` turns back into this
 * very event from `refs` (what the record holds once the checkpoint carrying the event is written), else
 * the event whole. Without `refs` (events written outside a checkpoint) it is stored whole.
 */
export function storedEventJson(e: RunEvent, refs?: RecordRefs): string {
  if (refs) {
    for (const form of shortForms(e)) {
      if (isDeepStrictEqual(readStoredEvent(form as RunEvent, refs), e)) return JSON.stringify(form);
    }
  }
  return JSON.stringify(e);
}

/** A stored event made whole again from the run's record (an event stored whole is returned as it is). */
export function readStoredEvent(e: RunEvent, refs: RecordRefs): RunEvent {
  switch (e.type) {
    case 'tool_result':
      if (e.tool === undefined) return fromStep(e, refs);
      return e.arguments === undefined ? withCall(e, refs) : e;
    case 'tool_dispatched':
      if (!e.calls.some((c) => c.arguments === undefined)) return e;
      return {
        ...e,
        calls: e.calls.map((c) =>
          c.arguments === undefined ? { ...c, arguments: refs.arguments(c.tool_call_id) ?? '' } : c,
        ),
      } as DispatchedEvent;
    case 'llm_request': {
      const calls = e.message.tool_calls;
      if (!calls?.some((c) => c.arguments === undefined)) return e;
      const message = {
        ...e.message,
        tool_calls: calls.map((c) =>
          c.arguments === undefined ? { ...c, arguments: refs.arguments(c.id) ?? '' } : c,
        ),
      };
      return { ...e, message } as LlmRequestEvent;
    }
    case 'run_finished':
      return e.outcome === undefined && refs.outcome ? { ...e, outcome: refs.outcome } : e;
    default:
      return e;
  }
}

/** The result as the event gave it: the recorded one with the executor's tries, which the model's copy leaves out. */
function triedResult(
  seen: ToolResult | undefined,
  tries: { attempts?: number; attempt_log?: StepRecord['attempt_log'] },
): ToolResult | undefined {
  return seen && seen.attempts === undefined && tries.attempts !== undefined
    ? { ...seen, attempts: tries.attempts, ...(tries.attempt_log ? { attempt_log: tries.attempt_log } : {}) }
    : seen;
}

/** A `tool_result` stored as a reference to its call: every field from the call's step and result. */
function fromStep(e: ToolResultEvent, refs: RecordRefs): ToolResultEvent {
  const step = refs.step(e.tool_call_id);
  if (!step) return e;
  // The event carries what the step carries, bar the two fields only steps have.
  const { error_kind: _kind, ref: _ref, ...shared } = step;
  const result = triedResult(refs.result(e.tool_call_id), shared);
  return {
    type: 'tool_result',
    ...shared,
    arguments: shared.arguments ?? refs.arguments(e.tool_call_id) ?? '',
    ...(result?.error ? { error: result.error } : {}),
    ...(result ? { result } : {}),
    at: e.at,
  };
}

/** A `tool_result` of the previous release's record: its `arguments` and `result` put back. */
function withCall(e: ToolResultEvent, refs: RecordRefs): ToolResultEvent {
  const result = triedResult(refs.result(e.tool_call_id), e);
  return {
    ...e,
    arguments: refs.step(e.tool_call_id)?.arguments ?? '',
    ...(result ? { result } : {}),
  };
}

/** Whether an event needs the run's record to be read whole. */
export function refersToRecord(e: RunEvent): boolean {
  switch (e.type) {
    case 'tool_result':
      return e.arguments === undefined;
    case 'tool_dispatched':
      return e.calls.some((c) => c.arguments === undefined);
    case 'llm_request':
      return e.message.tool_calls?.some((c) => c.arguments === undefined) === true;
    case 'run_finished':
      return e.outcome === undefined;
    default:
      return false;
  }
}

/**
 * The state as the run's record keeps it. A final state leaves out what it holds twice: its outcome's
 * steps (the state's own) and each step's arguments that an assistant message of the final history
 * holds. `readStoredState` puts both back.
 */
export function storedStateJson(state: Omit<RunState, 'messages'>, messages: readonly ChatMessage[]): string {
  const { outcome } = state;
  if (!outcome) return JSON.stringify(state);
  const args = callArguments(messages);
  const steps = state.steps.map((s) => {
    if (args.get(s.tool_call_id) !== s.arguments) return s;
    const { arguments: _args, ...rest } = s;
    return rest;
  });
  const { steps: outcomeSteps, ...rest } = outcome;
  const sameSteps = outcomeSteps === state.steps || isDeepStrictEqual(outcomeSteps, state.steps);
  return JSON.stringify({ ...state, steps, outcome: sameSteps ? rest : outcome });
}

/** A stored state's steps and outcome as they were written (see `storedStateJson`). */
export function readStoredState(
  parsed: Omit<RunState, 'messages'>,
  messages: readonly ChatMessage[],
): Omit<RunState, 'messages'> {
  let steps = parsed.steps;
  if (steps.some((s) => s.arguments === undefined)) {
    const args = callArguments(messages);
    steps = steps.map((s) =>
      s.arguments === undefined ? { ...s, arguments: args.get(s.tool_call_id) ?? '' } : s,
    );
  }
  const outcome = parsed.outcome && {
    ...parsed.outcome,
    steps: parsed.outcome.steps === undefined ? steps : parsed.outcome.steps,
  };
  return { ...parsed, steps, ...(outcome ? { outcome } : {}) };
}
