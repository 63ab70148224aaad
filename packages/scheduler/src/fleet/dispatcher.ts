import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue } from 'bullmq';
import {
  AgentReachError,
  errorResult,
  parseReply,
  toolJobId,
  WIRE_VERSION,
  type Keys,
  type TraceCarrier,
  type ToolCallJob,
  type ToolErrorInfo,
  type ToolReply,
  type ToolResult,
} from '@agent-reach/protocol';
import {
  callStartField,
  constants,
  duplicateRedis,
  failSpan,
  redisScripts,
  redisUnavailable,
  SpanKind,
  traceCarrier,
  tracer,
  tracingEnabled,
  type Logger,
  type RedisClient,
  type Span,
} from '@agent-reach/shared';
import type { McpServerView, ToolCatalog } from './tool-catalog.js';

/**
 * How long a call may take from its publication, in ms: the deadline the executor receives, which stops
 * its attempts and the retries between them. The tool's worst case (every attempt and backoff, plus
 * slack), but never more than RETRY_WINDOW_SHARE_OF_RUN of the run's remaining time — except that a call
 * always gets one attempt's timeout (within the run's time), so that it can run once.
 */
export function callWindowMs(call: {
  worstCaseMs: number;
  attemptMs: number;
  /** Time left before the run's deadline; unset: no cap. */
  runRemainingMs?: number;
}): number {
  if (call.runRemainingMs === undefined) return call.worstCaseMs;
  const remaining = Math.max(0, call.runRemainingMs);
  const share = Math.floor(remaining * constants.RETRY_WINDOW_SHARE_OF_RUN);
  return Math.max(1, Math.min(call.worstCaseMs, Math.max(share, Math.min(call.attemptMs, remaining))));
}

/** One call of a model turn. */
export interface DispatchCall {
  toolCallId: string;
  name: string;
  /** The model's raw argument string. */
  arguments: string;
}

export interface DispatchRun {
  runId: string;
  traceId: string;
  agent: string;
  /** Epoch ms the run ends at: a call that no executor started is not republished past it. */
  deadlineAt?: number;
  /** The run's own argument aliases by tool (its variant's): each call's job carries its tool's. */
  argumentAliases?: Readonly<Record<string, Record<string, Record<string, string>>>>;
}

export interface DispatchOptions {
  /**
   * The calls were just made by the model in this process, so none can have a recorded result yet and
   * the read of the run's record is skipped (it is one round trip on every call's path).
   */
  fresh?: boolean;
  /** Aborting it abandons the calls: this process no longer owns the run, so it records nothing. */
  signal?: AbortSignal;
}

export interface DispatcherOptions {
  /** Producer connection (adds, result look-ups). A blocking duplicate is made for replies. */
  connection: RedisClient;
  keys: Keys;
  catalog: ToolCatalog;
  logger: Logger;
  /** Identifies this dispatcher's reply list. Default: a random id. */
  id?: string;
  /** Added to a call's worst-case executor time before it is given up as `timeout`, in ms. Default 5000. */
  slackMs?: number;
  /**
   * How long a call that no executor has started may wait, republished at each deadline, before it is
   * answered `unavailable`, in ms. Default 60 000.
   */
  startWaitMs?: number;
}

/** The dispatcher's options with every default filled in. */
export type ResolvedDispatcherOptions = Required<DispatcherOptions>;

/** Every default of the dispatcher in one place: its body reads the resolved options only. */
export function resolveDispatcherOptions(o: DispatcherOptions): ResolvedDispatcherOptions {
  return {
    ...o,
    id: o.id ?? newDispatcherId(),
    slackMs: o.slackMs ?? constants.DEFAULT_DISPATCH_SLACK_MS,
    startWaitMs: o.startWaitMs ?? constants.CALL_START_WAIT_MS,
  };
}

/** A new dispatcher id, which names its reply list: a random UUID. */
export function newDispatcherId(): string {
  return randomUUID();
}

