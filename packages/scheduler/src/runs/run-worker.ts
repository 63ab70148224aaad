import { setTimeout as sleep } from 'node:timers/promises';
import { DelayedError, UnrecoverableError, WaitingError, Worker, type Job } from 'bullmq';
import {
  DEFAULT_TENANT,
  isValidRunId,
  RUN_JOB_RETENTION_COUNT,
  runRetryDelayMs,
  upgradeRunJob,
  type RunJobData,
  type VariantOverrides,
} from '@agent-reach/protocol';
import {
  closeWithinGrace,
  constants,
  isCluster,
  runJobProblems,
  type Logger,
  type RedisClient,
} from '@agent-reach/shared';
import type { AgentRunner } from './agent-runner.js';
import type { RunEvent } from '../agent-loop/events.js';
import { anyDecided, decideOverdue, parkedUntil } from '../agent-loop/approvals.js';
import { CheckpointFailed } from '../agent-loop/run-agent.js';
import { createRunState, markFinished, type RunOutcome, type RunState } from '../agent-loop/run-state.js';
import { emitFinishedSpan } from './run-span.js';
import { notifyRunCallback, type CallbackSink } from './run-callbacks.js';
import { TenantQuotas } from './tenant-quotas.js';
import { childCheckAt } from './child-runs.js';
import type { LlmClient } from '../model/llm.js';
import { createCheckpointSaver } from './checkpoint-saver.js';
import type { RunCheckpointer, RunClaim, RunStore } from './run-store.js';
import type { SessionStore } from './sessions.js';

export interface RunWorkerOptions {
  /** Connection for BullMQ (it makes its own blocking duplicate). */
  connection: RedisClient;
  runner: AgentRunner;
  store: RunStore;
  sessions: SessionStore;
  logger: Logger;
  /**
   * The model client of a run: its job's model (else its variant's, else its agent's) and its variant's
   * (else its agent's) fallbacks; undefined: the runner's.
   */
  llmFor?: (
    model: string | undefined,
    agent: string,
    variant?: Pick<VariantOverrides, 'model' | 'fallback'>,
  ) => LlmClient | undefined;
  /** Runs in flight in this process. Default 100. */
  concurrency?: number;
  /** BullMQ lock duration, in ms (a short one makes takeover fast). Default 30 000. */
  lockDurationMs?: number;
  /** BullMQ stalled-check interval, in ms. Default 30 000. */
  stalledIntervalMs?: number;
  /**
   * How long a parked run waits for a decision before its pending calls count as rejected, in ms.
   * Default 7 days.
   */
  approvalTimeoutMs?: number;
  /** How long finished run jobs are kept, in seconds (the run's records are kept as long). Default 7 days. */
  retentionS?: number;
  /** Called for every event of every run this process works on. */
  onEvent?: (event: RunEvent, state: RunState) => void;
  /** Where runs that finish or wait for a person hand their event for their callback. Default: none. */
  callbacks?: CallbackSink;
}

/** The run worker's options with every default filled in. */
export type ResolvedRunWorkerOptions = RunWorkerOptions &
  Required<
    Pick<
      RunWorkerOptions,
      'concurrency' | 'lockDurationMs' | 'stalledIntervalMs' | 'approvalTimeoutMs' | 'retentionS'
    >
  >;

/** Every default of the run worker in one place: its body reads the resolved options only. */
export function resolveRunWorkerOptions(o: RunWorkerOptions): ResolvedRunWorkerOptions {
  return {
    ...o,
    concurrency: o.concurrency ?? constants.DEFAULT_SCHEDULER_CONCURRENCY,
    lockDurationMs: o.lockDurationMs ?? constants.DEFAULT_RUN_LOCK_DURATION_MS,
    stalledIntervalMs: o.stalledIntervalMs ?? constants.DEFAULT_RUN_STALLED_INTERVAL_MS,
    approvalTimeoutMs: o.approvalTimeoutMs ?? constants.DEFAULT_APPROVAL_TIMEOUT_MS,
    retentionS: o.retentionS ?? constants.DEFAULT_RUN_RETENTION_S,
  };
}

