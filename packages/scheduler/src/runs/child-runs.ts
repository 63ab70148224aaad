import { createHash } from 'node:crypto';
import type { Queue } from 'bullmq';
import {
  DEFAULT_TENANT,
  errorResult,
  runJob,
  runJobOptions,
  type Keys,
  type RunJobData,
  type ToolErrorInfo,
  type ToolResult,
} from '@agent-reach/protocol';
import {
  constants,
  redisScripts,
  type AgentSpec,
  type AgentsFile,
  type Logger,
  type RedisClient,
} from '@agent-reach/shared';
import type { ChildRunRequest, ChildRuns } from '../agent-loop/agent-tools.js';
import type { RunState } from '../agent-loop/run-state.js';
import { createRunQueue } from './run-jobs.js';
import { RunStore } from './run-store.js';
import { runLiveness, TenantQuotas, type TenantQuota } from './tenant-quotas.js';

/**
 * The id of the child run a call of an agent tool starts: derived from the parent run and the call, so
 * that a parent resumed after a crash asks for the same child and BullMQ (the job id) and the run's
 * listing (accepted once) keep one run.
 */
export function childRunId(parentRunId: string, callId: string): string {
  return `run_${createHash('sha256').update(`${parentRunId}\n${callId}`).digest('hex').slice(0, 32)}`;
}

/**
 * Child runs on the fleet (`ChildRuns` for the loop): a child is an ordinary run of the called agent,
 * on the run queue, listed from its start, with its parent link in its job. Its end records the parent's
 * call result as an executor records a tool's (first result wins, only for a call the parent's ledger
 * holds) and wakes the parked parent, on whichever scheduler ran it.
 */
export class ChildRunControl implements ChildRuns {
  readonly #queue: Queue<RunJobData>;
  readonly #store: RunStore;
  readonly #quotas: TenantQuotas;

  constructor(
    private readonly connection: RedisClient,
    private readonly keys: Keys,
    private readonly agents: AgentsFile,
    private readonly logger: Logger,
    tenantQuotas: ReadonlyMap<string, TenantQuota> = new Map(),
  ) {
    this.#queue = createRunQueue(connection, keys);
    this.#queue.on('error', (err) => logger.warn({ err }, 'child run queue error'));
    this.#store = new RunStore(connection, keys);
    this.#quotas = new TenantQuotas(connection, keys, tenantQuotas);
  }

  /**
   * Admits a child run into its tenant's runs in flight (docs/agent-tools.md#tenants): a child counts
   * like any run. Under the tenant's limits it is admitted; at its limit of runs in flight, a caller with
   * no other child still running gets this one all the same (counted over the limit, so a caller never
   * waits on its own tenant's quota and the excess is bounded: one child a level per run); otherwise —
   * and when the tenant used its tokens of the day — the call is refused with an error the model reads.
   */
  async admit(req: ChildRunRequest, othersRunning: number): Promise<ToolErrorInfo | undefined> {
    const tenant = req.tenant ?? DEFAULT_TENANT;
    const runId = childRunId(req.parentRunId, req.callId);
    const liveness = runLiveness(
      (id) => this.#store.summary(id),
      (id) => this.#queue.getJob(id),
    );
    const got = await this.#quotas.admit(tenant, runId, liveness);
    if (got.verdict === 'ok') return undefined;
    const q = this.#quotas.quota(tenant);
    if (got.verdict === 'runs' && othersRunning === 0) {
      await this.#quotas.track(tenant, runId);
      return undefined;
    }
    this.logger.info(
      { tenant, runId, parent: req.parentRunId, quota: got.verdict },
      'child run refused by tenant quota',
    );
    return {
      kind: 'unavailable',
      type: 'quota_exceeded',
      message:
        got.verdict === 'runs'
          ? `"${req.tool}" was not called: tenant "${tenant}" has ${got.inFlight} runs in flight, its limit is ` +
            `${q.maxRunsInFlight}, and ${othersRunning} other agent call(s) of this run are still running; ` +
            'call it again once they have answered'
          : `"${req.tool}" was not called: tenant "${tenant}" used ${got.tokensToday} tokens today (UTC), ` +
            `its limit is ${q.maxTokensPerDay} a day; answer without it`,
      retryable: got.verdict === 'runs',
    };
  }

  agent(name: string): AgentSpec | undefined {
    return this.agents.agents.get(name);
  }

  async start(req: ChildRunRequest): Promise<string> {
    const runId = childRunId(req.parentRunId, req.callId);
    const job = runJob({
      run_id: runId,
      agent: req.agent,
      input: req.input,
      trace_id: req.traceId,
      tenant: req.tenant,
      key: req.key,
      created_at: Date.now(),
      parent: {
        run_id: req.parentRunId,
        call_id: req.callId,
        tool: req.tool,
        depth: req.depth,
        max_depth: req.maxDepth,
        deadline_at: req.deadlineAt,
      },
    });
    await this.#queue.add('run', job, runJobOptions(runId));
    await this.#store.accept(job);
    return runId;
  }

