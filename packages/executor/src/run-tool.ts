import {
  errorResult,
  isNoResult,
  newResultRef,
  RETRYABLE_KINDS,
  unconfirmedError,
  type AttemptTiming,
  type ToolCallJob,
  type ToolContext,
  type ToolErrorInfo,
  type ToolErrorKind,
  type ToolResult,
} from '@agent-reach/protocol';
import {
  activeSpanEvent,
  checkArguments,
  constants,
  type ArgumentsCheck,
  grantRefusal,
  scopeRefusal,
  withRunAliases,
  type AgentsFile,
  type Logger,
  type RegisteredTool,
  type ToolDefaults,
  type ToolRegistry,
} from '@agent-reach/shared';
import { AttemptFailure, type BreakerBoard } from './breakers.js';
import { shapeResult, truncationNotice } from './result-shaping.js';

export interface RunToolDeps {
  registry: ToolRegistry;
  agents: AgentsFile;
  breakers: BreakerBoard;
  logger: Logger;
  /** The call's child logger, made on first use. Default: `logger`. */
  bindings?: () => Logger;
  /**
   * A person's recorded decision approves this call (from the run's approvals, checked by the worker).
   * A tool that requires confirmation runs only with it; a job's own `approval` field is never trusted.
   */
  approved?: boolean;
  /** Tools the run's session (or request) was granted, from the run's record (checked by the worker). */
  grants?: ReadonlySet<string>;
  /** The run's session, when it has one (named in a refusal for a missing grant). */
  sessionId?: string | undefined;
  /** Aborts the call at once (the executor hands the job back to its queue): handler signals fire too. */
  signal?: AbortSignal;
  /**
   * The call's arguments as already checked against a tool's schema (`checkArgumentsAhead`), used when the
   * call's name still names that tool; otherwise they are checked here.
   */
  checked?: ArgumentsAhead | undefined;
}

/** A call's arguments checked against its tool's schema before its turn in the pipeline. */
export interface ArgumentsAhead {
  readonly tool: RegisteredTool;
  readonly check: ArgumentsCheck;
}

/**
 * Argument strings longer than this are not checked ahead: a job is parsed before its record has vouched
 * for it, so a forged one would otherwise have its whole argument string parsed and validated before it is
 * refused; past this size the check waits for the record, as every check did before.
 */
const CHECK_AHEAD_MAX_CHARS = 64 * 1024;

/**
 * Parses and checks a job's arguments against its tool's schema, ahead of the rest of its pipeline: the
 * executor does it while the run's record is checked, so a call's validation overlaps that round trip
 * instead of following it. Only the job's own fields are read, nothing is decided: the outcome is used
 * (or not) where `admit` would have checked them, after every check that comes first. Undefined for a
 * job with no registered tool or no argument string (`admit` answers those), arguments longer than
 * CHECK_AHEAD_MAX_CHARS, or a check that threw (it is made again in its place, and throws there).
 */
export function checkArgumentsAhead(registry: ToolRegistry, data: unknown): ArgumentsAhead | undefined {
  const {
    name,
    arguments: raw,
    argument_aliases: runAliases,
  } = (typeof data === 'object' && data !== null ? data : {}) as {
    name?: unknown;
    arguments?: unknown;
    argument_aliases?: unknown;
  };
  if (typeof name !== 'string' || typeof raw !== 'string' || raw.length > CHECK_AHEAD_MAX_CHARS) {
    return undefined;
  }
  const tool = registry.get(name);
  if (!tool) return undefined;
  try {
    return {
      tool,
      check: checkArguments(
        tool.name,
        raw,
        tool.validate,
        tool.parameters,
        withRunAliases(tool.argumentAliases, runAliases),
      ),
    };
  } catch {
    return undefined;
  }
}

/** A finished call: the result for the model, and the full content when the result was truncated. */
export interface ToolOutcome {
  result: ToolResult;
  /** Serialized full content, to be stored under `result.ref`. */
  full?: string;
}