export interface RunWorker {
  readonly worker: Worker<RunJobData>;
  /**
   * Stops taking runs. Runs in flight stop at their next checkpoint and are handed back to the queue for
   * another scheduler; whatever still runs when the grace period ends is handed back as it is.
   */
  close(graceMs?: number): Promise<void>;
}

/** One run this process is working on. */
interface Active {
  job: Job<RunJobData>;
  token: string | undefined;
  /** Cancels the run (a person asked). */
  cancel: AbortController;
  /** Lets go of the run without ending it (lost, or handed back at shutdown). */
  release: AbortController;
}

/** What the worker's handlers share: its options, the runs in flight, whether it is shutting down. */
interface RunWorkerContext {
  options: ResolvedRunWorkerOptions;
  runner: AgentRunner;
  store: RunStore;
  sessions: SessionStore;
  logger: Logger;
  active: Map<string, Active>;
  draining: boolean;
  quotas: TenantQuotas;
}

/**
 * The scheduler's BullMQ worker on `agent-runs`. A job is a run: the worker claims it (bumping the run's
 * ownership epoch, so a scheduler that lost it can no longer write), loads its last checkpoint (or starts
 * it), runs the loop with a checkpoint after every step, and ends the job with the outcome. A run that
 * waits for a person is parked as a delayed job — no slot, no lock held — until a decision promotes it or
 * the approval timeout wakes it. A scheduler killed mid-run leaves a stalled job that another scheduler
 * picks up and resumes from the checkpoint. A checkpoint that cannot be written (Redis away or out of
 * memory) fails the attempt: BullMQ retries the run with backoff from its last good checkpoint, and the
 * last attempt records the run as failed.
 */
export function createRunWorker(runWorkerOptions: RunWorkerOptions): RunWorker {
  const options = resolveRunWorkerOptions(runWorkerOptions);
  const { runner, store, sessions, logger } = options;
  const ctx: RunWorkerContext = {
    options,
    runner,
    store,
    sessions,
    logger,
    active: new Map(),
    draining: false,
    // Every run counts in its tenant's runs in flight while this worker has it, however it was started.
    quotas: new TenantQuotas(store.connection, runner.keys),
  };
  const subscriber = subscribeToCancels(ctx);
  const { retentionS, lockDurationMs } = options;
  const worker = new Worker<RunJobData>(runner.keys.runsQueue, (job, token) => processRun(ctx, job, token), {
    connection: options.connection,
    prefix: runner.keys.queuePrefix(runner.keys.runsQueue),
    concurrency: options.concurrency,
    lockDuration: lockDurationMs,
    stalledInterval: options.stalledIntervalMs,
    maxStalledCount: constants.RUN_MAX_STALLED_COUNT,
    runRetryDelay: constants.WORKER_RETRY_DELAY_MS,
    // Run jobs' own backoff (`RUN_JOB_BACKOFF_TYPE`): capped, so a run is back soon after Redis is.
    settings: { backoffStrategy: (attemptsMade: number) => runRetryDelayMs(attemptsMade) },
    // Run jobs are kept exactly as long as the run's records, whoever added them.
    removeOnComplete: { age: retentionS, count: RUN_JOB_RETENTION_COUNT },
    removeOnFail: { age: retentionS },
  });
  worker.on('error', (err) => logger.error({ err: { message: err.message } }, 'run worker error'));
  // A lock this process could not renew may already belong to another scheduler: let go of the run —
  // unless nobody holds it and the job is still taken (a failover lost the lock, or a renewal that failed
  // while Redis was away let it lapse): then it is taken back at once rather than left to the stalled-job
  // check, which would hand the run on only one to two `stalledInterval`s later. No other scheduler can
  // have the run then (its job never left `active`), and the run's epoch fences its writes regardless.
  worker.on('lockRenewalFailed', (jobIds: string[]) => onLockRenewalFailed(ctx, worker, jobIds));
  worker.on('failed', (job, err) => onRunFailed(ctx, job, err));

  return {
    worker,
    async close(graceMs = constants.DEFAULT_SHUTDOWN_GRACE_MS) {
      await closeRunWorker(ctx, worker, graceMs);
      await subscriber.quit().catch(() => undefined);
    },
  };
}