interface Pending {
  resolve: (result: ToolResult) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
  run: DispatchRun;
  call: DispatchCall;
  runId: string;
  toolCallId: string;
  name: string;
  since: number;
  /** Its deadline passed once and it had started: the next expiry answers `timeout`. */
  expired?: boolean;
  /** When the call was first published (republishing keeps it). */
  firstPublishedAt: number;
  /** The `enqueued_at` of its latest publication: what a withdrawal names. */
  publishedAt: number;
  /** An executor's start of it was seen on the run's record: its job is no longer looked for. */
  started?: boolean;
  /** When its job was last looked for (see `#rescue`), epoch ms. */
  checkedAt: number;
  /** Its deadline or a look for its job is being handled: the other waits (they withdraw and republish). */
  busy?: boolean;
  /** The trace context of its first publication, carried by every republication too. */
  trace?: TraceCarrier;
}

/**
 * A call's run record no longer holds the call (its ledger lost the model turn that made it, as a failover
 * of the run's Redis can): the run's attempt resumes from its last stored checkpoint, as after a failed
 * checkpoint, rather than wait for calls no executor will run.
 */
export class RunRecordBehind extends Error {
  constructor(readonly runId: string) {
    super(
      `run ${runId}: its record lost the model turn of a call awaited here (a failover of its Redis); ` +
        'the run resumes from its last stored checkpoint',
    );
    this.name = 'RunRecordBehind';
  }
}

/**
 * Publishes the tool calls of a model turn and awaits their results by `tool_call_id`.
 *
 * How results come back: every job carries `replyTo`, the Redis list of the dispatcher that published
 * it. The executor records the result in the run's results hash, then pushes it onto that list (two
 * commands: on a cluster they are on different slots); this dispatcher drains its own list with a
 * blocking BLMPOP (up to REPLY_BATCH_SIZE replies per round trip). So each scheduler reads only the completions of its own calls — unlike BullMQ's
 * QueueEvents, where every listener reads every completion of the fleet — and a result reaches the
 * waiting run before BullMQ has even moved the job to completed. The results hash is the durable record:
 * it is read before publishing (a call with a result is never dispatched again) and at each call's
 * deadline (a reply pushed to a dispatcher that has since died is still found).
 *
 * At a call's deadline with no result, the dispatcher tells apart a call that never started from one
 * that ran out of time by the run's record: an executor records its start in the run's ledger
 * (`verify-start-4.lua`) right before running it. BullMQ's view of the job does not count: a failover of the queue's Redis can
 * lose the job, or leave it active and locked by a worker that never received it. A call with no start
 * on record is withdrawn in the same script (no executor can start that publication any more), its job
 * taken out of its queue whatever its state, and published again under the same job id while the run
 * has time, up to `CALL_START_WAIT_MS`; then it is answered `unavailable` (nothing ran). A call that
 * started gets a short grace for the executor, which aborts it at the same deadline, to record its
 * result; only then is it answered `timeout`. Either answer is recorded first-wins, like the executor's,
 * so a late result never replaces what the model was told.
 */
export class Dispatcher {
  readonly id: string;
  readonly #opts: ResolvedDispatcherOptions;
  readonly #queues = new Map<string, Queue>();
  readonly #pending = new Map<string, Pending>();
  readonly #replyKey: string;
  #reader: RedisClient | undefined;
  #reading: Promise<void> | undefined;
  #closed = false;

  constructor(options: DispatcherOptions) {
    this.#opts = resolveDispatcherOptions(options);
    this.id = this.#opts.id;
    this.#replyKey = options.keys.replies(this.id);
  }