const HANDLER_KINDS = new Set(['transient', 'execution_error', 'timeout', 'invalid_arguments']);
const TRANSIENT_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ETIMEDOUT',
  'EPIPE',
  'EAI_AGAIN',
  'ENOTFOUND',
  'EHOSTUNREACH',
]);

/**
 * The executor's pipeline for one call: parse → known name → aliases → schema → reach (listed, scope,
 * grant) → confirmation → breaker → handler under a timeout, retried (linear backoff, same arguments) on
 * `timeout`/`transient` → shaping.
 * The job's deadline bounds everything: a call picked up after it is `unavailable` (nothing ran), each
 * attempt is aborted at it, and a retry starts only if its backoff and full timeout fit before it.
 */
export async function runTool(job: ToolCallJob, deps: RunToolDeps): Promise<ToolOutcome> {
  const call = openCall(job, deps);
  const admitted = admit(call);
  return 'result' in admitted ? admitted : attemptCall(call, admitted.tool, admitted.args);
}

/** One call on its way through the pipeline: its clock, its logger and what it has done so far. */
interface Call {
  readonly job: ToolCallJob;
  readonly deps: RunToolDeps;
  readonly logger: { readonly log: Logger };
  /** Milliseconds since the executor took the call. */
  elapsed(): number;
  /** The arguments aliases changed, once known: recorded with whatever the call ends with. */
  normalized?: Record<string, unknown> | undefined;
  /** Every attempt made, with its timing and outcome. */
  readonly tries: AttemptTiming[];
}

function openCall(job: ToolCallJob, deps: RunToolDeps): Call {
  const started = performance.now();
  return {
    job,
    deps,
    logger: new CallLogger(deps),
    elapsed: () => Math.round(performance.now() - started),
    tries: [],
  };
}

/**
 * The call's logger, its child made on first use. A class rather than an object literal with a getter:
 * each such literal gets a hidden class of its own, allocated where the collector of young objects
 * reaches it from the old generation, so the closures and everything they hold outlive the call until a
 * full collection (the largest cost of a call was that garbage collection).
 */
class CallLogger {
  constructor(private readonly deps: RunToolDeps) {}

  get log(): Logger {
    return this.deps.bindings?.() ?? this.deps.logger;
  }
}

/** The call's result for `error`, after `attempts` attempts (their timings when there was more than one). */
function fail(call: Call, error: ToolErrorInfo, attempts = 0): ToolOutcome {
  const { job } = call;
  const result = errorResult({ toolCallId: job.tool_call_id, name: job.name }, error, {
    duration_ms: call.elapsed(),
    attempts,
  });
  addCallRecord(result, call.tries.slice(0, attempts), call.normalized);
  return { result };
}

/**
 * Adds to a result what it carries of the call beside its outcome: the per-attempt timings (only when
 * there was a retry to see) and the arguments aliases changed. Results are built by assignment, never by
 * spreading into a copy: V8 gives an object made by spreading a slow shape, and the executor's write of its
 * own id onto the result and the result's serialization took 2.6 us on such an object against 0.8 us on
 * one built by assignment.
 */
function addCallRecord(
  result: ToolResult,
  tries: AttemptTiming[],
  normalized: Record<string, unknown> | undefined,
): void {
  if (tries.length > 1) result.attempt_log = tries;
  if (normalized) result.normalized_arguments = normalized;
}

/**
 * Everything a call must pass before anything runs: its deadline, a known tool, valid arguments, the
 * agent's reach (listed, scope, grant) and a person's approval. Returns the refusal, or what to run.
 */
