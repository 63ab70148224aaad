import { errorResult, type ToolResult } from '@agent-reach/protocol';
import {
  constants,
  redisUnavailable,
  type AgentSpec,
  type Logger,
  type ToolCatalogEntry,
} from '@agent-reach/shared';
import type { DispatchCall, DispatchOptions, DispatchRun } from '../dispatcher.js';
import type { LlmClient } from '../llm.js';
import type { ToolCatalog } from '../tool-catalog.js';
import { compact } from './compaction.js';
import type { RunEvent, RunEventBody, StepKind } from './events.js';
import {
  checkBudgets,
  checkRepeat,
  checkTokenBudget,
  repeatNudge,
  turnSignature,
  type GuardLimits,
  type GuardStop,
} from './guards.js';
import { buildMessages, buildSystemPrompt, toolSpecs } from './prompt.js';
import { readModelTurn, readUsage } from './model-answer.js';
import {
  unansweredCalls,
  type FinalStatus,
  type RunOutcome,
  type RunState,
  type Usage,
} from '../runs/run-state.js';
import { finishOpenSteps, keepReachable, requestPlan, tickOff } from './task-stack.js';
import { exceedsTokens } from './tokens.js';
import { resolveToolCalls } from './tool-calls.js';

export interface LoopLimits extends GuardLimits {
  /** Prompt size that triggers compaction, in tokens. Default 40 000. */
  compactionThresholdTokens: number;
  /** Model turns kept verbatim by a compaction. Default 2. */
  compactionKeepRounds: number;
  /** Ask the model for a plan before the first turn. Default true. */
  planning: boolean;
}

export interface AgentLoopDeps {
  llm: LlmClient;
  dispatcher: {
    dispatch(run: DispatchRun, calls: DispatchCall[], options?: DispatchOptions): Promise<ToolResult[]>;
  };
  catalog: ToolCatalog;
  breakers: { openTools(): Promise<Set<string>>; invalidate?(): void };
  agent: AgentSpec;
  logger: Logger;
  limits?: Partial<LoopLimits>;
  /**
   * Called after every step with the state and that step's events: the durability seam. It snapshots
   * the step at once (synchronously) and returns the write, which the loop sends in order, possibly
   * later. A write that throws `RunLost` means another process owns the run now: the loop stops at once.
   * Any other failure of a write escapes `runAgent` as `CheckpointFailed` (the run is retried from its
   * last good checkpoint by whoever runs it).
   */
  checkpoint?: (state: RunState, events: RunEvent[], step: StepKind) => CheckpointWrite;
  /** Called for every event as it happens (progress printing, metrics). */
  onEvent?: (event: RunEvent, state: RunState) => void;
  /** Aborting it cancels the run: nothing more is dispatched. */
  signal?: AbortSignal;
  /**
   * The checkpoint hook writes on the connection the dispatcher publishes on, so a checkpoint issued
   * before a dispatch lands before it: the loop then need not wait for it. Default false.
   */
  orderedCheckpoints?: boolean;
  /**
   * Aborting it releases the run without ending it: this process lost the run (its lock lapsed and
   * another scheduler took over), so it stops at once and writes nothing more.
   */
  release?: AbortSignal;
}

/** The write of one prepared checkpoint. */
export type CheckpointWrite = () => Promise<void>;

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

export function resolveLimits(agent: AgentSpec, limits: Partial<LoopLimits> = {}): LoopLimits {
  return {
    maxIterations: limits.maxIterations ?? agent.max_iterations ?? constants.DEFAULT_MAX_ITERATIONS,
    repeatLimit: limits.repeatLimit ?? constants.DEFAULT_REPEAT_LIMIT,
    maxFailedRounds: limits.maxFailedRounds ?? constants.DEFAULT_MAX_FAILED_ROUNDS,
    tokenBudget: limits.tokenBudget ?? constants.DEFAULT_RUN_TOKEN_BUDGET,
    compactionThresholdTokens:
      limits.compactionThresholdTokens ?? constants.DEFAULT_COMPACTION_THRESHOLD_TOKENS,
    compactionKeepRounds: limits.compactionKeepRounds ?? constants.DEFAULT_COMPACTION_KEEP_ROUNDS,
    planning: limits.planning ?? true,
  };
}

