import { setMaxListeners } from 'node:events';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { DelayedError, Worker, type Job } from 'bullmq';
import {
  RUN_ID_PATTERN,
  TOOL_CALL_ID_PATTERN,
  type Keys,
  type ToolCallJob,
  type ToolResult,
} from '@agent-reach/protocol';
import {
  carriedContext,
  closeWithinGrace,
  constants,
  MCP_NAME_SEPARATOR,
  failSpan,
  NO_SPAN,
  SpanKind,
  tracer,
  tracingEnabled,
  type AgentsFile,
  type Logger,
  type Metrics,
  type Span,
  type ToolRegistry,
  type RedisClient,
  waitAtMost,
  type SourcesReport,
} from '@agent-reach/shared';
import { BreakerBoard, type BreakerOptions } from './breakers.js';
import { newExecutorId } from './executor-id.js';
import { startPresence } from './presence.js';
import { pushReply, recordResult, resultWriter, untilWritten } from './record-result.js';
import { checkArgumentsAhead, runTool, type ArgumentsAhead } from './run-tool.js';
import { awaitsPerson, JobRefused, verifyJob, type VerifiedJob } from './verify-job.js';

export interface ToolWorkerOptions {
  /** Connection for commands (results, breakers); BullMQ makes its own blocking connections from it. */
  connection: RedisClient;
  registry: ToolRegistry;
  agents: AgentsFile;
  keys: Keys;
  logger: Logger;
  metrics: Metrics;
  /** Groups whose queues this process serves. Default: every group of the registry. */
  groups?: readonly string[];
  /** What tool sources (MCP servers) report for the announcement: withdrawn tools, servers' states. */
  sources?: () => SourcesReport;
  /** Jobs run at once per group. Default 50. */
  concurrency?: number;
  breaker?: Partial<BreakerOptions>;
  /**
   * How long `close()` may take, in ms. In-flight calls may finish until the last
   * SHUTDOWN_HAND_BACK_RESERVE_MS of it; calls still running then are aborted and handed back to their
   * queue untouched, for another executor. Default 10 000.
   */
  shutdownGraceMs?: number;
  /** Identifies this process in announcements and breaker snapshots. Default: host, pid and a random part. */
  executorId?: string;
  /** How often this process re-announces what it serves, in ms. Default 2000. */
  heartbeatIntervalMs?: number;
  /** How long an announcement counts after its heartbeat, in ms. Default 10 000. */
  announcementTtlMs?: number;
  /** How long a run's recorded results stay in Redis, in seconds. */
  resultsTtlS?: number;
  /** How long a truncated result's full content stays fetchable, in seconds. */
  refTtlS?: number;
  /** BullMQ lock settings, exposed so chaos tests can use short ones. */
  lockDurationMs?: number;
  stalledIntervalMs?: number;
}

/** The tool worker's options with every default filled in (see {@link resolveToolWorkerOptions}). */
export type ResolvedToolWorkerOptions = Omit<
  ToolWorkerOptions,
  | 'groups'
  | 'executorId'
  | 'concurrency'
  | 'breaker'
  | 'shutdownGraceMs'
  | 'heartbeatIntervalMs'
  | 'announcementTtlMs'
  | 'resultsTtlS'
  | 'refTtlS'
> & {
  readonly groups: readonly string[];
  /** Whether `groups` was given: then a configuration reload brings no new group in. */
  readonly groupsGiven: boolean;
  readonly executorId: string;
  readonly concurrency: number;
  readonly breaker: BreakerOptions;
  readonly shutdownGraceMs: number;
  readonly heartbeatIntervalMs: number;
  readonly announcementTtlMs: number;
  readonly resultsTtlS: number;
  readonly refTtlS: number;
};