function admit(call: Call): ToolOutcome | { tool: RegisteredTool; args: Record<string, unknown> } {
  const { job, deps } = call;
  const { registry, agents } = deps;
  if (Date.now() >= job.deadline) {
    return fail(call, {
      kind: 'unavailable',
      message: 'the call waited in the queue past its deadline and was not run',
      retryable: true,
    });
  }
  const reachable = agents.reachable(job.agent);
  const tool = registry.get(job.name);
  if (!tool) {
    const available = [...reachable].filter((name) => registry.has(name));
    const guess = registry.closest(job.name, available);
    return fail(call, {
      kind: 'unknown_tool',
      message: `there is no tool named "${job.name}"${guess ? `; did you mean "${guess}"?` : ''}`,
      ...(guess ? { did_you_mean: guess } : {}),
      available_tools: available,
      retryable: false,
    });
  }
  const check =
    deps.checked?.tool === tool
      ? deps.checked.check
      : checkArguments(
          tool.name,
          job.arguments,
          tool.validate,
          tool.parameters,
          // A variant's aliases travel with its run's calls: they apply to this call only.
          withRunAliases(tool.argumentAliases, job.argument_aliases),
        );
  if (!check.ok) return fail(call, check.error);
  call.normalized = check.normalized;
  const refusal = reachRefusal(call, tool, reachable);
  if (refusal) return fail(call, refusal);
  if (tool.requiresConfirmation && deps.approved !== true) {
    return fail(call, unconfirmedError(tool.name));
  }
  return { tool, args: check.args };
}

/** Why the agent may not reach `tool` in this run (not listed, out of scope, not granted), logged. */
function reachRefusal(
  call: Call,
  tool: RegisteredTool,
  reachable: ReadonlySet<string>,
): ToolErrorInfo | undefined {
  const { job, deps } = call;
  if (!reachable.has(tool.name)) {
    call.logger.log.warn(
      { security: true, agent: job.agent, tool: tool.name, runId: job.run_id },
      'refused a call outside the agent scope',
    );
    return {
      kind: 'forbidden',
      message: `agent "${job.agent}" may not call "${tool.name}"`,
      available_tools: [...reachable],
      retryable: false,
    };
  }
  const spec = deps.agents.agents.get(job.agent);
  const refusal =
    scopeRefusal({ name: job.agent, scopes: spec?.scopes }, tool) ??
    grantRefusal(tool, deps.grants ?? new Set(), deps.sessionId);
  if (refusal) {
    call.logger.log.warn(
      { security: true, agent: job.agent, tool: tool.name, runId: job.run_id, reason: refusal.reason },
      'refused a call the agent does not hold a scope or grant for',
    );
  }
  return refusal;
}

/**
 * The handler's attempts through the breaker: a retryable failure is tried again after a linear backoff
 * (longer when the upstream asked), while the next attempt still fits before the deadline.
 */