/** A connection of its own on the cancel channel: a cancel aborts the run if this process has it. */
function subscribeToCancels(ctx: RunWorkerContext): RedisClient {
  const { logger } = ctx;
  const subscriber = ctx.options.connection.duplicate();
  subscriber.on('error', (err) => logger.warn({ err: { message: err.message } }, 'cancel subscriber error'));
  void subscriber
    .subscribe(ctx.runner.keys.cancelChannel)
    .catch((err: unknown) => logger.error({ err }, 'cannot subscribe to cancellations'));
  subscriber.on('message', (_channel: string, runId: string) => ctx.active.get(runId)?.cancel.abort());
  return subscriber;
}

/** The worker's `lockRenewalFailed` listener: each run's lock taken back when free, else the run let go. */
function onLockRenewalFailed(ctx: RunWorkerContext, worker: Worker<RunJobData>, jobIds: string[]): void {
  const { connection, lockDurationMs } = ctx.options;
  for (const id of jobIds) {
    const run = ctx.active.get(id);
    if (!run) continue;
    retakeLock(connection, worker, id, run.token, lockDurationMs).then(
      (kept) => {
        if (kept) ctx.logger.warn({ runId: id }, 'run lock had lapsed with its job still taken; taken back');
        else run.release.abort();
      },
      () => run.release.abort(),
    );
  }
}

/** Stops taking runs; what still runs when the grace period ends is handed back to the queue. */
async function closeRunWorker(
  ctx: RunWorkerContext,
  worker: Worker<RunJobData>,
  graceMs: number,
): Promise<void> {
  ctx.draining = true;
  await closeWithinGrace({
    graceful: worker.close().then(() => true),
    graceMs,
    // Runs still waiting on a model or a tool: hand their jobs back now (their loops write nothing
    // more), rather than let their locks lapse. BullMQ's `close(true)` after a pending `close()` only
    // returns the pending one, so the pending close is not awaited.
    handBack: async () => {
      ctx.logger.warn({ graceMs, runs: ctx.active.size }, 'grace period over; handing runs back');
      await Promise.all(
        [...ctx.active.values()].map(async (run) => {
          run.release.abort();
          await run.job.moveToWait(run.token).catch(() => undefined);
        }),
      );
    },
    settleMs: () => constants.CLOSE_SETTLE_MS,
  });
}