/** Every default of the tool worker, in one place. */
export function resolveToolWorkerOptions(o: ToolWorkerOptions): ResolvedToolWorkerOptions {
  return {
    ...o,
    groups: [...(o.groups ?? o.registry.groups())],
    groupsGiven: o.groups !== undefined,
    executorId: o.executorId ?? newExecutorId(),
    concurrency: o.concurrency ?? constants.DEFAULT_EXECUTOR_CONCURRENCY,
    breaker: {
      failureThreshold: o.breaker?.failureThreshold ?? constants.DEFAULT_BREAKER_FAILURE_THRESHOLD,
      resetTimeoutMs: o.breaker?.resetTimeoutMs ?? constants.DEFAULT_BREAKER_RESET_TIMEOUT_MS,
    },
    shutdownGraceMs: o.shutdownGraceMs ?? constants.DEFAULT_SHUTDOWN_GRACE_MS,
    heartbeatIntervalMs: o.heartbeatIntervalMs ?? constants.DEFAULT_EXECUTOR_HEARTBEAT_MS,
    announcementTtlMs: o.announcementTtlMs ?? constants.DEFAULT_EXECUTOR_ANNOUNCEMENT_TTL_MS,
    resultsTtlS: o.resultsTtlS ?? constants.DEFAULT_RESULTS_TTL_S,
    refTtlS: o.refTtlS ?? constants.DEFAULT_RESULT_REF_TTL_S,
  };
}

export interface ToolWorker {
  readonly groups: readonly string[];
  readonly breakers: BreakerBoard;
  readonly executorId: string;
  /** Announces this process's groups and tools in the fleet catalog now (the heartbeat repeats it). */
  publishCatalog(): Promise<void>;
  /**
   * Starts serving the registry's groups, and `extra` groups (those of MCP servers not yet mounted), that
   * this process does not serve yet (a configuration reload brought in a new group), unless its groups
   * were given explicitly. Returns the groups it started.
   */
  serveNewGroups(extra?: readonly string[]): string[];
  /** Stops taking jobs, lets in-flight ones finish within the grace period, hands back the rest, closes. */
  close(): Promise<void>;
}

/** A call being run, as the shutdown sees it. */
interface Flight {
  job: Job<ToolCallJob>;
  token: string | undefined;
  /** Handed back to the queue by the shutdown: its outcome is dropped. */
  returned: boolean;
  /** Its outcome is being written: too late to hand it back. */
  recording: boolean;
  /**
   * How long its job waited in the queue, in s, until it is counted: once the call's outcome is on its way
   * to Redis (or the call ends otherwise), so that the count is not on the call's path.
   */
  waitedS?: number | undefined;
}

/**
 * Outcomes that say the call did not run and may still run later (past its deadline before it started, or
 * waiting for a person): they are replied but not recorded, so the record never holds a result for a call
 * that can still be executed.
 */
const REPLY_ONLY_KINDS = new Set(['unavailable', 'awaiting_confirmation']);

/**
 * Whether an outcome is only replied (see REPLY_ONLY_KINDS). A call whose start this executor recorded,
 * and whose deadline then passed before it ran, is the exception: its dispatcher counts it as started, so
 * it neither publishes it again nor takes an unrecorded `unavailable` (a publication it withdrew may be
 * answered so while another runs); the record is where it learns that the call did not run.
 */
function replyOnly(result: ToolResult, start: VerifiedJob['start']): boolean {
  const kind = result.error?.kind;
  if (kind === undefined || !REPLY_ONLY_KINDS.has(kind)) return false;
  return !(kind === 'unavailable' && start === 'started');
}

/** What the tool worker's handlers share: its settings, connections, breakers and the calls in flight. */
interface ToolWorkerContext {
  options: ResolvedToolWorkerOptions;
  registry: ToolRegistry;
  agents: AgentsFile;
  keys: Keys;
  logger: Logger;
  metrics: Metrics;
  executorId: string;
  resultsTtlS: number;
  refTtlS: number;
  writer: RedisClient;
  breakers: BreakerBoard;
  flights: Set<Flight>;
  /**
   * Aborted when the shutdown hands the calls still running back to their queue (each of them marked
   * `returned` first): one signal for every call, rather than an AbortController per call, which was one of
   * the costlier objects of a call.
   */
  handingBack: AbortController;
  /** Aborted when the executor lets go of Redis: results still waiting to be written stop retrying. */
  stopWriting: AbortController;
  draining: boolean;
}