  /**
   * Results in the order of `calls`; never rejects for a missing result (that becomes `timeout`).
   * `fresh: true` says the calls were just made by the model in this process, so none can have a recorded
   * result yet and the read of the run's record is skipped (it is one round trip on every call's path).
   */
  async dispatch(
    run: DispatchRun,
    calls: DispatchCall[],
    options: DispatchOptions = {},
  ): Promise<ToolResult[]> {
    if (this.#closed) throw new AgentReachError('DISPATCH_CLOSED', 'the dispatcher is closed');
    if (calls.length === 0) return [];
    const { connection, keys } = this.#opts;
    const recorded = options.fresh
      ? []
      : await connection.hmget(keys.results(run.runId), ...calls.map((c) => c.toolCallId));
    const results = new Array<Promise<ToolResult>>(calls.length);
    const byQueue = new Map<string, Array<{ name: string; data: ToolCallJob; opts: object }>>();
    const now = Date.now();
    const mine: string[] = [];
    const spans: Span[] = [];
    const traced = tracingEnabled();
    calls.forEach((call, i) => {
      const existing = recorded[i];
      if (existing !== null && existing !== undefined) {
        results[i] = Promise.resolve(JSON.parse(existing) as ToolResult);
        return;
      }
      // No executor can run it and none is about to (its MCP server failed to start everywhere): answered
      // now, naming the server's error, rather than after waiting for an executor. Only a call never
      // published before: one that was may sit in a queue, and is withdrawn first (see #startRechecking).
      const down = options.fresh ? this.#opts.catalog.downServer(call.name) : undefined;
      if (down) {
        results[i] = this.#serverDown(run, call, down);
        return;
      }
      const span = traced ? publishSpan(run, call) : undefined;
      if (span) spans.push(span);
      const trace = span && traceCarrier(span);
      const job = this.#job(run, call, now, trace);
      span?.setAttribute('messaging.destination.name', job.queue);
      const result = this.#await(run, call, job.data.deadline, now, trace);
      // Abandoned calls reject possibly before anyone awaits them (while publishing): never unhandled.
      result.catch(() => undefined);
      results[i] = result;
      mine.push(pendingKey(run.runId, call.toolCallId));
      const jobs = byQueue.get(job.queue) ?? [];
      jobs.push(job);
      byQueue.set(job.queue, jobs);
    });
    const abandon = () => {
      for (const key of mine) {
        const p = this.#pending.get(key);
        if (!p) continue;
        this.#pending.delete(key);
        clearTimeout(p.timer);
        p.reject(new AgentReachError('DISPATCH_CLOSED', 'the run was released; its calls are not awaited'));
      }
    };
    if (options.signal?.aborted) abandon();
    options.signal?.addEventListener('abort', abandon, { once: true });
    try {
      this.#startReading();
      // addBulk builds a pipeline, which on BullMQ's script-laden connection costs more than one add.
      // A failover of the queue's master refuses the adds for a few seconds: they are tried again (the job
      // ids make that idempotent) rather than failing the run's step, which would wait out its backoff.
      const publishing: Array<Promise<unknown>> = [];
      for (const [name, jobs] of byQueue) {
        const queue = this.#queue(name);
        const [only] = jobs;
        publishing.push(
          this.#retrying<unknown>(
            () =>
              jobs.length === 1 && only ? queue.add(only.name, only.data, only.opts) : queue.addBulk(jobs),
            options.signal,
          ),
        );
      }
      // A turn of one call to one queue (the usual one) awaits its add as it is: no Promise.all around it.
      const [one] = publishing;
      const published = publishing.length === 1 && one ? one : Promise.all(publishing);
      if (spans.length > 0) await endSpans(spans, published);
      else await published;
      const [first] = results;
      return results.length === 1 && first ? [await first] : await Promise.all(results);
    } finally {
      options.signal?.removeEventListener('abort', abandon);
    }
  }

  /**
   * Runs `publish` again while Redis cannot serve it, up to DISPATCH_PUBLISH_RETRY_MS or until `signal`
   * aborts. The first try is the publication itself, with no async frame of its own around it: one per
   * turn on every call's path.
   */
  #retrying<T>(publish: () => Promise<T>, signal: AbortSignal | undefined): Promise<T> {
    const until = Date.now() + constants.DISPATCH_PUBLISH_RETRY_MS;
    return publish().catch((err: unknown) => this.#retryPublishing(err, publish, signal, until));
  }