async function attemptCall(
  call: Call,
  tool: RegisteredTool,
  args: Record<string, unknown>,
): Promise<ToolOutcome> {
  const { job, deps } = call;
  const maxAttempts = tool.retry.maxAttempts;
  let lastError: ToolErrorInfo | undefined;
  let retryAfterMs: number | undefined;
  let made = 0;
  for (let attempt = 1; attempt <= maxAttempts; attempt += 1) {
    if (attempt > 1) {
      // An upstream that said how long to wait (Retry-After) is not asked again sooner.
      const wait = Math.max(tool.retry.backoffMs * (attempt - 1), retryAfterMs ?? 0);
      // A retry that could be cut off by the deadline is not started: its outcome would reach nobody.
      if (Date.now() + wait + tool.timeoutMs > job.deadline) break;
      // The attempt about to start, after the backoff, and why the one before failed.
      activeSpanEvent('retry', {
        'agent_reach.tool.attempt': attempt,
        'agent_reach.tool.backoff_ms': wait,
        ...(lastError ? { 'error.type': lastError.kind } : {}),
      });
      try {
        await backoff(wait, deps.signal);
      } catch {
        return fail(call, handedBack(), made);
      }
    }
    if (deps.signal?.aborted) return fail(call, handedBack(), made);
    made = attempt;
    const offset = call.elapsed();
    const timed = (outcome: AttemptTiming['outcome']) =>
      call.tries.push({ attempt, offset_ms: offset, duration_ms: call.elapsed() - offset, outcome });
    try {
      const value = await deps.breakers.fire(tool.name, () =>
        runAttempt(tool, args, job, attempt, call.logger, deps.signal),
      );
      timed('ok');
      return succeed(
        { tool, job, value, attempts: attempt, durationMs: call.elapsed(), tries: call.tries },
        {
          defaults: deps.agents.document.tool_defaults,
          ...(call.normalized ? { normalized: call.normalized } : {}),
        },
      );
    } catch (err) {
      if ((err as { code?: string }).code === 'EOPENBREAKER') {
        // The breaker answered for the tool: this attempt never ran.
        return fail(call, breakerOpen(tool.name), attempt - 1);
      }
      const failure =
        err instanceof AttemptFailure ? err : new AttemptFailure('execution_error', String(err));
      timed(failure.kind);
      lastError = failureInfo(failure);
      retryAfterMs = failure.upstream.retryAfterMs;
      call.logger.log.info({ tool: tool.name, attempt, kind: failure.kind }, 'tool attempt failed');
      if (!RETRYABLE_KINDS.has(failure.kind) || attempt === maxAttempts) {
        return fail(call, lastError, attempt);
      }
    }
  }
  return fail(
    call,
    lastError ?? { kind: 'timeout', message: 'no time left for another attempt', retryable: true },
    made,
  );
}

const breakerOpen = (tool: string): ToolErrorInfo => ({
  kind: 'circuit_open',
  message: `"${tool}" is failing and its circuit breaker is open; it is unavailable for now`,
  retryable: false,
});

/** A failed attempt as the error a result carries. */
function failureInfo(failure: AttemptFailure): ToolErrorInfo {
  return {
    kind: failure.kind,
    message: failure.message,
    ...(failure.type ? { type: failure.type } : {}),
    ...(failure.field ? { field: failure.field } : {}),
    ...(failure.upstream.status === undefined ? {} : { status: failure.upstream.status }),
    retryable: RETRYABLE_KINDS.has(failure.kind),
  };
}

/**
 * Waits out a retry's backoff, rejecting at once when `signal` fires. On the global timer rather than
 * `node:timers/promises`, which fake timers do not reach, so the pipeline's tests advance the backoff.
 */
function backoff(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason as Error);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason as Error);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

const HANDED_BACK = 'the executor stopped; the call goes back to its queue';

/** The outcome of a call stopped for its job to go back to the queue; it is never recorded. */
function handedBack(): ToolErrorInfo {
  return { kind: 'unavailable', message: HANDED_BACK, retryable: true };
}

/**
 * One attempt: the handler under an AbortSignal; a handler that ignores the signal still loses the race.
 * A handler that answers at once (a value, or a throw) settles the attempt without a timer or a race: it
 * cannot have run past its timeout, and a timer set and cleared for it cost more than the handler.
 */
function runAttempt(
  tool: RegisteredTool,
  args: Record<string, unknown>,
  job: ToolCallJob,
  attempt: number,
  logger: { readonly log: Logger },
  stop?: AbortSignal,
): Promise<unknown> {
  const ctx = new AttemptContext(job, attempt, logger);
  // Taken before the handler starts: the time its synchronous part takes counts against its budget.
  const startedAt = Date.now();
  let value: unknown;
  try {
    value = tool.handler(args, ctx);
  } catch (err) {
    return Promise.reject(attemptFailure(err, tool, stop));
  }
  if (!isThenable(value)) return Promise.resolve(value);
  return raceAttempt(tool, job, value, ctx, startedAt, stop);
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null &&
    (typeof value === 'object' || typeof value === 'function') &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}

