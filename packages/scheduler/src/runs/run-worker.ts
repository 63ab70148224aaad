import { DelayedError, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { constants, isValidRunId, runJobProblems, type Logger } from '@agent-reach/shared';
import type { AgentRunner } from '../agent-runner.js';
import type { RunEvent } from '../agent-loop/events.js';
import { createRunState, type RunState } from '../agent-loop/run-state.js';
import type { LlmClient } from '../llm.js';
import type { RunJobData } from './run-jobs.js';
import type { RunStore } from './run-store.js';
import type { SessionStore } from './sessions.js';

export interface RunWorkerOptions {
  /** Connection for BullMQ (it makes its own blocking duplicate). */
  connection: Redis;
  runner: AgentRunner;
  store: RunStore;
  sessions: SessionStore;
  logger: Logger;
  /** The model client for a job that names a model; default: the runner's. */
  llmFor?: (model: string) => LlmClient;
  /** Runs in flight in this process. Default 100. */
  concurrency?: number;
  /** BullMQ lock duration and stalled-check interval, in ms (short ones make takeover fast). */
  lockDurationMs?: number;
  stalledIntervalMs?: number;
  /** How long a parked run waits for a decision before its pending calls count as rejected, in ms. */
  approvalTimeoutMs?: number;
  /** Called for every event of every run this process works on. */
  onEvent?: (event: RunEvent, state: RunState) => void;
}

export interface RunWorker {
  readonly worker: Worker<RunJobData>;
  /** Stops taking runs; lets runs in flight reach their next checkpoint within the grace period. */
  close(graceMs?: number): Promise<void>;
}

/**
 * The scheduler's BullMQ worker on `agent-runs`. A job is a run: the worker loads its last checkpoint (or
 * starts it), runs the loop with a checkpoint after every step, and ends the job with the outcome. A run
 * that waits for a person is parked as a delayed job — no slot, no lock held — until a decision promotes
 * it or the approval timeout wakes it. A scheduler killed mid-run leaves a stalled job that another
 * scheduler picks up and resumes from the checkpoint.
 */
export function createRunWorker(options: RunWorkerOptions): RunWorker {
  const { runner, store, sessions, logger } = options;
  const active = new Map<string, AbortController>();
  const owned = new Map<string, AbortController>();
  const subscriber = options.connection.duplicate();
  const cancelChannel = runner.keys.cancelChannel;
  void subscriber
    .subscribe(cancelChannel)
    .catch((err: unknown) => logger.error({ err }, 'cannot subscribe to cancellations'));
  subscriber.on('message', (_channel: string, runId: string) => active.get(runId)?.abort());

  const processRun = async (
    job: Job<RunJobData>,
    token?: string,
  ): Promise<{ status: string; reason: string }> => {
    const data = job.data;
    const log = logger.child({ runId: data.runId });
    const loaded = await store.load(data.runId);
    let state = loaded.state;
    if (!state) {
      // A job added by hand (any language, any client) may be wrong: end it as a failed run that says why,
      // so whoever waits on it learns the problem instead of finding nothing.
      const problems = runJobProblems(data);
      if (problems.length === 0 && !runner.hasAgent(data.agent))
        problems.push(`agent "${data.agent}" is not declared`);
      if (problems.length > 0) {
        if (job.id !== data.runId || !isValidRunId(String(job.id))) {
          throw new Error(`invalid agent-runs job ${job.id}: ${problems.join('; ')}`);
        }
        return recordRejected(data, problems);
      }
      const memory = data.sessionId ? await sessions.load(data.sessionId) : undefined;
      state = runner.newState({
        agent: data.agent,
        input: data.input,
        runId: data.runId,
        ...(data.traceId ? { traceId: data.traceId } : {}),
        ...(data.sessionId ? { sessionId: data.sessionId } : {}),
        ...(data.metadata ? { metadata: data.metadata } : {}),
        ...(memory
          ? {
              history: memory.messages,
              steps: memory.steps,
              ...(memory.summary ? { summary: memory.summary } : {}),
            }
          : {}),
      });
    }
    if (state.outcome) return { status: state.outcome.status, reason: state.outcome.reason };
    if (state.status === 'awaiting_approval') decideOverdue(state, options.approvalTimeoutMs);

    const controller = new AbortController();
    const release = new AbortController();
    if (loaded.cancelRequested) controller.abort();
    active.set(state.runId, controller);
    owned.set(state.runId, release);
    try {
      const result = await runner.resume(state, {
        signal: controller.signal,
        release: release.signal,
        // One connection for checkpoints and tool calls: a checkpoint issued first lands first.
        orderedCheckpoints: store.connection === runner.connection,
        ...(data.model && options.llmFor ? { llm: options.llmFor(data.model) } : {}),
        ...(options.onEvent ? { onEvent: options.onEvent } : {}),
        checkpoint: async (s, events) => {
          const { cancelRequested } = await store.checkpoint(s, events);
          if (cancelRequested) controller.abort();
        },
      });
      if (result === 'released') {
        store.release(state.runId);
        return { status: 'released', reason: 'another scheduler owns the run now' };
      }
      if (result === 'parked') {
        store.release(state.runId);
        const wakeAt = Date.now() + (options.approvalTimeoutMs ?? constants.DEFAULT_APPROVAL_TIMEOUT_MS);
        log.info({ wakeAt }, 'run parked until a person decides');
        await job.moveToDelayed(wakeAt, token);
        // A decision (or a cancel) that landed between the checkpoint and the move found no delayed job
        // to promote: look once more, and wake the run now if one did.
        const again = await store.load(state.runId);
        store.release(state.runId);
        const decided = Object.values(again.state?.approvals ?? {}).some((a) => a.decision);
        if (decided || again.cancelRequested) await job.promote().catch(() => undefined);
        throw new DelayedError();
      }
      if (state.sessionId) await sessions.saveFrom(state);
      return { status: result.status, reason: result.reason };
    } finally {
      active.delete(state.runId);
      owned.delete(state.runId);
    }
  };

  /** A run that could not start, recorded as failed with the problems of its job. */
  const recordRejected = async (data: RunJobData, problems: string[]) => {
    const state = createRunState({
      runId: data.runId,
      agent: String(data.agent ?? ''),
      input: typeof data.input === 'string' ? data.input : '',
      deadlineMs: 0,
    });
    const report = `the run could not start: ${problems.join('; ')}`;
    state.status = 'failed';
    state.outcome = {
      status: 'failed',
      reason: 'invalid_job',
      report,
      usage: state.usage,
      iterations: 0,
      steps: [],
    };
    await store.checkpoint(state, [{ type: 'run_finished', at: Date.now(), outcome: state.outcome }]);
    logger.warn({ runId: data.runId, problems }, 'run job refused');
    return { status: 'failed', reason: 'invalid_job' };
  };

  const worker = new Worker<RunJobData>(runner.keys.runsQueue, processRun, {
    connection: options.connection,
    prefix: runner.keys.prefix,
    concurrency: options.concurrency ?? constants.DEFAULT_SCHEDULER_CONCURRENCY,
    lockDuration: options.lockDurationMs ?? constants.DEFAULT_RUN_LOCK_DURATION_MS,
    stalledInterval: options.stalledIntervalMs ?? constants.DEFAULT_RUN_STALLED_INTERVAL_MS,
    maxStalledCount: constants.RUN_MAX_STALLED_COUNT,
  });
  worker.on('error', (err) => logger.error({ err }, 'run worker error'));
  // A lock this process could not renew may already belong to another scheduler: let go of the run.
  worker.on('lockRenewalFailed', (jobIds: string[]) => {
    for (const id of jobIds) owned.get(id)?.abort();
  });
  worker.on('failed', (job, err) => {
    if (err instanceof DelayedError || err.name === 'DelayedError') return;
    logger.error({ err, runId: job?.id }, 'run job failed');
  });

  return {
    worker,
    async close(graceMs = constants.DEFAULT_SHUTDOWN_GRACE_MS) {
      const graceful = worker.close();
      let timer: NodeJS.Timeout | undefined;
      const expired = new Promise<'expired'>((resolve) => {
        timer = setTimeout(() => resolve('expired'), graceMs);
      });
      if ((await Promise.race([graceful.then(() => 'done' as const), expired])) === 'expired') {
        // Runs still going keep their jobs active; their locks lapse and another scheduler resumes them.
        await worker.close(true);
      }
      clearTimeout(timer);
      await subscriber.quit().catch(() => undefined);
    },
  };
}

/** Pending approvals past the timeout count as rejected, so a forgotten run still ends. */
function decideOverdue(state: RunState, timeoutMs = constants.DEFAULT_APPROVAL_TIMEOUT_MS): void {
  const now = Date.now();
  for (const a of Object.values(state.approvals)) {
    if (!a.decision && now - a.requestedAt >= timeoutMs) {
      Object.assign(a, {
        decision: 'rejected',
        by: 'agent-reach',
        reason: 'no decision before the approval timeout',
        decidedAt: now,
      });
    }
  }
}