/** Starts one BullMQ worker per served group on the tool-call queues. */
export function createToolWorker(given: ToolWorkerOptions): ToolWorker {
  const options = resolveToolWorkerOptions(given);
  const { connection, registry, agents, keys, logger, metrics, executorId } = options;
  const groups = [...options.groups];
  // Result and breaker writes share a plain connection: a MULTI on BullMQ's connection copies its ~60
  // scripts onto every pipeline (CPU per call), and one connection keeps a breaker transition ahead of
  // the result that caused it, so a scheduler never sees the result first.
  const writer = resultWriter(connection);
  const breakers = new BreakerBoard(options.breaker, { redis: writer, keys, executorId, logger, metrics });
  const presence = startPresence({
    client: writer,
    keys,
    executorId,
    groups,
    registry,
    ...(options.sources ? { sources: options.sources } : {}),
    intervalMs: options.heartbeatIntervalMs,
    ttlMs: options.announcementTtlMs,
    logger,
  });
  const ctx: ToolWorkerContext = {
    options,
    registry,
    agents,
    keys,
    logger,
    metrics,
    executorId,
    resultsTtlS: options.resultsTtlS,
    refTtlS: options.refTtlS,
    writer,
    breakers,
    flights: new Set(),
    handingBack: unlimitedAbortController(),
    stopWriting: new AbortController(),
    draining: false,
  };

  const startWorker = (group: string) => {
    const worker = new Worker<ToolCallJob>(
      keys.toolQueue(group),
      (job, token) => processToolJob(ctx, job, token),
      {
        connection,
        prefix: keys.queuePrefix(keys.toolQueue(group)),
        concurrency: options.concurrency,
        removeOnComplete: { count: 0 },
        removeOnFail: { age: constants.TOOL_JOB_KEEP_FAILED_S },
        runRetryDelay: constants.WORKER_RETRY_DELAY_MS,
        ...(options.lockDurationMs === undefined ? {} : { lockDuration: options.lockDurationMs }),
        ...(options.stalledIntervalMs === undefined ? {} : { stalledInterval: options.stalledIntervalMs }),
      },
    );
    worker.on('error', (err) => logger.error({ err, queue: worker.name }, 'tool worker error'));
    worker.on('failed', (job, err) => {
      if (err instanceof JobRefused) {
        // Logged once already, as a security event. The refused job must not hold the call's job id: a
        // job added by hand under the id of a call the model has yet to make would block that call.
        job
          ?.remove()
          .catch((e: unknown) => logger.warn({ err: e, jobId: job.id }, 'could not remove a refused job'));
        return;
      }
      logger.error({ err, jobId: job?.id }, 'tool job failed inside the executor');
    });
    return worker;
  };
  const workers = groups.map(startWorker);

  let closing: Promise<void> | undefined;
  return {
    groups,
    breakers,
    executorId,
    publishCatalog: () => presence.beat(),
    serveNewGroups(extra = []) {
      if (options.groupsGiven || ctx.draining) return [];
      const added = [...new Set([...registry.groups(), ...extra])].filter((g) => !groups.includes(g));
      for (const group of added) {
        groups.push(group);
        workers.push(startWorker(group));
      }
      return added;
    },
    close() {
      closing ??= closeToolWorker(ctx, workers, presence);
      return closing;
    },
  };
}

/** The workers' processor: a call, inside a consumer span that continues the publisher's trace. */
async function processToolJob(ctx: ToolWorkerContext, job: Job<ToolCallJob>, token?: string): Promise<void> {
  if (ctx.draining) {
    // BullMQ can still hand over a job that arrived while its blocking read was being closed: give it
    // back untouched (no attempt used) for another executor, instead of starting work while stopping.
    await job.moveToDelayed(Date.now(), token);
    throw new DelayedError();
  }
  if (awaitsMcpMount(ctx, job.data)) {
    // A tool of an MCP server this executor runs but has not mounted yet (starting, or restarting after a
    // pause or a crash): the tool exists, so it is not answered unknown_tool. The job goes back to its
    // queue untouched (no attempt used) for another executor, or for this one once mounted; past the
    // call's deadline it is answered `unavailable` as any call that waited too long.
    await job.moveToDelayed(Date.now() + constants.MCP_MOUNT_WAIT_RETRY_MS, token);
    throw new DelayedError();
  }
  // No SDK: no span to build, nor a context to carry it (nothing would record or read them).
  if (!tracingEnabled()) {
    await executeJob(ctx, job, token, NO_SPAN);
    return afterThisTurn();
  }
  // The consumer span continues the trace of the span that published the call.
  const name = typeof job.data?.name === 'string' ? job.data.name.slice(0, 64) : '';
  return tracer.startActiveSpan(
    `execute_tool ${name}`,
    {
      kind: SpanKind.CONSUMER,
      attributes: {
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': name,
        'messaging.system': 'bullmq',
        'messaging.operation.type': 'process',
        'messaging.destination.name': job.queueName,
        'messaging.message.id': String(job.id),
        'agent_reach.executor.id': ctx.executorId,
      },
    },
    carriedContext(job.data?.trace),
    async (span) => {
      try {
        await executeJob(ctx, job, token, span);
      } finally {
        span.end();
      }
      return afterThisTurn();
    },
  );
}