/** A failed attempt as the breaker sees it: handed back when the executor stopped it, else classified. */
function attemptFailure(err: unknown, tool: RegisteredTool, stop?: AbortSignal): AttemptFailure {
  // However the handler reacted to being stopped, it is not the tool's failure: no breaker count.
  if (stop?.aborted) return new AttemptFailure('unavailable', HANDED_BACK);
  return classify(err, tool);
}

/** An attempt whose handler answered with a promise: it races the attempt's timeout and the executor's stop. */
async function raceAttempt(
  tool: RegisteredTool,
  job: ToolCallJob,
  pending: PromiseLike<unknown>,
  ctx: AttemptContext,
  startedAt: number,
  stop?: AbortSignal,
): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  /** Stops listening for the executor's stop. */
  let onStop: (() => void) | undefined;
  const left = job.deadline - startedAt;
  const budgetMs = Math.max(0, Math.min(tool.timeoutMs, left));
  const cutByDeadline = left < tool.timeoutMs;
  try {
    // Whichever settles it first wins: the handler, its timeout, or the executor stopping. One promise
    // rather than a race with a timeout promise: fewer objects and ticks on every call's path.
    return await new Promise<unknown>((resolve, reject) => {
      timer = setTimeout(
        () => {
          ctx.abort(new Error(cutByDeadline ? 'call deadline' : 'tool timeout'));
          reject(
            cutByDeadline
              ? // Stopped before its own timeout: the call's time ran out (it waited in a queue, or its run has
                // little left), which says nothing about the tool, so the breaker does not count it.
                new AttemptFailure(
                  'timeout',
                  `"${tool.name}" was stopped at the call's deadline after ${budgetMs} ms`,
                  undefined,
                  undefined,
                  false,
                )
              : new AttemptFailure('timeout', `"${tool.name}" did not finish within ${tool.timeoutMs} ms`),
          );
        },
        Math.max(0, startedAt + budgetMs - Date.now()),
      );
      if (stop) {
        const handBack = () => {
          ctx.abort(new Error('executor shutting down'));
          reject(new AttemptFailure('unavailable', HANDED_BACK));
        };
        if (stop.aborted) handBack();
        else onStop = whenAborted(stop, handBack);
      }
      pending.then(resolve, reject);
    });
  } catch (err) {
    throw attemptFailure(err, tool, stop);
  } finally {
    clearTimeout(timer);
    onStop?.();
  }
}

/**
 * What a handler gets for one attempt. A class, with `signal` and `logger` read from its prototype,
 * rather than an object literal with getters, which gets a hidden class of its own per attempt (see
 * `CallLogger`).
 */
class AttemptContext implements ToolContext {
  readonly runId: string;
  readonly traceId: string;
  readonly agent: string;
  readonly toolCallId: string;
  readonly idempotencyKey: string;
  // Made when the handler first reads `signal`, or when the attempt is stopped: most handlers never
  // read it, and an AbortController is one of the costlier objects of a call.
  #controller: AbortController | undefined;
  #child: Logger | undefined;

  constructor(
    job: ToolCallJob,
    readonly attempt: number,
    private readonly callLogger: { readonly log: Logger },
  ) {
    this.runId = job.run_id;
    this.traceId = job.trace_id;
    this.agent = job.agent;
    this.toolCallId = job.tool_call_id;
    this.idempotencyKey = `${job.run_id}.${job.tool_call_id}`;
  }

