import { errorResult } from '@agent-reach/protocol';
import { constants, TIMED_OUT, waitAtMost, type ContextProviderSpec } from '@agent-reach/shared';
import type { ChatMessage } from './run-state.js';
import { usedIds } from './model-answer.js';
import type { RunContext } from './run-context.js';
import type { NextStep, OwedCall, StepResult } from './steps.js';
import { resolveToolCalls, resultForModel, storedContentForModel } from './tool-calls.js';
import { record } from './tool-round.js';

/**
 * Ids of context providers' calls: this prefix and the provider's place (`ctx_1`), with a suffix when a
 * session's history already holds that id, as the platform's own `call_t<turn>_<i>` ids are made: the same
 * for the same history, so a replay answers them from the recording.
 */
export const CONTEXT_CALL_PREFIX = 'ctx_';

/** Arguments of a provider that declares none: the request as `query`. */
const DEFAULT_ARGUMENTS = { query: '{{input}}' } as const;

/**
 * Calls the agent's context providers with the request, before the first model turn. The calls go the
 * way the model's calls go: into the history as a turn of their own (so the run's ledger holds them
 * before they are published), through the dispatcher to the executors (validated, authorized, recorded),
 * and their results into the history, where the model reads them as context. A failed provider that is
 * `required` fails the run (`context_failed`); any other failure is recorded and the run goes on.
 */
export async function contextStep(run: RunContext, after: NextStep): Promise<StepResult> {
  const { state, deps } = run;
  const providers = deps.agent.context_providers ?? [];
  state.contextRequested = true;
  const used = usedIds(state);
  const calls: OwedCall[] = providers.map((p, i) => ({
    id: freeId(`${CONTEXT_CALL_PREFIX}${i + 1}`, used),
    name: p.tool,
    arguments: JSON.stringify(fillArguments(p.arguments ?? DEFAULT_ARGUMENTS, state.input)),
  }));
  state.messages.push({
    role: 'assistant',
    content: null,
    tool_calls: calls.map((c) => ({
      id: c.id,
      type: 'function',
      function: { name: c.name, arguments: c.arguments },
    })),
  });
  // The calls are durable (and in the run's ledger) before any executor may run them.
  await run.checkpoint('llm_response');
  run.emit({
    type: 'tool_dispatched',
    turn: 0,
    calls: calls.map((c) => ({ tool_call_id: c.id, tool: c.name, arguments: c.arguments })),
  });
  const answeredLocally = new Set<string>();
  const remainingMs = Math.max(1, state.deadlineAt - Date.now());
  const ran = await waitAtMost(resolveToolCalls(state, calls, deps, true, answeredLocally), remainingMs);
  const results = calls.map(
    (c, i) =>
      (ran === TIMED_OUT ? undefined : ran[i]) ??
      errorResult(
        { toolCallId: c.id, name: c.name },
        { kind: 'unavailable', message: "no result before the run's deadline", retryable: false },
      ),
  );
  const seen = results.map((result, i) => {
    const call = calls[i] as OwedCall;
    const spec = providers[i] as ContextProviderSpec;
    let chars = 0;
    record(run, call, result, 0, answeredLocally.has(call.id) ? 'local' : 'dispatched', (r) => {
      const text = resultForModel(r, spec.max_chars ?? constants.DEFAULT_CONTEXT_PROVIDER_MAX_CHARS);
      chars = r.ok ? text.length : 0;
      return text;
    });
    return {
      tool: call.name,
      tool_call_id: call.id,
      ok: result.ok,
      required: spec.required === true,
      chars,
      ...(result.error ? { error: `${result.error.kind}: ${result.error.message}`.slice(0, 500) } : {}),
    };
  });
  run.emit({ type: 'context', providers: seen });
  const missing = seen.filter((p) => p.required && !p.ok);
  if (missing.length > 0) {
    const report = `required context provider(s) failed before the first model call: ${missing
      .map((p) => `${p.tool} (${p.error ?? 'error'})`)
      .join('; ')}`;
    return { checkpoint: 'tool_results', next: { type: 'fail', reason: 'context_failed', report } };
  }
  return { checkpoint: 'tool_results', next: after };
}

/**
 * The history as the model reads it: the context providers' calls are not the model's own turn, so
 * their results reach it as system messages (`Context from <tool>: …`) and the calls themselves not at all.
 */
export function contextAsSystem(messages: ChatMessage[]): ChatMessage[] {
  const tools = new Map<string, string>();
  return messages.flatMap((m): ChatMessage[] => {
    if (isContextTurn(m)) {
      for (const c of m.tool_calls ?? []) if (c.type === 'function') tools.set(c.id, c.function.name);
      return [];
    }
    if (m.role === 'tool' && tools.has(m.tool_call_id)) {
      const text =
        typeof m.content === 'string' ? storedContentForModel(m.content) : JSON.stringify(m.content);
      return [{ role: 'system', content: `Context from ${tools.get(m.tool_call_id)}: ${text}` }];
    }
    return [m];
  });
}

function freeId(id: string, used: Set<string>): string {
  let free = id;
  for (let n = 1; used.has(free); n += 1) free = `${id}_${n}`;
  used.add(free);
  return free;
}

const isContextCall = (id: string) => id.startsWith(CONTEXT_CALL_PREFIX);

/** True for the history's turn of context providers' calls: the platform's, not the model's. */
export function isContextTurn(m: ChatMessage): m is ChatMessage & { role: 'assistant' } {
  return m.role === 'assistant' && !!m.tool_calls?.length && m.tool_calls.every((c) => isContextCall(c.id));
}

/** A provider's arguments with `{{input}}` in every string value replaced by the request. */
export function fillArguments(template: unknown, input: string): unknown {
  if (typeof template === 'string') return template.split('{{input}}').join(input);
  if (Array.isArray(template)) return template.map((v) => fillArguments(v, input));
  if (template && typeof template === 'object') {
    return Object.fromEntries(
      Object.entries(template as Record<string, unknown>).map(([k, v]) => [k, fillArguments(v, input)]),
    );
  }
  return template;
}