  /** The tries after a first one failed with `err` (see `#retrying`). */
  async #retryPublishing<T>(
    first: unknown,
    publish: () => Promise<T>,
    signal: AbortSignal | undefined,
    until: number,
  ): Promise<T> {
    let err = first;
    for (let delayMs = 100; ; delayMs = Math.min(delayMs * 2, 1000)) {
      const why = redisUnavailable(err);
      if (!why || signal?.aborted || this.#closed || Date.now() + delayMs > until) throw err;
      this.#opts.logger.warn({ why }, 'could not publish tool calls yet; retrying');
      await sleep(delayMs);
      try {
        return await publish();
      } catch (next) {
        err = next;
      }
    }
  }

  /** The job of one call, with a deadline from its tool's worst case, capped by the run's remaining time. */
  #job(
    run: DispatchRun,
    call: DispatchCall,
    now: number,
    trace: TraceCarrier | undefined,
  ): { queue: string; name: string; data: ToolCallJob; opts: object } {
    const { keys, catalog } = this.#opts;
    const deadline =
      now +
      callWindowMs({
        worstCaseMs: catalog.worstCaseMs(call.name) + this.#opts.slackMs,
        attemptMs: catalog.get(call.name)?.timeoutMs ?? constants.DEFAULT_TOOL_TIMEOUT_MS,
        ...(run.deadlineAt === undefined ? {} : { runRemainingMs: run.deadlineAt - now }),
      });
    return {
      queue: keys.toolQueue(catalog.group(call.name)),
      name: call.name,
      data: {
        v: WIRE_VERSION,
        run_id: run.runId,
        trace_id: run.traceId,
        agent: run.agent,
        tool_call_id: call.toolCallId,
        name: call.name,
        arguments: call.arguments,
        deadline,
        reply_to: this.#replyKey,
        enqueued_at: now,
        ...(trace ? { trace } : {}),
        ...runAliasesOf(run, call.name),
      },
      opts: {
        jobId: toolJobId(run.runId, call.toolCallId),
        attempts: constants.TOOL_JOB_ATTEMPTS,
        backoff: { type: 'fixed', delay: 1000 },
        removeOnComplete: true,
        removeOnFail: { age: constants.TOOL_JOB_KEEP_FAILED_S },
      },
    };
  }

  /**
   * Stops reading replies and closes queues. Calls still waiting are abandoned, not answered: their runs
   * were handed back, and whoever resumes them finds the results in the runs' records.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#recheck);
    for (const pending of this.#pending.values()) {
      clearTimeout(pending.timer);
      pending.reject(new AgentReachError('DISPATCH_CLOSED', 'the scheduler shut down while waiting'));
    }
    this.#pending.clear();
    this.#reader?.disconnect();
    await this.#reading?.catch(() => undefined);
    await Promise.all([...this.#queues.values()].map((q) => q.close()));
  }

  #await(
    run: DispatchRun,
    call: DispatchCall,
    deadline: number,
    firstPublishedAt: number,
    trace: TraceCarrier | undefined,
  ): Promise<ToolResult> {
    const key = pendingKey(run.runId, call.toolCallId);
    return new Promise<ToolResult>((resolve, reject) => {
      this.#pending.set(key, {
        resolve,
        reject,
        timer: this.#timer(key, deadline),
        run,
        call,
        runId: run.runId,
        toolCallId: call.toolCallId,
        name: call.name,
        since: Date.now(),
        firstPublishedAt,
        publishedAt: firstPublishedAt,
        checkedAt: firstPublishedAt,
        ...(trace ? { trace } : {}),
      });
      this.#startRechecking();
    });
  }

  #timer(key: string, at: number): NodeJS.Timeout {
    return setTimeout(
      () => {
        this.#expire(key).catch((err: unknown) => {
          this.#opts.logger.warn({ err }, 'settling a call past its deadline failed; retrying');
          const p = this.#pending.get(key);
          if (p) p.timer = this.#timer(key, Date.now() + constants.DISPATCH_RECHECK_MS);
        });
      },
      Math.max(0, at - Date.now()),
    );
  }

  /**
   * A call past its deadline with no result yet: never started, or started and out of time (see above).
   * Started means an executor recorded its start on the run's record; what BullMQ says of the job does
   * not count (a failover can lose the job, or leave it taken by a worker that never got it).
   */
  async #expire(key: string): Promise<void> {
    const p = this.#pending.get(key);
    if (!p) return;
    if (p.busy) {
      p.timer = this.#timer(key, Date.now() + constants.DISPATCH_RECHECK_MS);
      return;
    }
    p.busy = true;
    try {
      await this.#expireNow(key, p);
    } finally {
      p.busy = false;
    }
  }

  async #expireNow(key: string, p: Pending): Promise<void> {
    const { connection, keys } = this.#opts;
    const verdict = await redisScripts(connection).withdrawCall(
      [keys.results(p.runId), keys.runCalls(p.runId), keys.runStarts(p.runId)],
      [p.toolCallId, p.publishedAt, constants.DEFAULT_RESULTS_TTL_S],
    );
    if (verdict[0] === 'recorded') return this.#settle(key, p, JSON.parse(verdict[1]) as ToolResult);
    if (verdict[0] === 'withdrawn') return this.#publishAgain(key, p);
    if (!p.expired) {
      // Started: the executor aborts it at the same deadline and records what happened; give it a moment.
      p.expired = true;
      p.timer = this.#timer(key, Date.now() + constants.DISPATCH_STARTED_GRACE_MS);
      return;
    }
    return this.#answer(key, p, 'timeout', `"${p.name}" started but did not finish before its deadline`);
  }

  /**
   * A withdrawn call (no executor can start that publication any more): its job is taken out of its queue,
   * whatever state BullMQ holds it in, and published again under the same job id while it may still
   * start; otherwise it is answered `unavailable`.
   */
  async #publishAgain(key: string, p: Pending): Promise<void> {
    const { connection, keys, catalog } = this.#opts;
    const queue = this.#queue(keys.toolQueue(catalog.group(p.name)));
    await takeBack(queue, connection, toolJobId(p.runId, p.toolCallId));
    // Settled or given up while its job was taken back (its result came, its run was released): nothing
    // awaits a new publication.
    if (this.#pending.get(key) !== p) return;
    const now = Math.max(Date.now(), p.publishedAt + 1);
    const startWait = this.#opts.startWaitMs;
    const limit = Math.min(p.firstPublishedAt + startWait, p.run.deadlineAt ?? Infinity);
    const next = this.#job(p.run, p.call, now, p.trace);
    if (next.data.deadline <= limit) {
      this.#opts.logger.info(
        { runId: p.runId, toolCallId: p.toolCallId, tool: p.name },
        'no executor started the call; published it again',
      );
      await queue.add(next.name, next.data, next.opts);
      if (this.#pending.get(key) === p) {
        p.publishedAt = now;
        p.checkedAt = now;
        clearTimeout(p.timer);
        p.timer = this.#timer(key, next.data.deadline);
      }
      return;
    }
    return this.#answer(
      key,
      p,
      'unavailable',
      `no executor started "${p.name}" in time; it did not run and may be called again`,
    );
  }

  /**
   * A call nobody has started for a while, whose job is gone from its queue or was taken by a worker that
   * never started it (as a failover of the queue's master leaves them), is published again now rather than
   * at its deadline. A job still waiting for an executor is left alone.
   */
  async #rescue(key: string, p: Pending): Promise<void> {
    const { connection, keys, catalog } = this.#opts;
    // The call's ledger entry and its start; and the start as an executor of the release before this one
    // records it, while a fleet is upgraded.
    const [[declared, start], legacyStart] = await Promise.all([
      connection.hmget(keys.runCalls(p.runId), p.toolCallId, callStartField(p.toolCallId)),
      connection.hget(keys.runStarts(p.runId), p.toolCallId),
    ]);
    if (start?.startsWith('started:') || legacyStart?.startsWith('started:')) {
      p.started = true;
      return;
    }
    // The model turn that made the call was checkpointed (with the call in the run's ledger) before it was
    // published. A ledger without it went back: a failover of the run's Redis lost writes its old master
    // had acknowledged. No executor runs a call the ledger does not hold, so waiting is pointless.
    if (declared === null && this.#pending.get(key) === p) return this.#recordBehind(p.runId);
    const queue = this.#queue(keys.toolQueue(catalog.group(p.name)));
    const job = queue.toKey(toolJobId(p.runId, p.toolCallId));
    const [exists, takenAt] = await Promise.all([
      connection.exists(job),
      connection.hget(job, 'processedOn'),
    ]);
    // A job handed back (by a draining executor) keeps its processedOn while it waits again: only a job
    // BullMQ still holds as taken counts as taken but never started.
    const lost =
      exists === 0 ||
      (Date.now() - Number(takenAt ?? Infinity) >= constants.DISPATCH_LOST_JOB_AFTER_MS &&
        (await queue.getJobState(toolJobId(p.runId, p.toolCallId))) === 'active');
    if (!lost || this.#pending.get(key) !== p) return;
    if (!(await this.#withdraw(key, p))) return;
    this.#opts.logger.info(
      { runId: p.runId, toolCallId: p.toolCallId, tool: p.name },
      exists === 0 ? "the call's job is gone from its queue" : "the call's job was taken but never started",
    );
    return this.#publishAgain(key, p);
  }

  /**
   * Gives up every call this dispatcher awaits for `runId`, without recording anything: the run's record
   * is behind what this process holds, so the attempt must resume from the record (`RunRecordBehind`).
   */
  #recordBehind(runId: string): void {
    const err = new RunRecordBehind(runId);
    this.#opts.logger.warn({ runId }, err.message);
    for (const [key, p] of this.#pending) {
      if (p.runId !== runId) continue;
      this.#pending.delete(key);
      clearTimeout(p.timer);
      p.reject(err);
    }
  }

  /** Answers a call with an error of the dispatcher's own, unless it has a result: the recorded one wins. */
  async #answer(key: string, p: Pending, kind: 'timeout' | 'unavailable', message: string): Promise<void> {
    const result = await this.#recordFirst(p, errorResult(p.call, { kind, message, retryable: true }));
    this.#settle(key, p, result);
  }

  /** Records results the loop decided itself, unless their calls have one; resolves to the recorded ones. */
  async recordLocal(runId: string, results: ToolResult[]): Promise<ToolResult[]> {
    const scripts = redisScripts(this.#opts.connection);
    const recorded = await Promise.all(
      results.map((r) =>
        scripts.recordFirst(
          [this.#opts.keys.results(runId)],
          [r.tool_call_id, JSON.stringify(r), constants.DEFAULT_RESULTS_TTL_S],
        ),
      ),
    );
    return recorded.map((json) => JSON.parse(json) as ToolResult);
  }

  /** A fresh call of a tool whose MCP server is down everywhere: `unavailable`, recorded, nothing published. */
  async #serverDown(run: DispatchRun, call: DispatchCall, server: McpServerView): Promise<ToolResult> {
    this.#opts.logger.info(
      {
        runId: run.runId,
        toolCallId: call.toolCallId,
        tool: call.name,
        server: server.name,
        why: server.error,
      },
      'MCP server down; call answered unavailable',
    );
    const [result] = await this.recordLocal(run.runId, [
      errorResult(call, serverDownError(call.name, server)),
    ]);
    return result as ToolResult;
  }

  /**
   * Withdraws a publication no executor has started (none may start it any more): true when withdrawn;
   * otherwise the call has a result (settled now) or has started (marked so).
   */
  async #withdraw(key: string, p: Pending): Promise<boolean> {
    const { connection, keys } = this.#opts;
    const verdict = await redisScripts(connection).withdrawCall(
      [keys.results(p.runId), keys.runCalls(p.runId), keys.runStarts(p.runId)],
      [p.toolCallId, p.publishedAt, constants.DEFAULT_RESULTS_TTL_S],
    );
    if (verdict[0] === 'recorded') this.#settle(key, p, JSON.parse(verdict[1]) as ToolResult);
    if (verdict[0] === 'started') p.started = true;
    return verdict[0] === 'withdrawn';
  }

  /**
   * A published call, not started, of a tool whose MCP server went down everywhere: withdrawn (no executor
   * may start it any more), taken out of its queue and answered `unavailable` with the server's error.
   */
  async #giveUpServerDown(key: string, p: Pending, server: McpServerView): Promise<void> {
    const { connection, keys, catalog } = this.#opts;
    if (!(await this.#withdraw(key, p))) return;
    await takeBack(
      this.#queue(keys.toolQueue(catalog.group(p.name))),
      connection,
      toolJobId(p.runId, p.toolCallId),
    );
    this.#opts.logger.info(
      { runId: p.runId, toolCallId: p.toolCallId, tool: p.name, server: server.name, why: server.error },
      'MCP server down; waiting call answered unavailable',
    );
    const result = await this.#recordFirst(p, errorResult(p.call, serverDownError(p.name, server)));
    this.#settle(key, p, result);
  }

  /** Records a result the dispatcher gives itself, unless the call has one, and returns the recorded one. */
  async #recordFirst(p: Pending, result: ToolResult): Promise<ToolResult> {
    const json = await redisScripts(this.#opts.connection).recordFirst(
      [this.#opts.keys.results(p.runId)],
      [p.toolCallId, JSON.stringify(result), constants.DEFAULT_RESULTS_TTL_S],
    );
    return JSON.parse(json) as ToolResult;
  }

  #settle(key: string, p: Pending, result: ToolResult): void {
    if (this.#pending.get(key) !== p) return;
    this.#pending.delete(key);
    clearTimeout(p.timer);
    p.resolve(result);
  }

  #recheck: NodeJS.Timeout | undefined;

  /**
   * A call published before a scheduler took over a run replies to the old scheduler's list. Calls that
   * have waited a while are therefore looked up in their runs' records, all in one pipeline.
   */
  #startRechecking(): void {
    if (this.#recheck) return;
    this.#recheck = setInterval(() => {
      const now = Date.now();
      const stale = [...this.#pending].filter(([, p]) => now - p.since >= constants.DISPATCH_RECHECK_MS);
      if (stale.length === 0) {
        if (this.#pending.size === 0) {
          clearInterval(this.#recheck);
          this.#recheck = undefined;
        }
        return;
      }
      // One command per run, sent together: the runs' results are on different slots of a cluster.
      const { connection, keys } = this.#opts;
      Promise.all(stale.map(([, p]) => connection.hget(keys.results(p.runId), p.toolCallId)))
        .then((replies) => {
          replies.forEach((value, i) => {
            const entry = stale[i];
            if (typeof value !== 'string' || !entry) return;
            const [key, p] = entry;
            if (this.#pending.get(key) !== p) return;
            this.#pending.delete(key);
            clearTimeout(p.timer);
            p.resolve(JSON.parse(value) as ToolResult);
          });
        })
        .catch((err: unknown) => this.#opts.logger.warn({ err }, 'rechecking pending results failed'));
      for (const [key, p] of stale) {
        const down = p.started || p.busy ? undefined : this.#opts.catalog.downServer(p.name);
        if (down) {
          p.busy = true;
          this.#giveUpServerDown(key, p, down)
            .catch((err: unknown) =>
              this.#opts.logger.warn({ err }, 'answering a call of a down server failed'),
            )
            .finally(() => (p.busy = false));
          continue;
        }
        if (p.started || p.busy || now - p.checkedAt < constants.DISPATCH_LOST_JOB_AFTER_MS) continue;
        p.checkedAt = now;
        p.busy = true;
        this.#rescue(key, p)
          .catch((err: unknown) => this.#opts.logger.warn({ err }, 'checking for a lost tool job failed'))
          .finally(() => (p.busy = false));
      }
    }, constants.DISPATCH_RECHECK_MS);
    this.#recheck.unref();
  }

  #deliver(raw: string): void {
    let reply: ToolReply;
    try {
      reply = parseReply(raw);
    } catch (err) {
      // A reply of another release's format: its call is answered from the run's record, or times out.
      this.#opts.logger.warn({ err }, 'dropped a reply this release does not read');
      return;
    }
    const key = pendingKey(reply.run_id, reply.result.tool_call_id);
    const pending = this.#pending.get(key);
    if (!pending) return; // late (past its deadline) or a duplicate: the run's record already holds it
    // An `unavailable` reply is not taken as it comes: an executor that took a publication of the call
    // past its deadline answers so without recording it, and that publication may be one this dispatcher
    // has since withdrawn and published again, which may still run. The run's record settles the call
    // instead (the recheck finds a recorded answer; the deadline publishes the call again or answers
    // `unavailable` first-wins), so the model is never told "not run" of a call that runs afterwards.
    if (reply.result.error?.kind === 'unavailable') return;
    this.#pending.delete(key);
    clearTimeout(pending.timer);
    pending.resolve(reply.result);
  }

  #startReading(): void {
    if (this.#reading) return;
    const reader = duplicateRedis(this.#opts.connection, {
      maxRetriesPerRequest: null,
      enableOfflineQueue: true,
    });
    this.#reader = reader;
    reader.on('error', (err) => this.#opts.logger.warn({ err }, 'reply reader connection error'));
    this.#reading = (async () => {
      while (!this.#closed) {
        try {
          const batch = (await reader.blmpop(
            constants.REPLY_BLOCK_S,
            1,
            this.#replyKey,
            'RIGHT',
            'COUNT',
            constants.REPLY_BATCH_SIZE,
          )) as [string, string[]] | null;
          if (batch) for (const raw of batch[1]) this.#deliver(raw);
        } catch (err) {
          if (this.#closed) return;
          this.#opts.logger.warn({ err }, 'reading replies failed; retrying');
          await new Promise((r) => setTimeout(r, 100));
        }
      }
    })();
  }

  #queue(name: string): Queue {
    let queue = this.#queues.get(name);
    if (!queue) {
      queue = new Queue(name, {
        connection: this.#opts.connection,
        prefix: this.#opts.keys.queuePrefix(name),
      });
      queue.on('error', (err) => this.#opts.logger.warn({ err, queue: name }, 'tool queue error'));
      this.#queues.set(name, queue);
    }
    return queue;
  }
}

