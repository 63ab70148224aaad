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
 * - `tool_dispatched` and `llm_request`: each call by its id alone, its name and `arguments` being the
 *   assistant message's (else, once compaction folded that message away, the call's step: compaction
 *   folds only answered turns); `llm_request` without its count of calls (its message's).
 * - `run_started`: stored without the agent, input and intent, which are the state's.
 * - `run_finished`: stored without its `outcome`, which is the final state's.
 * - the final state: its outcome without `steps` (the state's own) and without `usage` and `iterations`
 *   when they are the state's, its `input` when it is the history's first user message, and each step
 *   without `arguments` when an assistant message of the final history holds them (nothing folds a
 *   finished run's history). It is stored short only when reading it back gives exactly the state.
 * - the results hash: the checkpoint that finishes a run deletes the entries of calls whose tool message
 *   the final history holds (the step keeps the executor's tries and id, the message the rest); what is
 *   left is the results of calls compaction folded away.
 *
 * An event is stored short only when reading it back from the record as it will be gives exactly the
 * event (checked as it is written); otherwise it is stored whole, so nothing a reader shows is lost.
 */

/** What a run's record holds that its stored events refer to. */
export interface RecordParts {
  steps: readonly StepRecord[];
  messages: readonly ChatMessage[];
  outcome?: RunOutcome | undefined;
  /** The run's results hash (tool call id → result as recorded). */
  results?: Readonly<Record<string, string>>;
  /** What the run started with (`run_started` refers to it). */
  run?: Pick<RunState, 'agent' | 'input' | 'intent'>;
}

/** What a run's stored references are read back from. */
export class RecordRefs {
  #steps: Map<string, StepRecord> | undefined;
  #calls: Map<string, { name: string; arguments: string }> | undefined;
  #tools: Map<string, string> | undefined;

  constructor(private readonly parts: RecordParts) {}

  get outcome(): RunOutcome | undefined {
    return this.parts.outcome;
  }

  get run(): RecordParts['run'] {
    return this.parts.run;
  }

  step(id: string): StepRecord | undefined {
    this.#steps ??= new Map(this.parts.steps.map((s) => [s.tool_call_id, s]));
    return this.#steps.get(id);
  }

  /** A call's arguments: its assistant message's, else its step's. */
  arguments(id: string): string | undefined {
    this.#calls ??= calls(this.parts.messages);
    return this.#calls.get(id)?.arguments ?? this.step(id)?.arguments;
  }

  /** A call's tool name: its assistant message's, else its step's. */
  name(id: string): string | undefined {
    this.#calls ??= calls(this.parts.messages);
    return this.#calls.get(id)?.name ?? this.step(id)?.tool;
  }

  /** A call's result as recorded: its tool message, else its entry in the run's results hash. */
  result(id: string): ToolResult | undefined {
    if (!this.#tools) {
      this.#tools = new Map();
      for (const m of this.parts.messages)
        if (m.role === 'tool' && typeof m.content === 'string') this.#tools.set(m.tool_call_id, m.content);
    }
    return resultOf(this.#tools.get(id) ?? this.parts.results?.[id]);
  }
}

/** The name and arguments of every call the assistant messages hold, by call id. */
function calls(messages: readonly ChatMessage[]): Map<string, { name: string; arguments: string }> {
  const out = new Map<string, { name: string; arguments: string }>();
  for (const m of messages) {
    if (m.role !== 'assistant' || !m.tool_calls) continue;
    for (const c of m.tool_calls) if (c.type === 'function') out.set(c.id, c.function);
  }
  return out;
}

/** The arguments of every call the assistant messages hold, by call id. */
export function callArguments(messages: readonly ChatMessage[]): Map<string, string> {
  return new Map([...calls(messages)].map(([id, c]) => [id, c.arguments]));
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
type StartedEvent = Extract<RunEvent, { type: 'run_started' }>;
type LlmCall = NonNullable<LlmRequestEvent['message']['tool_calls']>[number];

/** Shorter forms an event may be stored in, shortest first (none: it is stored whole). */
function shortForms(e: RunEvent): object[] {
  switch (e.type) {
    case 'tool_result': {
      const { arguments: _args, result: _result, ...rest } = e;
      return [{ type: e.type, tool_call_id: e.tool_call_id, at: e.at }, rest];
    }
    case 'tool_dispatched':
      return [
        { ...e, calls: e.calls.map((c) => ({ tool_call_id: c.tool_call_id })) },
        { ...e, calls: e.calls.map(({ arguments: _args, ...c }) => c) },
      ];
    case 'llm_request': {
      const { tool_calls: _count, ...uncounted } = e;
      const calls = e.message.tool_calls;
      if (!calls?.length) return [uncounted];
      const message = (strip: (c: LlmCall) => object) => ({
        ...e.message,
        tool_calls: calls.map(strip),
      });
      return [
        { ...uncounted, message: message(({ name: _name, arguments: _args, ...c }) => c) },
        { ...e, message: message(({ arguments: _args, ...c }) => c) },
      ];
    }
    case 'run_started': {
      const { agent: _agent, input: _input, intent: _intent, intent_signals: _signals, ...rest } = e;
      return [rest];
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
          c.arguments === undefined
            ? {
                tool_call_id: c.tool_call_id,
                tool: c.tool ?? refs.name(c.tool_call_id) ?? '',
                arguments: refs.arguments(c.tool_call_id) ?? '',
              }
            : c,
        ),
      } as DispatchedEvent;
    case 'llm_request':
      return refersToRecord(e) ? llmRequest(e, refs) : e;
    case 'run_started':
      return e.input === undefined ? started(e, refs) : e;
    case 'run_finished':
      return e.outcome === undefined && refs.outcome ? { ...e, outcome: refs.outcome } : e;
    default:
      return e;
  }
}

/** An `llm_request` stored without its count of calls and its calls' names and arguments, made whole. */
function llmRequest(e: LlmRequestEvent, refs: RecordRefs): LlmRequestEvent {
  const calls = e.message.tool_calls;
  const message = calls
    ? {
        ...e.message,
        tool_calls: calls.map((c) =>
          c.arguments === undefined
            ? {
                id: c.id,
                name: c.name ?? refs.name(c.id) ?? '',
                arguments: refs.arguments(c.id) ?? '',
                ...(c.arguments_chars === undefined ? {} : { arguments_chars: c.arguments_chars }),
                ...(c.arguments_sha256 === undefined ? {} : { arguments_sha256: c.arguments_sha256 }),
              }
            : c,
        ),
      }
    : e.message;
  return { ...e, tool_calls: e.tool_calls ?? calls?.length ?? 0, message };
}

/** A `run_started` stored without what the run's state holds: its agent, input and intent. */
function started(e: StartedEvent, refs: RecordRefs): StartedEvent {
  const run = refs.run;
  if (!run) return e;
  const { type, agent: _agent, input: _input, ...rest } = e;
  return {
    type,
    agent: run.agent,
    input: run.input,
    ...rest,
    ...(run.intent ? { intent: run.intent.intent, intent_signals: run.intent.signals } : {}),
  };
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
      return (
        e.tool_calls === undefined || e.message.tool_calls?.some((c) => c.arguments === undefined) === true
      );
    case 'run_started':
      return e.input === undefined;
    case 'run_finished':
      return e.outcome === undefined;
    default:
      return false;
  }
}

type StoredState = Omit<RunState, 'messages'>;

/** The first user message's text: a final state's `input` when it is the same (see `storedStateJson`). */
function firstInput(messages: readonly ChatMessage[]): string | undefined {
  const first = messages.find((m) => m.role === 'user');
  return typeof first?.content === 'string' ? first.content : undefined;
}

/**
 * The state as the run's record keeps it. A final state leaves out what it holds twice: its outcome's
 * steps, usage and iterations (the state's own), its input when the history's first user message is it,
 * and each step's arguments that an assistant message of the final history holds. `readStoredState` puts
 * them back; the short form is kept only when reading it back gives exactly the state.
 */
export function storedStateJson(state: StoredState, messages: readonly ChatMessage[]): string {
  const whole = JSON.stringify(state);
  const { outcome } = state;
  if (!outcome) return whole;
  const args = callArguments(messages);
  const steps = state.steps.map((s) => {
    if (args.get(s.tool_call_id) !== s.arguments) return s;
    const { arguments: _args, ...rest } = s;
    return rest;
  });
  const { steps: _steps, usage: _usage, iterations: _iterations, ...short } = outcome;
  const { input: _input, ...rest } = state;
  const stored = JSON.stringify({
    ...(firstInput(messages) === state.input ? rest : state),
    steps,
    outcome: {
      ...short,
      ...(isDeepStrictEqual(outcome.usage, state.usage) ? {} : { usage: outcome.usage }),
      ...(outcome.iterations === state.iterations ? {} : { iterations: outcome.iterations }),
      ...(isDeepStrictEqual(outcome.steps, state.steps) ? {} : { steps: outcome.steps }),
    },
  });
  const same = isDeepStrictEqual(
    readStoredState(JSON.parse(stored) as StoredState, messages),
    JSON.parse(whole) as StoredState,
  );
  return same ? stored : whole;
}

/** A stored state's input, steps and outcome as they were written (see `storedStateJson`). */
export function readStoredState(parsed: StoredState, messages: readonly ChatMessage[]): StoredState {
  let steps = parsed.steps;
  if (steps.some((s) => s.arguments === undefined)) {
    const args = callArguments(messages);
    steps = steps.map((s) =>
      s.arguments === undefined ? { ...s, arguments: args.get(s.tool_call_id) ?? '' } : s,
    );
  }
  const outcome = parsed.outcome && {
    ...parsed.outcome,
    usage: parsed.outcome.usage ?? parsed.usage,
    iterations: parsed.outcome.iterations ?? parsed.iterations,
    steps: parsed.outcome.steps ?? steps,
  };
  const input = parsed.input ?? firstInput(messages) ?? '';
  return { ...parsed, input, steps, ...(outcome ? { outcome } : {}) };
}

/**
 * The results-hash entries the checkpoint that finishes a run deletes: those of calls whose tool message
 * the final history holds, and whose step keeps what the message leaves out (the executor's tries and id).
 */
export function resultsHeldElsewhere(state: RunState): string[] {
  const stepped = new Set(state.steps.map((s) => s.tool_call_id));
  return state.messages.flatMap((m) =>
    m.role === 'tool' && stepped.has(m.tool_call_id) ? [m.tool_call_id] : [],
  );
}