/** Sets a job's lock again when nobody holds it and the job is still in `active`; 1 when it did. */
const RETAKE_LOCK = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
if not redis.call('LPOS', KEYS[2], ARGV[2]) then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[3])
redis.call('SREM', KEYS[3], ARGV[2])
return 1`;

async function retakeLock(
  connection: RedisClient,
  worker: Worker<RunJobData>,
  jobId: string,
  token: string | undefined,
  lockDurationMs: number,
): Promise<boolean> {
  if (!token) return false;
  const keys = [`${worker.toKey(jobId)}:lock`, worker.toKey('active'), worker.toKey('stalled')];
  return (await connection.eval(RETAKE_LOCK, keys.length, ...keys, token, jobId, lockDurationMs)) === 1;
}

/** A run that ended leaves its tenant's runs in flight, its tokens counted once. */
async function ended(ctx: RunWorkerContext, state: RunState, data?: RunJobData): Promise<void> {
  await ctx.quotas
    .release(state.tenant, state.runId, state.usage.total_tokens)
    .catch((err: unknown) => ctx.logger.warn({ runId: state.runId, err }, 'tenant quota release failed'));
  await notifyRunCallback(ctx.options.callbacks, state, 'finished', data);
  // A child run (an agent called as a tool) answers its parent's call and wakes it. A write Redis cannot
  // take fails the attempt: the job is tried again, and its next attempt answers again (first result wins).
  await ctx.runner.children.answerParent(state);
}

/** Hands a job back to the queue untouched (no attempt used), for another scheduler. */
async function handBack(job: Job<RunJobData>, token: string | undefined): Promise<WaitingError> {
  // Already handed back when the grace period ended: then the lock is gone and this move fails.
  await job.moveToWait(token).catch(() => undefined);
  return new WaitingError();
}

/** The worker's processor: one attempt at a run, from its claim to its outcome, parking or hand-back. */
async function processRun(
  ctx: RunWorkerContext,
  job: Job<RunJobData>,
  token?: string,
): Promise<{ status: string; reason: string }> {
  if (ctx.draining) throw await handBack(job, token);
  // Jobs of the release before snake_case (version 1) are read with today's names.
  const data = upgradeRunJob(job.data) as RunJobData;
  // The job id is the run id; data naming another run is refused, data naming none (a job of an unknown
  // version, or missing the field) is ended below as a failed run that lists its problems.
  const runId = String(job.id);
  const log = ctx.logger.child({ runId });
  if (!isValidRunId(runId) || (data.run_id !== undefined && data.run_id !== runId)) {
    throw new UnrecoverableError(
      `invalid agent-runs job ${job.id}: its id must be the run id and match the run id pattern`,
    );
  }
  const claim = await ctx.store.claim(runId);
  if (claim.problems.length > 0) log.warn({ problems: claim.problems }, 'run record has problems');
  let state = claim.state;
  if (!state) {
    // A job added by hand (any language, any client) may be wrong: end it as a failed run that says why,
    // so whoever waits on it learns the problem instead of finding nothing.
    const problems = runJobProblems(data);
    if (problems.length === 0 && !ctx.runner.hasAgent(data.agent))
      problems.push(`agent "${data.agent}" is not declared`);
    // A job added directly (not through the API) may carry a variant no door checked.
    if (problems.length === 0 && data.variant)
      problems.push(...ctx.runner.variantProblems(data.agent, data.variant).map((p) => `variant: ${p}`));
    if (problems.length > 0) return recordRejected(ctx, runId, data, problems, claim.writer);
    state = await newRunState(ctx, runId, data);
    // Listed from now on, when no door listed it at its acceptance (a job added to the queue directly).
    await ctx.store.listTaken({ ...data, run_id: runId });
  }
  if (state.outcome) {
    // Ended by an earlier attempt that died before its tenant's count was updated: update it now.
    await ended(ctx, state, data);
    return { status: state.outcome.status, reason: state.outcome.reason };
  }
  await ctx.quotas.track(state.tenant, state.runId);
  if (state.status === 'awaiting_approval') decideOverdue(state, ctx.options.approvalTimeoutMs);
  return driveRun(ctx, { job, token, data, state, claim, log });
}

/** A run's first state, from its job and the memory of its session. */
async function newRunState(ctx: RunWorkerContext, runId: string, data: RunJobData): Promise<RunState> {
  const memory = data.session_id ? await ctx.sessions.load(data.session_id, data.tenant) : undefined;
  const sessionGrants = data.session_id ? await ctx.sessions.grants(data.session_id, data.tenant) : [];
  const grants = [...new Set([...sessionGrants, ...(data.grants ?? [])])];
  return ctx.runner.newState({
    agent: data.agent,
    input: data.input,
    runId,
    ...(data.trace_id ? { traceId: data.trace_id } : {}),
    ...(data.trace_parent ? { traceParent: data.trace_parent } : {}),
    ...(data.session_id ? { sessionId: data.session_id } : {}),
    tenant: data.tenant ?? DEFAULT_TENANT,
    ...(data.metadata ? { metadata: data.metadata } : {}),
    ...(data.key ? { key: data.key } : {}),
    ...(grants.length > 0 ? { grants } : {}),
    ...(typeof data.created_at === 'number' && Number.isFinite(data.created_at)
      ? { createdAt: data.created_at }
      : {}),
    ...(data.output_schema ? { outputSchema: data.output_schema } : {}),
    // A session's run goes on with the agent its last run handed off to (a bare job may name any declared).
    ...(data.in_charge && ctx.runner.hasAgent(data.in_charge) ? { inCharge: data.in_charge } : {}),
    ...(data.variant ? { variant: data.variant } : {}),
    ...(data.parent ? { parent: data.parent } : {}),
    ...(memory
      ? {
          history: memory.messages,
          steps: memory.steps,
          ...(memory.summary ? { summary: memory.summary } : {}),
        }
      : {}),
  });
}

/** Runs the loop on a claimed run, checkpointing through the claim, and ends the attempt as the loop did. */
async function driveRun(
  ctx: RunWorkerContext,
  attempt: {
    job: Job<RunJobData>;
    token: string | undefined;
    data: RunJobData;
    state: RunState;
    claim: RunClaim;
    log: Logger;
  },
): Promise<{ status: string; reason: string }> {
  const { job, token, data, state, claim, log } = attempt;
  const { options, runner, store } = ctx;
  const run: Active = { job, token, cancel: new AbortController(), release: new AbortController() };
  if (claim.cancelRequested) run.cancel.abort();
  const saver = createCheckpointSaver(store, claim.writer, {
    onCancelRequested: () => run.cancel.abort(),
    // Shutting down: stop here, with this step durable, and let another scheduler go on.
    afterSave: () => {
      if (ctx.draining) run.release.abort();
    },
  });
  ctx.active.set(state.runId, run);
  try {
    const result = await runner.resume(state, {
      signal: run.cancel.signal,
      release: run.release.signal,
      // One connection for checkpoints and tool calls: a checkpoint issued first lands first. Not on a
      // cluster, where the run's keys and the tool queue are on different nodes.
      orderedCheckpoints: store.connection === runner.connection && !isCluster(store.connection),
      ...withLlm(options.llmFor?.(data.model, state.agent, state.variant?.overrides)),
      // A handoff target asks the job's model too (as the SDK's run-wide model), else its own.
      llmFor: (agent: string) => options.llmFor?.(data.model, agent),
      // A guardrail agent asks what a run of it would: its own model, not the job's.
      ownLlmFor: (agent: string) => options.llmFor?.(undefined, agent),
      ...(options.onEvent ? { onEvent: options.onEvent } : {}),
      checkpoint: saver.save,
    });
    if (result === 'released') {
      if (ctx.draining) throw await handBack(job, token);
      // The run is someone else's now: this job's lock is gone, so there is nothing to complete.
      log.warn('run lost to another scheduler; stopped without writing');
      throw new DelayedError();
    }
    if (result === 'parked') {
      const wakeAt = childCheckAt(
        state,
        parkedUntil(state, options.approvalTimeoutMs),
        options.stalledIntervalMs,
      );
      log.info({ wakeAt }, 'run parked until a person decides');
      if (state.status === 'awaiting_approval')
        await notifyRunCallback(options.callbacks, state, 'awaiting_approval', data);
      await job.moveToDelayed(wakeAt, token);
      // A decision (or a cancel) that landed between the checkpoint and the move found no delayed job
      // to promote: look once more, and wake the run now if one did.
      const again = await saver.load();
      const woken =
        anyDecided(again.state) || again.cancelRequested || (await runner.children.anyAnswered(state));
      if (woken) await job.promote().catch(() => undefined);
      throw new DelayedError();
    }
    if (state.sessionId) await ctx.sessions.saveFrom(state);
    await ended(ctx, state, data);
    return { status: result.status, reason: result.reason };
  } catch (err) {
    if (!(err instanceof CheckpointFailed)) throw err;
    const attempts = job.opts.attempts ?? 1;
    log.warn(
      { err: err.cause, attempt: job.attemptsMade + 1, attempts },
      'checkpoint failed; the run resumes from its last good checkpoint',
    );
    // Out of attempts, the `failed` listener records the run as failed.
    throw err;
  } finally {
    ctx.active.delete(state.runId);
  }
}

/** A run that could not start, recorded as failed with the problems of its job. */
async function recordRejected(
  ctx: RunWorkerContext,
  runId: string,
  data: RunJobData,
  problems: string[],
  writer: RunCheckpointer,
): Promise<{ status: string; reason: string }> {
  const state = createRunState({
    runId,
    // The job's trace, when it names one, so the refusal is found where its caller looks.
    ...(typeof data.trace_id === 'string' && data.trace_id !== '' ? { traceId: data.trace_id } : {}),
    agent: String(data.agent ?? ''),
    input: typeof data.input === 'string' ? data.input : '',
    deadlineMs: 0,
  });
  const report = `the run could not start: ${problems.join('; ')}`;
  const outcome: RunOutcome = {
    status: 'failed',
    reason: 'invalid_job',
    report,
    usage: state.usage,
    iterations: 0,
    steps: [],
  };
  markFinished(state, outcome);
  await writer.prepare(state, [{ type: 'run_finished', at: Date.now(), outcome }])();
  emitFinishedSpan(state, outcome);
  await ended(ctx, state, data);
  ctx.logger.warn({ runId, problems }, 'run job refused');
  return { status: 'failed', reason: 'invalid_job' };
}

/**
 * A run whose job is out of attempts (checkpoints that kept failing, a scheduler that kept dying):
 * record it as failed from its last good checkpoint, so no record stays `running` with no one working
 * on it. Retried a few times (the outage behind it may just be ending).
 */
async function recordAbandoned(
  ctx: RunWorkerContext,
  runId: string,
  reason: string,
  report: string,
): Promise<void> {
  for (let attempt = 0; attempt < constants.RUN_ABANDON_WRITE_ATTEMPTS; attempt += 1) {
    try {
      const claim = await ctx.store.claim(runId);
      const state = claim.state;
      if (!state || state.outcome) return;
      const outcome: RunOutcome = {
        status: 'failed',
        reason,
        report,
        usage: state.usage,
        iterations: state.iterations,
        steps: state.steps,
      };
      markFinished(state, outcome);
      await claim.writer.prepare(state, [{ type: 'run_finished', at: Date.now(), outcome }])();
      emitFinishedSpan(state, outcome);
      await ended(ctx, state);
      return;
    } catch (e) {
      ctx.logger.warn({ runId, err: e }, 'recording the abandoned run failed; retrying');
      await sleep(constants.RUN_ABANDON_WRITE_BACKOFF_MS * (attempt + 1));
    }
  }
}

/** The worker's `failed` listener: logs the attempt, and records a run out of attempts as failed. */
function onRunFailed(ctx: RunWorkerContext, job: Job<RunJobData> | undefined, err: Error): void {
  const { logger } = ctx;
  if (err instanceof DelayedError || err.name === 'DelayedError' || err.name === 'WaitingError') return;
  const retried =
    !!job &&
    (job.opts.attempts ?? 1) > job.attemptsMade &&
    err.name !== 'UnrecoverableError' &&
    !/stalled/i.test(err.message);
  // An attempt BullMQ retries after its backoff (Redis trouble, mostly) is not a failed run.
  if (retried)
    logger.warn(
      {
        err: { message: err.message },
        runId: job.id,
        attempt: job.attemptsMade,
        attempts: job.opts.attempts,
      },
      'run attempt failed; retried after its backoff',
    );
  else logger.error({ err: { message: err.message }, runId: job?.id }, 'run job failed');
  // Out of attempts or stalled too often: the record must not stay `running`.
  const runId = job?.id;
  if (
    !runId ||
    !isValidRunId(runId) ||
    (upgradeRunJob(job.data) as Partial<RunJobData> | undefined)?.run_id !== runId
  )
    return;
  if (retried) return;
  void (err instanceof CheckpointFailed
    ? recordAbandoned(
        ctx,
        runId,
        'checkpoint_failed',
        `the run's record could not be written: ${errorText(err.cause)}`,
      )
    : recordAbandoned(ctx, runId, 'abandoned', `the run could not be completed: ${err.message}`));
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

const withLlm = (llm: LlmClient | undefined): { llm?: LlmClient } => (llm ? { llm } : {});