/**
 * Resolves once the I/O callbacks of this turn of the event loop have run. A job's completion (BullMQ's
 * `moveToFinished`, which also fetches the worker's next job) waits for it: the record's answer and the
 * caller's reply often arrive in the same read, and in a process that also dispatches (`agent-reach dev`,
 * the benchmarks) the caller is answered first, so the job it publishes next is found by that fetch
 * rather than by a wake-up and a `moveToActive` of its own (`pnpm bench`, 64 in flight: 0.30 `moveToActive`
 * per call against 0.52); completions of one turn also leave together. From `node:timers/promises`, which
 * fake timers do not reach.
 */
function afterThisTurn(): Promise<void> {
  return nextTurn();
}

/** Verifies a job against its run's record, then runs the call, or replies with its recorded result. */
async function executeJob(
  ctx: ToolWorkerContext,
  job: Job<ToolCallJob>,
  token: string | undefined,
  span: Span,
): Promise<void> {
  const { writer, keys, registry, logger, metrics } = ctx;
  let verified;
  let checked: ArgumentsAhead | undefined;
  try {
    // The call counts as started only once the run's record says so (the dispatcher asks the record, not
    // BullMQ, whether to publish it again): written by the script that verifies the job, right before it
    // runs, unless its deadline has passed (then it is answered `unavailable`, not run) or its dispatcher
    // withdrew this publication.
    const verifying = verifyJob(writer, keys, job.data, registry, {
      executorId: ctx.executorId,
    });
    // The script is on its way: the arguments are checked meanwhile, and used only if the job passes.
    checked = checkArgumentsAhead(registry, job.data);
    verified = await verifying;
  } catch (err) {
    if (err instanceof JobRefused) {
      refused(ctx, job, err);
      failSpan(span, 'refused', err.reason);
    }
    throw err;
  }
  const data = verified.job;
  span.setAttributes({ 'gen_ai.tool.call.id': data.tool_call_id, 'agent_reach.run.id': data.run_id });
  // Child loggers cost an allocation per call (bindings go through redaction): made only when used.
  let child: Logger | undefined;
  const log = () =>
    (child ??= logger.child({
      runId: data.run_id,
      traceId: data.trace_id,
      toolCallId: data.tool_call_id,
      tool: data.name,
    }));
  if (verified.recorded !== undefined) {
    // A redelivered or duplicate job: the recorded result is the call's only result.
    await pushReply(writer, data.reply_to, data.run_id, verified.recorded, ctx.resultsTtlS);
    span.setAttribute('agent_reach.tool.already_recorded', true);
    log().info('call already had a result; not run again');
    return;
  }
  if (verified.start === 'withdrawn') {
    log().info('the dispatcher withdrew this job of the call before any executor started it; not run');
    return;
  }
  const flight: Flight = {
    job,
    token,
    returned: false,
    recording: false,
    waitedS:
      typeof data.enqueued_at === 'number' ? Math.max(0, Date.now() - data.enqueued_at) / 1000 : undefined,
  };
  ctx.flights.add(flight);
  // Past the hand-back (a job taken just before the shutdown began): it goes back like the others.
  if (ctx.handingBack.signal.aborted) {
    ctx.flights.delete(flight);
    observeWait(metrics, flight);
    await handBack(ctx, flight);
    throw new DelayedError();
  }
  metrics.toolCallsInFlight.inc();
  try {
    await runFlight(ctx, { flight, verified, checked, span, log });
  } finally {
    ctx.flights.delete(flight);
    metrics.toolCallsInFlight.dec();
    observeWait(metrics, flight);
  }
}

/** Counts how long a call's job waited in its queue, once. */
function observeWait(metrics: Metrics, flight: Flight): void {
  if (flight.waitedS === undefined) return;
  metrics.queueWait.observe({ group: flight.job.queueName.replace(/^tools-/, '') }, flight.waitedS);
  flight.waitedS = undefined;
}