/**
 * Runs (or resumes) an agent run to its outcome, or to `'parked'` when a call waits for a person's
 * approval (the state says which; resume it once decided). Each pass of the loop does exactly one step — answer the
 * calls the last model turn owes, compact, or ask the model — and checkpoints after it, so a run resumed
 * from any checkpoint carries on where it stopped: owed calls are answered (the dispatcher never re-runs
 * a call with a recorded result) and no model turn that was recorded is asked again.
 */
export async function runAgent(
  state: RunState,
  deps: AgentLoopDeps,
): Promise<RunOutcome | 'parked' | 'released'> {
  if (state.outcome) return state.outcome;
  const limits = resolveLimits(deps.agent, deps.limits);
  const log = deps.logger.child({ runId: state.runId, traceId: state.traceId, agent: state.agent });
  let pending: RunEvent[] = [];
  const emit = (body: RunEventBody) => {
    const event = { ...body, at: Date.now() } as RunEvent;
    pending.push(event);
    deps.onEvent?.(event, state);
  };
  // Checkpoints are written in order, and only the last ones (parking, the end) hold the loop up:
  // - after a plan, tool results or a compaction the write goes behind the next model call; losing it
  //   in a crash costs at most a repeated plan request, since the run's results hash already holds every
  //   tool result and owed calls are answered from it;
  // - a model answer must be durable before its calls are dispatched. With `orderedCheckpoints` (the
  //   checkpoint and the dispatcher share one Redis connection) it is issued before the dispatch and
  //   Redis applies the two in that order, so nothing waits; otherwise it is awaited.
  let behind: Promise<void> = Promise.resolve();
  let behindFailure: unknown;
  const checkpoint = async (step: StepKind) => {
    if (deps.release?.aborted) throw new RunLost();
    const events = pending;
    pending = [];
    const mustAwait =
      step === 'parked' || step === 'finished' || (step === 'llm_response' && !deps.orderedCheckpoints);
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
  const finish = async (
    status: FinalStatus,
    reason: string,
    extra: { answer?: string; report?: string } = {},
  ) => {
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
        content: JSON.stringify(
          errorResult(
            { toolCallId: call.id, name: call.name },
            { kind: 'unavailable', message: `not answered: the run ended (${reason})`, retryable: false },
          ),
        ),
      });
    }
    state.outcome = outcome;
    state.status = status;
    emit({ type: 'run_finished', outcome });
    await checkpoint('finished');
    return outcome;
  };
  const stop = async (g: GuardStop) => {
    emit({ type: 'guard', guard: g.guard, action: 'stop', report: g.report });
    return finish(g.status, g.guard, { report: g.report });
  };
  /**
   * A model call that failed after the SDK's retries (a turn or the plan): cancelled if the run was, the
   * `deadline` guard if the run's deadline aborted it, else `llm_error`.
   */
  const llmFailed = async (err: unknown, turn: number, started: number, deadline?: AbortSignal) => {
    if (deps.release?.aborted) throw new RunLost();
    if (deps.signal?.aborted) return finish('cancelled', 'cancelled', { report: 'the run was cancelled' });
    const e = err as { message?: string; status?: number };
    const late = deadline?.aborted === true || Date.now() >= state.deadlineAt;
    emit({
      type: 'llm_error',
      turn,
      model: deps.llm.model,
      latency_ms: Math.round(performance.now() - started),
      message: late ? 'aborted at the run deadline' : (e.message ?? String(err)).slice(0, 2000),
      ...(typeof e.status === 'number' ? { status: e.status } : {}),
    });
    if (late) {
      return stop({
        guard: 'deadline',
        status: 'not_converged',
        report: 'the run passed its wall-clock deadline while waiting for the model',
      });
    }
    log.error({ err }, 'LLM call failed after its retries');
    return finish('failed', 'llm_error', {
      report: `the model could not be reached: ${e.message ?? String(err)}`,
    });
  };
  // A model call stops when the run is cancelled or let go (shutdown, lost ownership), or at its deadline.
  const stops = [deps.signal, deps.release].filter((s): s is AbortSignal => s !== undefined);
  const modelSignals = () => {
    const deadline = AbortSignal.timeout(Math.max(1, state.deadlineAt - Date.now()));
    return { deadline, signal: AbortSignal.any([...stops, deadline]) };
  };
  if (state.status === 'awaiting_approval') state.status = 'running';
  if (state.status === 'queued') {
    state.status = 'running';
    emit({ type: 'run_started', agent: state.agent, input: state.input, model: deps.llm.model });
  }
  const offered = async (): Promise<ToolCatalogEntry[]> => {
    const open = await deps.breakers.openTools();
    return deps.agent.tools.flatMap((name) => {
      const entry = deps.catalog.get(name);
      return entry && !open.has(name) ? [entry] : [];
    });
  };

  // True while the owed calls come from a model turn taken in this process (so none can have a result yet).
  let fresh = false;
  try {
    if (deps.signal?.aborted)
      return await finish('cancelled', 'cancelled', { report: 'the run was cancelled' });
    if (limits.planning && !state.plan.requested) {
      const tools = await offered();
      const planStarted = performance.now();
      const { deadline, signal } = modelSignals();
      let plan: Awaited<ReturnType<typeof requestPlan>>;
      try {
        plan = await requestPlan(
          deps.llm,
          state.input,
          tools.map((t) => t.name),
          signal,
        );
      } catch (err) {
        return await llmFailed(err, 0, planStarted, deadline);
      }
      const { kept, dropped } = keepReachable(plan.steps, new Set(reachableTools(deps)));
      state.plan = {
        requested: true,
        steps: [...state.plan.steps, ...(kept.length > 1 ? kept : [])],
      };
      if (plan.usage) addUsage(state, plan.usage);
      emit({
        type: 'plan',
        steps: state.plan.steps,
        ...(plan.error ? { error: plan.error } : {}),
        ...(dropped.length > 0 ? { dropped } : {}),
      });
      await checkpoint('plan');
    }

    for (;;) {
      if (deps.signal?.aborted)
        return await finish('cancelled', 'cancelled', { report: 'the run was cancelled' });
      const owed = unansweredCalls(state);
      if (owed.length > 0) {
        // Past the deadline nothing waits for a person: the owed calls are answered as not run.
        if (Date.now() < state.deadlineAt && needsApproval(state, owed, deps, emit)) {
          state.status = 'awaiting_approval';
          await checkpoint('parked');
          return 'parked';
        }
        const stopped = await answerCalls(state, owed, deps, limits, emit, fresh);
        fresh = false;
        await checkpoint('tool_results');
        if (stopped) return await stop(stopped);
        continue;
      }
      const budget = checkBudgets(state, limits);
      if (budget) return await stop(budget);

      const tools = await offered();
      const size = exceedsTokens(
        buildSystemPrompt(deps.agent, state, tools) +
          JSON.stringify(state.messages) +
          JSON.stringify(toolSpecs(tools)),
        limits.compactionThresholdTokens,
      );
      if (size.exceeds) {
        const { folded, foldedTurns } = compact(state, limits.compactionKeepRounds);
        if (folded > 0) {
          const after = exceedsTokens(
            buildSystemPrompt(deps.agent, state, tools) +
              JSON.stringify(state.messages) +
              JSON.stringify(toolSpecs(tools)),
            0,
          );
          emit({
            type: 'compaction',
            before_tokens: size.tokens ?? 0,
            after_tokens: after.tokens ?? 0,
            folded_messages: folded,
            folded_turns: foldedTurns,
            summary: structuredClone(state.summary!),
          });
          await checkpoint('compaction');
        }
      }

      const turn = state.iterations + 1;
      const started = performance.now();
      const { deadline, signal } = modelSignals();
      let res;
      try {
        res = await deps.llm.complete(buildMessages(deps.agent, state, tools), toolSpecs(tools), signal);
      } catch (err) {
        return await llmFailed(err, turn, started, deadline);
      }
      const answer = readModelTurn(res, state, turn, reachableTools(deps));
      const { calls } = answer;
      state.iterations = turn;
      const usage = readUsage(res);
      if (usage) addUsage(state, usage);
      emit({
        type: 'llm_request',
        turn,
        model: (typeof res.model === 'string' && res.model.slice(0, 200)) || deps.llm.model,
        latency_ms: Math.round(performance.now() - started),
        prompt_tokens: usage?.prompt_tokens ?? 0,
        completion_tokens: usage?.completion_tokens ?? 0,
        finish_reason: answer.finishReason,
        tool_calls: calls.length,
        tools_offered: tools.map((t) => t.name),
        message: {
          content: answer.content,
          ...(answer.refusal !== undefined ? { refusal: answer.refusal } : {}),
          ...(calls.length
            ? {
                tool_calls: calls.map((c) => ({
                  id: c.id,
                  name: c.name,
                  arguments: c.arguments,
                  ...(c.original
                    ? { arguments_chars: c.original.chars, arguments_sha256: c.original.sha256 }
                    : {}),
                })),
              }
            : {}),
        },
        ...(answer.droppedCalls > 0 ? { dropped_tool_calls: answer.droppedCalls } : {}),
      });
      const text = answer.content ?? '';
      if (answer.refusal !== undefined) {
        // A refusing model's calls are not run; its refusal stays in the history as what it said.
        state.messages.push({ role: 'assistant', content: answer.refusal });
        return await finish('failed', 'refused', {
          ...(text.trim() ? { answer: text } : {}),
          report: `the model declined to answer: ${answer.refusal.slice(0, 1000)}`,
        });
      }
      if (answer.finishReason === 'content_filter') {
        if (text.trim()) state.messages.push({ role: 'assistant', content: text });
        return await finish('failed', 'content_filter', {
          ...(text.trim() ? { answer: text } : {}),
          report:
            "the provider's content filter stopped the model's answer; no tool call of that turn was run",
        });
      }
      if (calls.length === 0) {
        if (!text.trim()) {
          const truncated = answer.finishReason === 'length';
          return await finish('failed', truncated ? 'output_truncated' : 'empty_answer', {
            report: truncated
              ? 'the model reached its output token limit before writing any answer or tool call'
              : `the model answered with no text and no tool call (finish_reason ${answer.finishReason})`,
          });
        }
        state.messages.push({ role: 'assistant', content: text });
        const cut = answer.finishReason === 'length' || answer.textCut;
        const refused = platformRefusals(state);
        if (refused) {
          return await finish('failed', 'no_tool_available', { answer: text, report: refused });
        }
        for (const step of finishOpenSteps(state)) emit({ type: 'step_done', step: { ...step } });
        return await finish('succeeded', cut ? 'final_answer_truncated' : 'final_answer', { answer: text });
      }
      state.messages.push({
        role: 'assistant',
        content: answer.content,
        tool_calls: calls.map((c) => ({
          id: c.id,
          type: 'function',
          function: { name: c.name, arguments: c.arguments },
        })),
      });
      const local = calls.flatMap((c) =>
        c.refused ? [errorResult({ toolCallId: c.id, name: c.name }, c.refused)] : [],
      );
      if (local.length > 0) state.localResults = local;
      else delete state.localResults;
      if (answer.droppedCalls > 0) {
        state.turnNote =
          `Guard: your last answer made ${calls.length + answer.droppedCalls} tool calls; only the first ` +
          `${calls.length} were taken and the rest were not run. Make at most ${calls.length} calls in one answer.`;
      } else delete state.turnNote;
      const overBudget = checkTokenBudget(state, limits);
      if (overBudget) {
        answerNotRun(state, calls, 'not run: the run used up its token budget');
        await checkpoint('llm_response');
        return await stop(overBudget);
      }
      const signature = turnSignature(calls);
      const repeat = checkRepeat(state, signature, limits);
      if (repeat === 'nudge') {
        emit({
          type: 'guard',
          guard: 'repeat',
          action: 'nudge',
          report: repeatNudge(signature, state.guard.repeatCount),
        });
      } else if (repeat !== 'ok') {
        // Answer the owed calls without running them, so the history stays a valid conversation.
        answerNotRun(state, calls, 'not run: the run was stopped for repeating this call');
        await checkpoint('llm_response');
        return await stop(repeat);
      }
      await checkpoint('llm_response');
      fresh = true;
    }
  } catch (err) {
    if (err instanceof RunLost || deps.release?.aborted) {
      log.warn('run released: this process no longer owns it');
      return 'released';
    }
    if (err instanceof CheckpointFailed) throw err;
    // Redis could not serve a step (down, paused, out of memory): resume from the last checkpoint later.
    if (redisUnavailable(err)) throw new CheckpointFailed(err);
    log.error({ err }, 'run failed');
    try {
      return await finish('failed', 'internal_error', { report: (err as Error).message });
    } catch (last) {
      if (last instanceof RunLost) return 'released';
      throw last;
    }
  }
}