/**
 * Removes a call's job from its queue. A job still locked is held by a worker that took it but never
 * started the call (its start would be on the run's record): a worker that died or lost its connection,
 * or one whose start the withdrawal now refuses. Its lock is dropped so that the job can go.
 */
async function takeBack(queue: Queue, connection: RedisClient, jobId: string): Promise<void> {
  if ((await queue.remove(jobId)) === 1) return;
  await connection.del(`${queue.toKey(jobId)}:lock`);
  await queue.remove(jobId);
}

/** A call's producer span, in the run's trace (the agent runner made it the active context). */
function publishSpan(run: DispatchRun, call: DispatchCall): Span {
  return tracer.startSpan(`publish ${call.name}`, {
    kind: SpanKind.PRODUCER,
    attributes: {
      'messaging.system': 'bullmq',
      'messaging.operation.type': 'send',
      'messaging.operation.name': 'publish',
      'messaging.message.id': toolJobId(run.runId, call.toolCallId),
      'gen_ai.tool.name': call.name,
      'gen_ai.tool.call.id': call.toolCallId,
      'agent_reach.run.id': run.runId,
    },
  });
}

/** Ends the publish spans of a turn once its jobs are added (failed if the add failed). */
async function endSpans(spans: Span[], published: Promise<unknown>): Promise<void> {
  try {
    await published;
  } catch (err) {
    for (const span of spans) failSpan(span, 'publish_failed', (err as Error)?.message);
    throw err;
  } finally {
    for (const span of spans) span.end();
  }
}