  get signal(): AbortSignal {
    return (this.#controller ??= new AbortController()).signal;
  }

  get logger(): Logger {
    return (this.#child ??= this.callLogger.log.child({ attempt: this.attempt }));
  }

  /** Aborts the handler's signal (made now if it never read it). */
  abort(reason: Error): void {
    (this.#controller ??= new AbortController()).abort(reason);
  }
}

/** What runs when a signal aborts, by signal: see `whenAborted`. */
const abortCallbacks = new WeakMap<AbortSignal, Set<() => void>>();

/**
 * Runs `fn` when `signal` (not yet aborted) aborts; returns what stops listening. The calls in flight share
 * one signal (the executor's hand-back): it gets one 'abort' listener, which runs the callbacks of the
 * attempts running then. An EventTarget listener added and removed per attempt cost a quarter of a no-op
 * call's pipeline.
 */
function whenAborted(signal: AbortSignal, fn: () => void): () => void {
  let callbacks = abortCallbacks.get(signal);
  if (!callbacks) {
    const fns = new Set<() => void>();
    signal.addEventListener('abort', () => {
      for (const f of [...fns]) f();
      fns.clear();
    });
    abortCallbacks.set(signal, fns);
    callbacks = fns;
  }
  const registered = callbacks;
  registered.add(fn);
  return () => registered.delete(fn);
}

function classify(err: unknown, tool: RegisteredTool): AttemptFailure {
  if (err instanceof AttemptFailure) return err;
  const e = err as {
    name?: string;
    message?: string;
    kind?: string;
    code?: string;
    status?: number;
    statusCode?: number;
  };
  const message = typeof e?.message === 'string' ? e.message : String(err);
  if (e?.name === 'ToolError' && typeof e.kind === 'string' && HANDLER_KINDS.has(e.kind)) {
    const { field, status, retryAfterMs } = err as { field?: string; status?: number; retryAfterMs?: number };
    return new AttemptFailure(e.kind as ToolErrorKind, message, undefined, field, true, {
      ...(typeof status === 'number' ? { status } : {}),
      ...(typeof retryAfterMs === 'number' ? { retryAfterMs } : {}),
    });
  }
  if (e?.name === 'AbortError' || e?.name === 'TimeoutError') {
    return new AttemptFailure('timeout', `"${tool.name}" was aborted: ${message}`);
  }
  const status = e?.status ?? e?.statusCode;
  if (
    (typeof e?.code === 'string' && (TRANSIENT_CODES.has(e.code) || e.code.startsWith('UND_ERR'))) ||
    (status !== undefined && (status >= 500 || status === 429))
  ) {
    return new AttemptFailure('transient', message, e?.name);
  }
  return new AttemptFailure('execution_error', message, e?.name ?? 'Error');
}

/** A successful call's result: shaped to the tool's budget, with the arguments aliases changed. */
function succeed(
  call: {
    tool: RegisteredTool;
    job: ToolCallJob;
    value: unknown;
    attempts: number;
    durationMs: number;
    tries: AttemptTiming[];
  },
  extra: { defaults?: ToolDefaults | undefined; normalized?: Record<string, unknown> },
): ToolOutcome {
  const { tool, job, value } = call;
  const result: ToolResult = {
    tool_call_id: job.tool_call_id,
    name: tool.name,
    ok: true,
    status: 'ok',
    duration_ms: call.durationMs,
    attempts: call.attempts,
  };
  addCallRecord(result, call.tries, extra.normalized);
  if (isNoResult(value)) {
    result.content = { hint: value.hint };
    result.no_result = true;
    return { result };
  }
  const budget = tool.resultBudgetDeclared
    ? tool.resultBudgetChars
    : (extra.defaults?.result_budget_chars ?? tool.resultBudgetChars);
  const summarize =
    tool.summarizeResult ?? extra.defaults?.summarize_results ?? constants.DEFAULT_SUMMARIZE_RESULTS;
  const shaped = shapeResult(value, { budgetChars: budget, summarize });
  if (!shaped.truncated) {
    result.content = value;
    return { result };
  }
  const ref = newResultRef();
  result.content = shaped.content;
  result.truncated = true;
  result.notice = truncationNotice(shaped, budget, ref);
  result.ref = ref;
  return {
    result,
    ...(shaped.full === undefined ? {} : { full: shaped.full }),
  };
}