/**
 * Whether the turn must wait for a person: a call to a tool that requires confirmation, with valid
 * arguments, and no decision yet. New requests are recorded in the state and announced once.
 */
function needsApproval(
  state: RunState,
  owed: Array<{ id: string; name: string; arguments: string }>,
  deps: AgentLoopDeps,
  emit: (e: RunEventBody) => void,
): boolean {
  let waiting = false;
  for (const call of owed) {
    const entry = deps.catalog.get(call.name);
    if (!entry?.requiresConfirmation || !deps.agent.tools.includes(call.name)) continue;
    if (!deps.catalog.checkArguments(call.name, call.arguments).ok) continue; // refused without asking anyone
    const approval = state.approvals[call.id];
    if (approval?.decision) continue;
    waiting = true;
    if (!approval) {
      state.approvals[call.id] = {
        toolCallId: call.id,
        tool: call.name,
        arguments: call.arguments,
        requestedAt: Date.now(),
      };
      emit({ type: 'approval_requested', tool_call_id: call.id, tool: call.name, arguments: call.arguments });
    }
  }
  return waiting;
}

/** Answers the calls a model turn owes; returns a guard stop when too many rounds in a row failed. */
async function answerCalls(
  state: RunState,
  owed: Array<{ id: string; name: string; arguments: string }>,
  deps: AgentLoopDeps,
  limits: LoopLimits,
  emit: (e: RunEventBody) => void,
  fresh: boolean,
): Promise<GuardStop | undefined> {
  const turn = state.iterations;
  emit({
    type: 'tool_dispatched',
    turn,
    calls: owed.map((c) => ({ tool_call_id: c.id, tool: c.name, arguments: c.arguments })),
  });
  const local = new Map((state.localResults ?? []).map((r) => [r.tool_call_id, r]));
  const toRun = owed.filter((c) => !local.has(c.id));
  const remainingMs = state.deadlineAt - Date.now();
  // The wait is bounded by the run's deadline; calls still out then are answered here as not observed.
  const ran =
    toRun.length > 0 && remainingMs > 0
      ? await withinMs(resolveToolCalls(state, toRun, deps, fresh), remainingMs)
      : toRun.length > 0
        ? undefined
        : [];
  const late = ran === undefined;
  const byId = new Map(
    toRun.map((c, i) => [
      c.id,
      ran?.[i] ??
        errorResult(
          { toolCallId: c.id, name: c.name },
          {
            kind: 'unavailable',
            message: "no result before the run's deadline: the run stopped without waiting for this call",
            retryable: false,
          },
        ),
    ]),
  );
  const results = owed.map((c) => local.get(c.id) ?? (byId.get(c.id) as ToolResult));
  delete state.localResults;
  for (const [i, result] of results.entries()) {
    const call = owed[i] as (typeof owed)[number];
    state.messages.push({ role: 'tool', tool_call_id: call.id, content: JSON.stringify(result) });
    state.steps.push({
      turn,
      tool_call_id: call.id,
      tool: call.name,
      arguments: call.arguments,
      ok: result.ok,
      ...(result.error ? { error_kind: result.error.kind } : {}),
      duration_ms: result.duration_ms,
      attempts: result.attempts,
      ...(result.truncated ? { truncated: true } : {}),
    });
    emit({
      type: 'tool_result',
      turn,
      tool_call_id: call.id,
      tool: call.name,
      arguments: call.arguments,
      ok: result.ok,
      ...(result.error ? { error: result.error } : {}),
      duration_ms: result.duration_ms,
      attempts: result.attempts,
      ...(result.truncated ? { truncated: true } : {}),
    });
    if (result.ok) {
      const step = tickOff(state, call.name);
      if (step) emit({ type: 'step_done', step: { ...step } });
    }
  }
  if (late) {
    return {
      guard: 'deadline',
      status: 'not_converged',
      report: `the run passed its wall-clock deadline while waiting for ${toRun.length} tool call(s)`,
    };
  }
  if (state.turnNote) {
    state.messages.push({ role: 'system', content: state.turnNote });
    delete state.turnNote;
  }
  if (state.guard.nudged && state.guard.repeatCount === limits.repeatLimit) {
    state.messages.push({
      role: 'system',
      content: repeatNudge(state.guard.lastSignature ?? '', state.guard.repeatCount),
    });
  }
  if (results.some((r) => !r.ok)) deps.breakers.invalidate?.();
  state.guard.failedRounds = results.every((r) => !r.ok) ? state.guard.failedRounds + 1 : 0;
  if (state.guard.failedRounds >= limits.maxFailedRounds) {
    const kinds = results.map((r) => `${r.name}: ${r.error?.kind ?? 'error'} (${r.error?.message ?? ''})`);
    return {
      guard: 'failed_rounds',
      status: 'failed',
      report: `${state.guard.failedRounds} tool rounds in a row failed; last round: ${kinds.join('; ')}`,
    };
  }
  return undefined;
}