/**
 * What a call of a tool whose MCP server is down is answered: a short message the model can act on, and
 * the server's whole error (with since when, and how many executors tried) in `detail` for the run record.
 */
export function serverDownError(tool: string, server: McpServerView): ToolErrorInfo {
  const full = server.error ?? 'it could not be started';
  // The model reads the cause without the server's name repeated, the stderr tail or a long story.
  const cause = full
    .replace(`server "${server.name}": `, '')
    .replace(/ \(stderr: .*\)$/s, '')
    .slice(0, constants.MCP_DOWN_CAUSE_MAX_CHARS);
  const since = server.since === undefined ? '' : ` since ${new Date(server.since).toISOString()}`;
  return {
    kind: 'unavailable',
    message: `"${tool}" cannot run now: its MCP server "${server.name}" is down (${cause}). It did not run; do not call it again until the server is back.`,
    detail: `MCP server "${server.name}" is down${since} on ${server.executors.length} executor(s): ${full}`,
    retryable: true,
  };
}

function pendingKey(runId: string, toolCallId: string): string {
  return `${runId}\n${toolCallId}`;
}

/** The `argument_aliases` of a call's job: its run's aliases for the call's tool, when it has any. */
function runAliasesOf(run: DispatchRun, tool: string): Pick<ToolCallJob, 'argument_aliases'> {
  const aliases = run.argumentAliases;
  return aliases && Object.hasOwn(aliases, tool) ? { argument_aliases: aliases[tool] } : {};
}