/** Runs a verified call and records its outcome (or only replies it, when the call may still run later). */
async function runFlight(
  ctx: ToolWorkerContext,
  call: {
    flight: Flight;
    verified: Awaited<ReturnType<typeof verifyJob>>;
    checked: ArgumentsAhead | undefined;
    span: Span;
    log: () => Logger;
  },
): Promise<void> {
  const { flight, verified, checked, span, log } = call;
  const { writer, keys, metrics } = ctx;
  const data = verified.job;
  const { result, full } = await runTool(data, {
    registry: ctx.registry,
    agents: ctx.agents,
    breakers: ctx.breakers,
    logger: ctx.logger,
    bindings: log,
    approved: verified.approved,
    grants: verified.grants,
    sessionId: verified.sessionId,
    signal: ctx.handingBack.signal,
    checked,
  });
  // The shutdown gave the job back to the queue: another executor runs it; this outcome is dropped.
  if (flight.returned) throw new DelayedError();
  flight.recording = true;
  // The result is this call's own object: named in place rather than copied to be serialized.
  result.executor_id = ctx.executorId;
  const json = JSON.stringify(result);
  if (replyOnly(result, verified.start) || awaitsPerson(ctx, verified, result)) {
    const replying = pushReply(writer, data.reply_to, data.run_id, json, ctx.resultsTtlS);
    observeOutcome(metrics, span, result);
    observeWait(metrics, flight);
    await replying;
    return;
  }
  // Redis unable to take the result (out of memory, away, failing over) does not undo the call: the
  // write is retried until the call's deadline, so the tool is not run again for it.
  const writing = untilWritten(
    () =>
      recordResult(writer, {
        keys,
        runId: data.run_id,
        agent: data.agent,
        sessionId: verified.sessionId,
        toolCallId: data.tool_call_id,
        replyTo: data.reply_to,
        resultJson: json,
        ref: result.ref,
        full,
        resultsTtlS: ctx.resultsTtlS,
        refTtlS: ctx.refTtlS,
      }),
    data.deadline,
    // A call whose outcome is being written is never handed back: only the executor letting go of Redis
    // stops the write.
    [ctx.stopWriting.signal],
    (why) => log().warn({ why }, 'could not record the result yet; retrying'),
  );
  // The outcome is on its way to Redis: it is counted and traced while Redis records it, with the wait.
  observeOutcome(metrics, span, result);
  observeWait(metrics, flight);
  const duplicate = await writing;
  if (duplicate !== null) {
    metrics.toolDuplicateResults.inc({ tool: result.name });
    log().warn('call already had a recorded result; kept it and replied with it');
  }
}

/** Counts and logs a job refused for not matching its run's record (a security event). */
function refused(ctx: ToolWorkerContext, job: Job<ToolCallJob>, err: JobRefused): void {
  ctx.metrics.toolJobsRefused.inc({ reason: err.reason });
  const d = (typeof job.data === 'object' && job.data !== null ? job.data : {}) as Partial<ToolCallJob> & {
    runId?: unknown;
    toolCallId?: unknown;
  };
  // Either release's names: the job was refused, so it may be of any shape.
  const runId = d.run_id ?? d.runId;
  const toolCallId = d.tool_call_id ?? d.toolCallId;
  ctx.logger.warn(
    {
      security: true,
      reason: err.reason,
      problem: err.message,
      jobId: job.id,
      queue: job.queueName,
      // Only what matches its pattern is echoed into the log.
      ...(typeof runId === 'string' && RUN_ID_PATTERN.test(runId) ? { runId } : {}),
      ...(typeof toolCallId === 'string' && TOOL_CALL_ID_PATTERN.test(toolCallId) ? { toolCallId } : {}),
    },
    'refused a tool job that does not match its run record',
  );
}

/**
 * Puts a call's job back in its queue, lock token checked, attempt unused; the call itself is stopped by
 * `ctx.handingBack` (marked `returned` first, so its outcome is dropped).
 */
async function handBack(ctx: ToolWorkerContext, flight: Flight): Promise<void> {
  flight.returned = true;
  try {
    await flight.job.moveToDelayed(Date.now(), flight.token);
    ctx.metrics.toolJobsReturned.inc();
  } catch (err) {
    ctx.logger.warn({ err, jobId: flight.job.id }, 'could not hand a call back; its lock will lapse instead');
  }
}