/** `promise`'s value, or undefined when it has not settled within `ms`. */
async function withinMs<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  try {
    return await Promise.race([promise, expired]);
  } finally {
    clearTimeout(timer);
  }
}

/** Answers every call of a turn without running it, so the history stays a valid conversation. */
function answerNotRun(state: RunState, calls: Array<{ id: string; name: string }>, message: string): void {
  delete state.localResults;
  delete state.turnNote;
  for (const c of calls) {
    state.messages.push({
      role: 'tool',
      tool_call_id: c.id,
      content: JSON.stringify(
        errorResult({ toolCallId: c.id, name: c.name }, { kind: 'unavailable', message, retryable: false }),
      ),
    });
  }
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
function platformRefusals(state: RunState): string | undefined {
  if (state.steps.length === 0) return undefined;
  const all = state.steps.every(
    (s) =>
      !s.ok &&
      s.error_kind !== undefined &&
      PLATFORM_REFUSALS.has(s.error_kind) &&
      !(
        Object.hasOwn(state.approvals, s.tool_call_id) &&
        state.approvals[s.tool_call_id]?.decision === 'rejected'
      ),
  );
  if (!all) return undefined;
  const seen = [...new Set(state.steps.map((s) => `${s.tool.slice(0, 64)}: ${s.error_kind}`))].slice(0, 10);
  return `the model answered without any tool having run: every tool call was refused (${seen.join('; ')})`;
}

/** Names the agent may call and the fleet serves (open breakers included: they close again). */
function reachableTools(deps: Pick<AgentLoopDeps, 'agent' | 'catalog'>): string[] {
  return deps.agent.tools.filter((name) => deps.catalog.has(name));
}

function addUsage(state: RunState, u: Usage): void {
  state.usage.prompt_tokens += u.prompt_tokens;
  state.usage.completion_tokens += u.completion_tokens;
  state.usage.total_tokens += u.total_tokens;
}
