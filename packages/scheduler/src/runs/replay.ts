import { randomUUID } from 'node:crypto';
import type { ChatCompletion } from 'openai/resources/chat/completions';
import { AgentReachError, errorResult, isValidRunId, type ToolResult } from '@agent-reach/protocol';
import { parseJsonSafely, variantAgent, type ToolCatalogEntry } from '@agent-reach/shared';
import type { AgentRunner } from './agent-runner.js';
import type { RunEvent } from '../agent-loop/events.js';
import { runAgent, type AgentLoopDeps } from '../agent-loop/run-agent.js';
import { agentInCharge, type ChatMessage, type RunOutcome, type RunState } from '../agent-loop/run-state.js';
import type { DispatchCall, DispatchOptions, DispatchRun } from '../fleet/dispatcher.js';
import type { LlmClient } from '../model/llm.js';
import type { ToolCatalog } from '../fleet/tool-catalog.js';
import type { RunStore } from './run-store.js';
import { variantDeps } from './run-variant.js';
import { recordedChildren } from './replay-children.js';

/** A tool call whose result today differs from the recorded one. */
export interface ReplayDifference {
  toolCallId: string;
  tool: string;
  recorded: { ok: boolean; kind?: string };
  replayed: { ok: boolean; kind?: string } | undefined;
}

/** How a replay answers tool calls. */
export interface ReplayOptions {
  /**
   * Re-execute tool calls on the executors instead of answering them from the recording: only calls of
   * tools declared `readOnly` or `idempotent`, unless `force`. Default false.
   */
  live?: boolean;
  /** With `live`, re-execute calls of every tool (confirmation tools still never run). Default false. */
  force?: boolean;
}

/**
 * Where a replayed call's result came from: the recording, a live execution, nowhere because the tool
 * needs a person's approval (a replay never reuses a recorded decision), or nowhere because the recording
 * has no result for it.
 */
export type ReplayCallSource = 'recorded' | 'live' | 'needs_approval' | 'not_recorded';

export interface ReplayCall {
  toolCallId: string;
  tool: string;
  source: ReplayCallSource;
}

export interface ReplayResult {
  runId: string;
  originalRunId: string;
  mode: 'recorded' | 'live' | 'live_forced';
  outcome: RunOutcome | 'parked' | 'released';
  recordedOutcome: RunOutcome | undefined;
  differences: ReplayDifference[];
  /** Every call the replay answered, in order, with where its result came from. */
  calls: ReplayCall[];
}

/**
 * An LLM client that answers with a run's recorded model turns, in order (and its recorded plan), so a
 * run can be re-run without a model. Asking past the recording is an error, as a model outage would be.
 */
