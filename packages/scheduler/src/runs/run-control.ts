import type { Queue } from 'bullmq';
import type { ArchiveStore } from '@agent-reach/archive';
import {
  AgentReachError,
  isFinalStatus,
  isValidRunId,
  RUN_ID_PATTERN,
  runJob,
  runJobOptions,
  type Keys,
  type RunJobData,
  type RunSearch,
  type RunVariant,
  type RunSearchPage,
  newRunId,
} from '@agent-reach/protocol';
import { decisionEvent, pendingRequest } from '../agent-loop/approvals.js';
import type { RunOutcome, RunState } from '../agent-loop/run-state.js';
import type { RedisClient } from '@agent-reach/shared';
import { createRunQueue } from './run-jobs.js';
import { searchAcross } from './archive-search.js';
import { searchRuns } from './run-search.js';
import { RunStore, type RunListFilter, type RunSummary, type StoredEvent } from './run-store.js';

export interface StartRunRequest {
  agent: string;
  input: string;
  runId?: string;
  sessionId?: string;
  model?: string;
  traceId?: string;
  metadata?: Record<string, string>;
  /** Epoch ms the run counts as created at. Default: now. */
  createdAt?: number;
  /** The tenant the run belongs to. Default `default`. */
  tenant?: string;
  /** JSON Schema the final answer must match, instead of the agent's `output_schema`. */
  outputSchema?: Record<string, unknown>;
  /** Overrides of the agent's configuration for this run only (checked when a scheduler takes the run). */
  variant?: RunVariant;
}

export interface DecisionRequest {
  runId: string;
  toolCallId: string;
  decision: 'approved' | 'rejected';
  by?: string;
  reason?: string;
}

/**
 * The library API around runs: start one (a job on `agent-runs`), read it, list runs, read its events,
 * cancel it, and decide its pending approvals. Any process sharing the Redis can use it; the schedulers
 * do the work.
 */
export class RunControl {
  readonly store: RunStore;
  readonly queue: Queue<RunJobData>;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    store?: RunStore,
    /** The run archive's store (`DATABASE_URL`): listings page across Redis and the archive. */
    readonly archive?: ArchiveStore,
  ) {
    this.store = store ?? new RunStore(redis, keys);
    this.queue = createRunQueue(redis, keys);
  }

  /** Enqueues a run and returns its id. Adding the same run id twice starts it once. */
  async start(req: StartRunRequest): Promise<string> {
    const runId = req.runId ?? newRunId();
    if (!isValidRunId(runId)) {
      throw new AgentReachError(
        'RUN_INVALID',
        `runId must match ${RUN_ID_PATTERN} and not be a BullMQ key name`,
      );
    }
    if (typeof req.agent !== 'string' || !req.agent)
      throw new AgentReachError('RUN_INVALID', 'agent is required');
    if (typeof req.input !== 'string' || !req.input.trim())
      throw new AgentReachError('RUN_INVALID', 'input must be a non-empty string');
    await this.enqueue(
      runJob({
        run_id: runId,
        agent: req.agent,
        input: req.input,
        session_id: req.sessionId,
        model: req.model,
        trace_id: req.traceId,
        metadata: req.metadata,
        created_at: req.createdAt ?? Date.now(),
        tenant: req.tenant,
        output_schema: req.outputSchema,
        variant: req.variant,
      }),
    );
    return runId;
  }

  /**
   * Adds a run's job as it is (built with `runJob`); adding the same run id twice starts it once. The run
   * is listed `queued` at once (`RunStore.accept`): readable, listed and cancellable before a scheduler takes it.
   */
  async enqueue(job: RunJobData): Promise<void> {
    await this.queue.add('run', job, runJobOptions(job.run_id));
    await this.store.accept(job);
  }

  /** The run's state and listing fields, or undefined when unknown (or not started yet). */
  async get(runId: string): Promise<{ summary: RunSummary; state: RunState | undefined } | undefined> {
    const [summary, loaded] = await Promise.all([this.store.summary(runId), this.store.load(runId)]);
    if (!summary && !loaded.state) return undefined;
    const state = loaded.state;
    return {
      summary: summary ?? {
        runId,
        traceId: state?.traceId ?? '',
        agent: state?.agent ?? '',
        status: state?.status ?? 'queued',
        createdAt: state?.createdAt ?? 0,
        updatedAt: 0,
        iterations: state?.iterations ?? 0,
      },
      state,
    };
  }

  list(filter?: RunListFilter): Promise<RunSummary[]> {
    return this.store.list(filter);
  }

  /** Runs newest first found by metadata, agent, status, time, trace id, tool or error kind, a page at a time. */
  search(q: RunSearch): Promise<RunSearchPage<RunSummary>> {
    const archive = this.archive;
    return archive
      ? searchAcross(this.store.connection, this.keys, archive, q)
      : searchRuns(this.store.connection, this.keys, q);
  }

  events(runId: string, after?: string): Promise<StoredEvent[]> {
    return this.store.events(runId, after);
  }

  /** Waits for a run to end (polling its listing), up to `timeoutMs`. */
  async wait(runId: string, timeoutMs = 60_000, pollMs = 50): Promise<RunOutcome> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const summary = await this.store.summary(runId);
      if (summary && isFinalStatus(summary.status)) {
        const { state } = await this.store.load(runId);
        if (state?.outcome) return state.outcome;
      }
      if (Date.now() > end)
        throw new AgentReachError('RUN_WAIT_TIMEOUT', `run ${runId} did not finish within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, pollMs));
    }
  }

  /** Cancels a queued, running or parked run; a cancelled run dispatches nothing more. */
  async cancel(runId: string): Promise<void> {
    await this.store.requestCancel(runId);
    await this.#wake(runId);
  }

  /**
   * Records a person's decision on a call the run is waiting for, and wakes the run on any scheduler.
   * Refuses a decision for a run that is not waiting for that call, or a second decision.
   */
  async decide(req: DecisionRequest): Promise<void> {
    const { state } = await this.store.load(req.runId);
    if (!state) throw new AgentReachError('RUN_NOT_FOUND', `unknown run ${req.runId}`);
    const pending = pendingRequest(state, req.toolCallId);
    if ('refused' in pending) {
      const code = pending.refused === 'no_request' ? 'RUN_NOT_FOUND' : 'RUN_INVALID_STATE';
      throw new AgentReachError(code, pending.message);
    }
    const first = await this.store.decide(req.runId, req.toolCallId, {
      decision: req.decision,
      ...(req.by ? { by: req.by } : {}),
      ...(req.reason ? { reason: req.reason } : {}),
      // The executor accepts the call as granted on this flag of the recorded approval (verify-job.ts).
      ...(pending.request.grant ? { grant: true } : {}),
    });
    if (!first) throw new AgentReachError('RUN_INVALID_STATE', `call ${req.toolCallId} was already decided`);
    await this.store.appendEvents(req.runId, [decisionEvent(pending.request, req)]);
    await this.#wake(req.runId);
  }

  async close(): Promise<void> {
    await this.queue.close();
  }

  /** A parked run is a delayed job: promote it so that any scheduler resumes it now. */
  async #wake(runId: string): Promise<void> {
    const job = await this.queue.getJob(runId);
    if (job && (await job.isDelayed())) await job.promote().catch(() => undefined);
  }
}