  async answers(runId: string, callIds: string[]): Promise<Array<ToolResult | undefined>> {
    if (callIds.length === 0) return [];
    const recorded = await this.connection.hmget(this.keys.results(runId), ...callIds);
    return recorded.map((json) => (json === null ? undefined : (JSON.parse(json) as ToolResult)));
  }

  async cancel(runIds: string[]): Promise<void> {
    for (const runId of runIds) {
      await this.#store.requestCancel(runId);
      await this.#wake(runId);
    }
  }

  /**
   * A child run that ended answers its parent's call with its outcome and wakes the parent. A run whose
   * id is not the one its link derives (a job added by hand) answers nothing.
   */
  async answerParent(state: RunState): Promise<void> {
    const parent = state.parent;
    if (!parent || !state.outcome) return;
    if (childRunId(parent.runId, parent.callId) !== state.runId) {
      this.logger.warn(
        { runId: state.runId, parent: parent.runId },
        'child run id does not match its parent link',
      );
      return;
    }
    const result = childResult(state, parent.callId, parent.tool);
    await redisScripts(this.connection).recordResult(
      [this.keys.results(parent.runId), this.keys.runCalls(parent.runId)],
      [parent.callId, JSON.stringify(result), constants.DEFAULT_RESULTS_TTL_S],
    );
    await this.#wake(parent.runId);
  }

  /**
   * A started child that has not answered its parent's call: alive while its job exists; ended (its
   * answer lost) it answers again from its record; with no job — removed from the queue, or lost with
   * Redis's data — it is queued again under the same id (resuming from its record when it has one).
   */
  async revive(req: ChildRunRequest): Promise<'alive' | 'answered' | 'restarted'> {
    const runId = childRunId(req.parentRunId, req.callId);
    if (await this.#queue.getJob(runId)) return 'alive';
    const { state } = await this.#store.load(runId);
    if (state?.outcome) {
      await this.answerParent(state);
      return 'answered';
    }
    this.logger.warn(
      { runId, parent: req.parentRunId, record: state !== undefined },
      'child run has no job: queued again under its id',
    );
    await this.start(req);
    return 'restarted';
  }

  /** Whether a child of the run has answered a call the run still waits for (then wake it now). */
  async anyAnswered(state: RunState): Promise<boolean> {
    const open = (state.children ?? []).filter((c) => !c.answered).map((c) => c.toolCallId);
    return (await this.answers(state.runId, open)).some((a) => a !== undefined);
  }

  async close(): Promise<void> {
    await this.#queue.close();
  }

  /** A parked run is a delayed job: promote it so that any scheduler resumes it now. */
  async #wake(runId: string): Promise<void> {
    const job = await this.#queue.getJob(runId);
    if (job && (await job.isDelayed())) await job.promote().catch(() => undefined);
  }
}

/**
 * When a run parked for its children wakes to look after them (`revive`) at the latest: a child whose
 * job was lost would otherwise leave it waiting until its deadline. Every `checkMs` (the run worker's
 * stalled-job interval) while a child owes an answer; `wakeAt` otherwise.
 */
export function childCheckAt(state: RunState, wakeAt: number, checkMs: number): number {
  const waiting = (state.children ?? []).some((c) => !c.answered);
  return waiting ? Math.min(wakeAt, Date.now() + checkMs) : wakeAt;
}

/**
 * The parent's call result of a child's outcome: its structured output (else its answer) on success; a
 * failed, stopped or cancelled child is an `execution_error` naming the agent, how it ended and why.
 */
export function childResult(state: RunState, callId: string, tool: string): ToolResult {
  const outcome = state.outcome;
  const call = { toolCallId: callId, name: tool };
  const durationMs = Math.max(0, Date.now() - state.createdAt);
  if (outcome?.status === 'succeeded') {
    const content = outcome.output !== undefined ? outcome.output : (outcome.answer ?? '');
    return capped({
      tool_call_id: callId,
      name: tool,
      ok: true,
      status: 'ok',
      content,
      duration_ms: durationMs,
      attempts: 1,
    });
  }
  const status = outcome?.status ?? 'failed';
  const reason = outcome?.reason ?? 'unknown';
  const report = outcome?.report ? `: ${outcome.report.slice(0, 500)}` : '';
  return errorResult(
    call,
    {
      kind: 'execution_error',
      type: `agent_${status}`,
      message: `the agent "${state.agent}" ended ${status} (${reason})${report}`,
      retryable: status !== 'cancelled',
    },
    { duration_ms: durationMs, attempts: 1 },
  );
}

/** A child's answer cut to what a model reads of one tool result, saying so. */
function capped(result: ToolResult): ToolResult {
  const text = typeof result.content === 'string' ? result.content : JSON.stringify(result.content);
  if (text.length <= constants.AGENT_TOOL_RESULT_MAX_CHARS) return result;
  return {
    ...result,
    content: text.slice(0, constants.AGENT_TOOL_RESULT_MAX_CHARS),
    truncated: true,
    notice: `the agent's answer was cut to ${constants.AGENT_TOOL_RESULT_MAX_CHARS} of ${text.length} characters; the child run's record holds all of it`,
  };
}