export function recordedLlm(events: RunEvent[], model = 'replay'): LlmClient {
  const turns = events.flatMap((e) => (e.type === 'llm_request' ? [e] : []));
  const plan = events.find((e) => e.type === 'plan');
  let next = 0;
  const completion = (
    content: string | null,
    calls: Array<{ id: string; name: string; arguments: string }> | undefined,
    finish: string,
    refusal: string | null = null,
  ): ChatCompletion => ({
    id: `replay-${next}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [
      {
        index: 0,
        logprobs: null,
        finish_reason: finish as ChatCompletion['choices'][number]['finish_reason'],
        message: {
          role: 'assistant',
          content,
          refusal,
          ...(calls?.length
            ? {
                tool_calls: calls.map((c) => ({
                  id: c.id,
                  type: 'function' as const,
                  function: { name: c.name, arguments: c.arguments },
                })),
              }
            : {}),
        },
      },
    ],
    usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
  });
  return {
    model,
    async complete() {
      const turn = turns[next];
      next += 1;
      if (!turn) throw new AgentReachError('TOOL_FAILED', 'the recording has no more model turns');
      return completion(
        turn.message.content,
        turn.message.tool_calls,
        turn.finish_reason,
        turn.message.refusal ?? null,
      );
    },
    async completeJson() {
      const steps =
        plan?.type === 'plan'
          ? plan.steps.map((s) => ({ title: s.title, ...(s.tool ? { tool: s.tool } : {}) }))
          : [];
      return completion(JSON.stringify({ steps }), undefined, 'stop');
    },
  };
}

/**
 * The run id of a new replay: the original's id with `.replay-<epoch ms>`, found beside it, or
 * `replay_` and a random UUID when that would not be a valid run id (too long).
 */
export function newReplayRunId(originalRunId: string): string {
  const beside = `${originalRunId}.replay-${Date.now()}`;
  return isValidRunId(beside) ? beside : `replay_${randomUUID()}`;
}

/**
 * Re-runs a recorded run with its recorded model turns, as a new run recorded like any other, and reports
 * the tool calls whose outcome changed.
 *
 * By default every tool call is answered with its recorded result: nothing runs, nothing changes
 * anywhere. With `live`, calls of tools declared read-only or idempotent run again on the executors (with
 * `force`, every tool's calls), and the others are answered from the recording. A tool that requires
 * confirmation never runs in a replay: a recorded decision is never reused, so such a call is answered
 * `awaiting_confirmation` and reported as needing a new approval (start a new run to have it decided).
 */
export async function replayRun(
  originalRunId: string,
  deps: { runner: AgentRunner; store: RunStore },
  options: ReplayOptions = {},
): Promise<ReplayResult> {
  const { state: original } = await deps.store.load(originalRunId);
  if (!original) throw new AgentReachError('RUN_NOT_FOUND', `unknown run ${originalRunId}`);
  const declared = deps.runner.agent(original.agent);
  // A run of a variant is replayed with its variant: the agent, the tools and aliases it ran with.
  const agent = declared && variantAgent(declared, original.variant?.overrides);
  const runDispatcher = variantDeps(original.variant, deps.runner.catalog, deps.runner.dispatcher).dispatcher;
  if (!agent) throw new AgentReachError('AGENTS_INVALID', `unknown agent "${original.agent}"`);
  const events = (await deps.store.events(originalRunId)).map((e) => e.event);
  const recordedResults = await recordedResultsOf(original, events, deps.runner);
  const refused = refusedCalls(events);
  const mode = !options.live ? 'recorded' : options.force ? 'live_forced' : 'live';
  const runId = newReplayRunId(originalRunId);
  // A fresh state: no decision of the original run comes along.
  const state: RunState = deps.runner.newState({
    agent: original.agent,
    input: original.input,
    runId,
    // The replay shows the original's input and answers: it stays in the original's tenant and session,
    // so it is hidden from exactly the keys the original is hidden from.
    ...(original.tenant ? { tenant: original.tenant } : {}),
    ...(original.sessionId ? { sessionId: original.sessionId } : {}),
    // The answers are checked against the schema the original checked them against.
    ...(original.outputSchema ? { outputSchema: original.outputSchema } : {}),
    ...(original.variant ? { variant: original.variant } : {}),
    ...startedInCharge(events),
    metadata: { ...original.metadata, replay_of: originalRunId, replay_mode: mode },
  });
  // Guardrails answer from the recording too: their tool calls and model calls are not in it to play back.
  if (original.guardrailVerdicts) state.guardrailVerdicts = { ...original.guardrailVerdicts };
  const calls: ReplayCall[] = [];
  const catalog = deps.runner.catalog;
  const dispatcher: AgentLoopDeps['dispatcher'] = {
    async dispatch(run: DispatchRun, owed: DispatchCall[], dispatchOptions?: DispatchOptions) {
      const sources = owed.map((call): ReplayCallSource => {
        // A call the original run refused is never run, whatever its name reads as today.
        const how = refused.has(call.toolCallId) ? 'recorded' : sourceOf(catalog.get(call.name), options);
        return how === 'recorded' && !recordedResults.has(call.toolCallId) ? 'not_recorded' : how;
      });
      const live = owed.filter((_, i) => sources[i] === 'live');
      const ran = live.length
        ? await (runDispatcher ?? deps.runner.dispatcher).dispatch(
            run,
            // Only the call itself goes out: never an approval.
            live.map((c) => ({ toolCallId: c.toolCallId, name: c.name, arguments: c.arguments })),
            dispatchOptions,
          )
        : [];
      let next = 0;
      return owed.map((call, i) => {
        const source = sources[i] as ReplayCallSource;
        calls.push({ toolCallId: call.toolCallId, tool: call.name, source });
        if (source === 'live') return ran[next++] as ToolResult;
        if (source === 'needs_approval') return needsApproval(call);
        const recorded = recordedResults.get(call.toolCallId);
        return recorded ? { ...recorded, tool_call_id: call.toolCallId } : notRecorded(call);
      });
    },
  };
  const { writer } = await deps.store.claim(runId);
  const outcome = await runAgent(state, {
    llm: recordedLlm(events),
    dispatcher,
    // Nothing parks in a replay: the dispatcher above answers confirmation tools itself.
    catalog: withoutConfirmation(catalog),
    breakers: deps.runner.breakers,
    // After a replayed handoff the target is in charge, as it was in the original.
    get agent() {
      const name = agentInCharge(state);
      return name === original.agent ? agent : (deps.runner.agent(name) ?? { name, tools: [] });
    },
    agentNamed: (name) => deps.runner.agent(name),
    // An agent called as a tool answers as its child run answered the original: no child run starts.
    children: recordedChildren(
      original,
      recordedResults,
      (name) => deps.runner.agent(name),
      (toolCallId, tool, source) => calls.push({ toolCallId, tool, source }),
    ),
    logger: deps.runner.logger.child({ replayOf: originalRunId }),
    limits: { planning: events.some((e) => e.type === 'plan') },
    checkpoint: (s, evs) => {
      const send = writer.prepare(s, evs);
      return async () => {
        await send();
      };
    },
  });
  const recorded = events.flatMap((e) => (e.type === 'tool_result' ? [e] : []));
  const now = new Map(state.steps.map((s) => [s.tool_call_id, s]));
  const differences = recorded.flatMap((r): ReplayDifference[] => {
    const step = now.get(r.tool_call_id);
    const replayed = step
      ? { ok: step.ok, ...(step.error_kind ? { kind: step.error_kind } : {}) }
      : undefined;
    const before = { ok: r.ok, ...(r.error?.kind ? { kind: r.error.kind } : {}) };
    return replayed && replayed.ok === before.ok && replayed.kind === before.kind
      ? []
      : [{ toolCallId: r.tool_call_id, tool: r.tool, recorded: before, replayed }];
  });
  return { runId, originalRunId, mode, outcome, recordedOutcome: original.outcome, differences, calls };
}

/**
 * The calls the original run answered without running them (an unknown name, oversized arguments, a
 * rejected approval), by id: recorded as answered locally, or, in runs recorded before that, as
 * `unknown_tool`.
 */
function refusedCalls(events: RunEvent[]): Set<string> {
  return new Set(
    events.flatMap((e) =>
      e.type === 'tool_result' && (e.answered === 'local' || e.error?.kind === 'unknown_tool')
        ? [e.tool_call_id]
        : [],
    ),
  );
}

/** How a replay answers a call of this tool. */
function sourceOf(
  entry: ToolCatalogEntry | undefined,
  options: ReplayOptions,
): 'recorded' | 'live' | 'needs_approval' {
  if (!options.live) return 'recorded';
  if (entry?.requiresConfirmation) return 'needs_approval';
  if (options.force || entry?.readOnly === true || entry?.idempotent === true) return 'live';
  return 'recorded';
}

const needsApproval = (call: DispatchCall): ToolResult =>
  errorResult(
    { toolCallId: call.toolCallId, name: call.name },
    {
      kind: 'awaiting_confirmation',
      message: `not run: ${call.name} requires a person's approval and a replay never reuses a recorded decision; start a new run to have it approved`,
      retryable: false,
    },
  );

const notRecorded = (call: DispatchCall): ToolResult =>
  errorResult(
    { toolCallId: call.toolCallId, name: call.name },
    {
      kind: 'unavailable',
      message: 'not run: the recording has no result for this call',
      retryable: false,
    },
  );

/**
 * The results the original run's model saw, by call id: its tool messages first (exactly what the model
 * read), then the run's results hash (calls folded away by compaction), then each recorded `tool_result`
 * event's result (its outline in runs recorded before events carried the result). Parsed without letting a poisoned key reach a prototype.
 */
async function recordedResultsOf(
  original: RunState,
  events: RunEvent[],
  runner: AgentRunner,
): Promise<Map<string, ToolResult>> {
  const results = new Map<string, ToolResult>();
  // A tool message leaves the executor's tries out (the model never reads them): the step kept them.
  const attempts = new Map(original.steps.map((s) => [s.tool_call_id, s.attempts]));
  const add = (id: unknown, raw: unknown) => {
    if (typeof id !== 'string' || results.has(id) || typeof raw !== 'string') return;
    try {
      const parsed = parseJsonSafely<Partial<ToolResult> | null>(raw);
      if (parsed && typeof parsed === 'object' && typeof parsed.ok === 'boolean')
        results.set(id, {
          ...parsed,
          attempts: typeof parsed.attempts === 'number' ? parsed.attempts : (attempts.get(id) ?? 1),
        } as ToolResult);
    } catch {
      // An unreadable record is no recording: the call is reported as not recorded.
    }
  };
  for (const m of original.messages as ChatMessage[]) if (m.role === 'tool') add(m.tool_call_id, m.content);
  const hash = await runner.connection.hgetall(runner.keys.results(original.runId));
  for (const [id, raw] of Object.entries(hash)) add(id, raw);
  for (const e of events) {
    if (e.type !== 'tool_result' || results.has(e.tool_call_id)) continue;
    // Recorded since tool results carry the result the model saw: that, else the outline.
    if (e.result && typeof e.result.ok === 'boolean') {
      results.set(e.tool_call_id, e.result);
      continue;
    }
    results.set(e.tool_call_id, {
      tool_call_id: e.tool_call_id,
      name: e.tool,
      ok: e.ok,
      status: e.ok ? 'ok' : 'error',
      ...(e.error ? { error: e.error } : {}),
      duration_ms: e.duration_ms,
      attempts: e.attempts,
      ...(e.truncated ? { truncated: true } : {}),
    });
  }
  return results;
}

/** The catalog as the replayed loop sees it: no tool waits for a person (the replay decides instead). */
function withoutConfirmation(catalog: ToolCatalog): ToolCatalog {
  const entries = new Map<ToolCatalogEntry, ToolCatalogEntry>();
  const view = {
    get(name: string) {
      const entry = catalog.get(name);
      if (!entry?.requiresConfirmation) return entry;
      let copy = entries.get(entry);
      if (!copy) {
        copy = { ...entry, requiresConfirmation: false };
        entries.set(entry, copy);
      }
      return copy;
    },
    has: (name: string) => catalog.has(name),
    names: () => catalog.names(),
    checkArguments: (name: string, raw: string) => catalog.checkArguments(name, raw),
    group: (name: string) => catalog.group(name),
    expectedGroup: (name: string) => catalog.expectedGroup(name),
    worstCaseMs: (name: string) => catalog.worstCaseMs(name),
    refresh: async () => view,
  };
  // The loop reads the catalog through these methods only.
  return view as unknown as ToolCatalog;
}

/** The agent the original started in charge with, when a session's run went on with a handoff target. */
function startedInCharge(events: RunEvent[]): { inCharge?: string } {
  const started = events.find((e) => e.type === 'run_started');
  return started?.type === 'run_started' && started.in_charge ? { inCharge: started.in_charge } : {};
}