/**
 * Whether a job calls a tool of an MCP server this executor runs but has not mounted (down, or up with no
 * tool mounted yet), within the call's deadline.
 */
function awaitsMcpMount(ctx: ToolWorkerContext, data: Partial<ToolCallJob> | undefined): boolean {
  const name = data?.name;
  if (typeof name !== 'string' || ctx.registry.has(name) || !ctx.options.sources) return false;
  if (typeof data?.deadline !== 'number' || Date.now() >= data.deadline) return false;
  return ctx.options.sources().mcpServers.some(
    (server) =>
      // A server up with its tools mounted that lacks this one does not have it: unknown_tool, as usual.
      (!server.up || server.tools === 0) && name.startsWith(`${server.name}${MCP_NAME_SEPARATOR}`),
  );
}

/** Stops taking jobs, lets in-flight ones finish within the grace period, hands back the rest, closes. */
async function closeToolWorker(
  ctx: ToolWorkerContext,
  workers: Array<Worker<ToolCallJob>>,
  presence: { stop(): Promise<unknown> },
): Promise<void> {
  const { options, logger } = ctx;
  ctx.draining = true;
  const grace = options.shutdownGraceMs;
  const reserve = Math.min(constants.SHUTDOWN_HAND_BACK_RESERVE_MS, grace / 2);
  const ends = Date.now() + grace;
  await waitAtMost(
    presence.stop().catch(() => undefined),
    reserve / 2,
  );
  const graceful = Promise.all(workers.map((w) => w.close())).then(
    () => true,
    (err: unknown) => {
      logger.warn({ err }, 'closing tool workers failed');
      return false;
    },
  );
  const closed = await closeWithinGrace({
    graceful,
    graceMs: ends - reserve - Date.now(),
    handBack: async () => {
      const unfinished = [...ctx.flights].filter((f) => !f.recording && !f.returned);
      logger.warn(
        { graceMs: grace, calls: unfinished.length },
        'grace period over; handing unfinished calls back to their queue',
      );
      for (const f of unfinished) f.returned = true;
      ctx.handingBack.abort();
      await Promise.all(unfinished.map((f) => handBack(ctx, f)));
    },
    // BullMQ's close(true) after a pending close() only returns the pending one: do not wait on it.
    settleMs: () => ends - Date.now(),
  });
  if (closed === 'unsettled') {
    logger.warn('tool workers did not close in time; disconnecting them');
    for (const w of workers) void w.disconnect().catch(() => undefined);
  }
  ctx.breakers.shutdown();
  ctx.stopWriting.abort();
  const quit = ctx.writer.quit().then(
    () => true,
    () => false,
  );
  if ((await waitAtMost(quit, ends - Date.now())) !== true) ctx.writer.disconnect();
}

/** An AbortController whose signal takes any number of listeners (every call in flight adds one). */
function unlimitedAbortController(): AbortController {
  const controller = new AbortController();
  setMaxListeners(0, controller.signal);
  return controller;
}

/** The outcome in the executor's metrics and on the call's execution span. */
function observeOutcome(metrics: Metrics, span: Span, result: ToolResult): void {
  record(metrics, result);
  traceResult(span, result);
}

/** What a call's execution span says of its outcome. */
function traceResult(span: Span, result: ToolResult): void {
  if (!span.isRecording()) return;
  span.setAttributes({
    'agent_reach.tool.status': result.status,
    'agent_reach.tool.attempts': result.attempts,
    ...(result.no_result ? { 'agent_reach.tool.no_result': true } : {}),
    ...(result.truncated ? { 'agent_reach.tool.truncated': true } : {}),
  });
  if (result.error) failSpan(span, result.error.kind, result.error.message.slice(0, 500));
}

function record(metrics: Metrics, result: ToolResult): void {
  const kind = result.error?.kind ?? (result.no_result ? 'no_result' : 'none');
  metrics.toolCalls.inc({ tool: result.name, status: result.status, error_kind: kind });
  metrics.toolCallDuration.observe({ tool: result.name, status: result.status }, result.duration_ms / 1000);
  if (result.attempts > 0) metrics.toolCallAttempts.observe({ tool: result.name }, result.attempts);
  if (result.attempts > 1) metrics.toolRetries.inc({ tool: result.name }, result.attempts - 1);
}
