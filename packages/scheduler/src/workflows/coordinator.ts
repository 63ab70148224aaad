import { DelayedError, UnrecoverableError, Worker, type Job } from 'bullmq';
import {
  constants,
  renderNodeInput,
  type Logger,
  type NodeOutput,
  type WorkflowMetrics,
  type WorkflowNodeSpec,
} from '@agent-reach/shared';
import type { RunControl } from '../runs/run-control.js';
import type { CallbackSink } from '../runs/run-callbacks.js';
import {
  nodeRunId,
  WORKFLOW_ID_PATTERN,
  type WorkflowControl,
  type WorkflowJobData,
} from './workflow-control.js';
import type { NodeStart, WorkflowRecord } from './workflow-store.js';
import type {
  AbortReport,
  NodeResult,
  WaitRecord,
  WorkflowEvent,
  WorkflowOutcome,
} from '@agent-reach/protocol';
import type { RedisClient } from '@agent-reach/shared';

const FINAL_RUN = new Set(['succeeded', 'not_converged', 'failed', 'cancelled']);
/** Node results a dependant can start from. */
const HAS_OUTPUT = new Set(['succeeded', 'defaulted']);

export interface WorkflowWorkerOptions {
  /** Connection for BullMQ (it makes its own blocking duplicate). */
  connection: RedisClient;
  workflows: WorkflowControl;
  runs: RunControl;
  logger: Logger;
  metrics?: WorkflowMetrics;
  /** Workflows coordinated at once in this process. Default 20. */
  concurrency?: number;
  /** BullMQ lock duration, in ms (as for runs). Default 30 000. */
  lockDurationMs?: number;
  /** BullMQ stalled-check interval, in ms (as for runs). Default 30 000. */
  stalledIntervalMs?: number;
  /** How long finished coordination jobs are kept, in seconds. Default 7 days. */
  retentionS?: number;
  /** Longest a waiting workflow sleeps before its coordinator looks again, in ms. Default 2000. */
  pollMs?: number;
  /** Where a workflow that ends hands its `workflow_finished` event for its callback. Default: none. */
  callbacks?: CallbackSink;
}

/** The coordinator's options with every default filled in. */
export type ResolvedWorkflowWorkerOptions = WorkflowWorkerOptions &
  Required<
    Pick<
      WorkflowWorkerOptions,
      'concurrency' | 'lockDurationMs' | 'stalledIntervalMs' | 'retentionS' | 'pollMs'
    >
  >;

/** Every default of the coordinator in one place: its body reads the resolved options only. */
export function resolveWorkflowWorkerOptions(o: WorkflowWorkerOptions): ResolvedWorkflowWorkerOptions {
  return {
    ...o,
    concurrency: o.concurrency ?? constants.DEFAULT_WORKFLOW_CONCURRENCY,
    lockDurationMs: o.lockDurationMs ?? constants.DEFAULT_RUN_LOCK_DURATION_MS,
    stalledIntervalMs: o.stalledIntervalMs ?? constants.DEFAULT_RUN_STALLED_INTERVAL_MS,
    retentionS: o.retentionS ?? constants.DEFAULT_RUN_RETENTION_S,
    pollMs: o.pollMs ?? constants.WORKFLOW_POLL_MS,
  };
}

export interface WorkflowWorker {
  readonly worker: Worker<WorkflowJobData>;
  close(): Promise<void>;
}

/** What the coordinator's handlers share. */
interface CoordinatorContext {
  options: ResolvedWorkflowWorkerOptions;
  runs: RunControl;
  store: WorkflowControl['store'];
  logger: Logger;
}

/**
 * The coordinator: a BullMQ worker on `agent-workflows`, one job per workflow. Each time the job runs it
 * takes one step from the workflow's record in Redis — collects the results of node runs that ended,
 * fires the watchdog for nodes past their timeout, queues the runs of nodes whose dependencies have all
 * finished, ends the workflow when it can — and then parks the job as a delayed job (no slot held) until
 * the next node deadline or the poll interval, whichever is sooner. A node run that ends promotes the job
 * (see `scheduler.ts`), so dependants start at once. Every change is a once-only transition of the record
 * (see `WorkflowStore`) and node runs have ids derived from the workflow and node, so a coordinator killed
 * mid-step is replaced (stalled-job recovery) by one that repeats the step without starting or
 * delivering anything twice.
 */
export function createWorkflowWorker(workerOptions: WorkflowWorkerOptions): WorkflowWorker {
  const options = resolveWorkflowWorkerOptions(workerOptions);
  const { workflows, logger, retentionS } = options;
  const ctx: CoordinatorContext = { options, runs: options.runs, store: workflows.store, logger };
  const worker = new Worker<WorkflowJobData>(
    workflows.queue.name,
    (job, token) => coordinate(ctx, job, token),
    {
      connection: options.connection,
      prefix: workflows.queue.opts.prefix ?? 'bull',
      concurrency: options.concurrency,
      lockDuration: options.lockDurationMs,
      stalledInterval: options.stalledIntervalMs,
      maxStalledCount: constants.RUN_MAX_STALLED_COUNT,
      runRetryDelay: constants.WORKER_RETRY_DELAY_MS,
      removeOnComplete: { age: retentionS },
      removeOnFail: { age: retentionS },
    },
  );
  worker.on('error', (err) => logger.error({ err: { message: err.message } }, 'workflow worker error'));
  worker.on('failed', (job, err) => onWorkflowFailed(ctx, job, err));

  return {
    worker,
    close: () => worker.close(),
  };
}

/** The worker's processor: one coordination step, then the job parked until the next one is due. */
async function coordinate(ctx: CoordinatorContext, job: Job<WorkflowJobData>, token?: string): Promise<void> {
  const workflowId = job.data?.workflow_id;
  // Redis is a trust boundary: a job added by hand must name the workflow its id is.
  if (job.id !== workflowId || !WORKFLOW_ID_PATTERN.test(String(workflowId)))
    throw new UnrecoverableError(`invalid agent-workflows job ${job.id}: its id must be its workflow_id`);
  const wakeAt = await step(ctx, workflowId);
  if (wakeAt === undefined) return;
  await job.moveToDelayed(Math.max(wakeAt, Date.now() + 1), token);
  if (await missedWake(ctx, workflowId)) await job.promote().catch(() => undefined);
  throw new DelayedError();
}

/** The worker's `failed` listener: a workflow whose job is out of attempts is recorded as failed. */
function onWorkflowFailed(ctx: CoordinatorContext, job: Job<WorkflowJobData> | undefined, err: Error): void {
  if (err.name === 'DelayedError' || !job) return;
  ctx.logger.error({ err: { message: err.message }, workflowId: job.id }, 'workflow step failed');
  if (job.id !== job.data?.workflow_id || err.name === 'UnrecoverableError') return;
  if ((job.opts.attempts ?? 1) > job.attemptsMade && !/stalled/i.test(err.message)) return;
  // Out of attempts: the record must not stay `running` with nobody coordinating it.
  void (async () => {
    const rec = await ctx.store.load(job.data.workflow_id);
    if (!rec || rec.outcome) return;
    await finish(
      ctx,
      rec,
      { status: 'failed', reason: 'coordinator_failed', low_confidence: false, error: err.message },
      Date.now(),
    );
  })().catch((e: unknown) => ctx.logger.error({ err: e }, 'recording the failed workflow failed'));
}

async function transition(
  ctx: CoordinatorContext,
  rec: WorkflowRecord,
  t: Parameters<WorkflowControl['store']['apply']>[1],
  now: number,
): Promise<boolean> {
  const applied = await ctx.store.apply(rec.workflowId, t, now);
  if (applied && t.target === 'done') rec.done.set(t.node, t.value);
  if (applied && t.target === 'started') rec.started.set(t.node, t.value);
  return applied;
}

async function cancelRunsOf(ctx: CoordinatorContext, rec: WorkflowRecord): Promise<void> {
  for (const [id, start] of rec.started)
    if (!rec.done.has(id)) await ctx.runs.cancel(start.run_id).catch(() => undefined);
}

async function finish(
  ctx: CoordinatorContext,
  rec: WorkflowRecord,
  outcome: WorkflowOutcome,
  now: number,
  extra: WorkflowEvent[] = [],
): Promise<void> {
  const applied = await ctx.store.apply(
    rec.workflowId,
    {
      target: 'outcome',
      value: outcome,
      events: [...extra, { type: 'workflow_finished', at: now, outcome }],
    },
    now,
  );
  // Runs still going are of no use to anyone now (an aborted, failed or cancelled workflow).
  await cancelRunsOf(ctx, rec);
  // Handed over whether or not this call recorded the outcome: a repeat queues nothing twice.
  await notifyFinished(ctx, rec, outcome);
  if (applied) {
    ctx.options.metrics?.workflows.inc({ workflow: rec.name, outcome: outcome.status });
    ctx.logger.info(
      { workflowId: rec.workflowId, workflow: rec.name, status: outcome.status, reason: outcome.reason },
      'workflow finished',
    );
  }
}

/**
 * Hands a workflow's `workflow_finished` event to its callback. A step that finds the workflow ended
 * hands it again, so an event lost with a failed attempt goes out when the job is tried again.
 */
async function notifyFinished(ctx: CoordinatorContext, rec: WorkflowRecord, outcome: WorkflowOutcome) {
  await ctx.options.callbacks?.notify({
    runId: rec.workflowId,
    event: 'workflow_finished',
    data: {
      workflow_id: rec.workflowId,
      workflow: rec.name,
      status: outcome.status,
      reason: outcome.reason,
      ...(rec.tenant ? { tenant: rec.tenant } : {}),
      ...(rec.metadata ? { metadata: rec.metadata } : {}),
    },
  });
}

function lowConfidence(rec: WorkflowRecord): boolean {
  return [...rec.done.values()].some((d) => d.low_confidence);
}

/** One coordination step; the time to look again, or undefined when the workflow has ended. */
async function step(ctx: CoordinatorContext, workflowId: string): Promise<number | undefined> {
  const rec = await ctx.store.load(workflowId);
  if (rec?.outcome) await notifyFinished(ctx, rec, rec.outcome);
  if (!rec || rec.outcome) return undefined;
  const now = Date.now();
  const log = ctx.logger.child({ workflowId, workflow: rec.name });
  const nodes = rec.spec.nodes;

  if (rec.cancelRequested) {
    await finish(
      ctx,
      rec,
      { status: 'cancelled', reason: 'cancel_requested', low_confidence: lowConfidence(rec) },
      now,
    );
    return undefined;
  }
  await collectResults(ctx, rec, now);
  if (await fireWatchdog(ctx, rec, now, log)) return undefined;
  if (await failOnFailedNode(ctx, rec, now)) return undefined;
  await startReadyNodes(ctx, rec, now);

  if (nodes.every((n) => rec.done.has(n.id))) {
    await finish(
      ctx,
      rec,
      {
        status: 'succeeded',
        reason: 'completed',
        output: workflowOutput(rec),
        low_confidence: lowConfidence(rec),
      },
      now,
    );
    return undefined;
  }
  const deadlines = nodes.filter((n) => !rec.done.has(n.id)).map((n) => rec.createdAt + n.timeout_ms);
  return Math.min(now + ctx.options.pollMs, ...deadlines);
}

/** Results of node runs that ended. */
async function collectResults(ctx: CoordinatorContext, rec: WorkflowRecord, now: number): Promise<void> {
  const { runs } = ctx;
  for (const node of rec.spec.nodes) {
    const start = rec.started.get(node.id);
    if (!start || rec.done.has(node.id)) continue;
    const summary = await runs.store.summary(start.run_id);
    if (!summary) {
      // Started by a coordinator that died before queueing the run: queue it (same id: at most once).
      if (!(await runs.queue.getJob(start.run_id))) await queueRun(ctx, rec, node, start);
      continue;
    }
    if (!FINAL_RUN.has(summary.status)) continue;
    const outcome = (await runs.store.load(start.run_id)).state?.outcome;
    const error = `run ${start.run_id} ended ${summary.status} (${outcome?.reason ?? summary.reason ?? 'no reason'})${
      outcome?.report ? `: ${outcome.report.slice(0, constants.WORKFLOW_NODE_ERROR_MAX_CHARS)}` : ''
    }`;
    const result: NodeResult =
      summary.status === 'succeeded'
        ? answered(node.id, outcome?.answer ?? '', lowConfidenceFrom(rec, start.low_confidence_inputs), now)
        : node.on_timeout === 'abort'
          ? { status: 'failed', low_confidence: false, reason: `run_${summary.status}`, error, at: now }
          : {
              status: 'defaulted',
              output: node.on_timeout.default,
              low_confidence: true,
              low_confidence_from: [node.id],
              note: `node ${node.id}'s run ended ${summary.status} (${summary.reason ?? 'no reason'}); this is its declared default`,
              reason: `run_${summary.status}`,
              at: now,
            };
    await transition(
      ctx,
      rec,
      {
        target: 'done',
        node: node.id,
        value: result,
        events: [nodeFinished(node.id, start.run_id, result)],
      },
      now,
    );
  }
}

/**
 * The watchdog: a node without a result past its timeout (waiting or running) gets its default; then
 * the nodes nobody needs any more are cancelled (a default may have made them so); then a node still
 * needed past its timeout with on_timeout abort ends the workflow with a report of every wait. Returns
 * true when it ended the workflow.
 */
async function fireWatchdog(
  ctx: CoordinatorContext,
  rec: WorkflowRecord,
  now: number,
  log: Logger,
): Promise<boolean> {
  const overdue = (node: WorkflowNodeSpec) =>
    !rec.done.has(node.id) && now >= rec.createdAt + node.timeout_ms;
  for (const node of rec.spec.nodes) {
    if (overdue(node) && node.on_timeout !== 'abort') await injectDefault(ctx, rec, node, now, log);
  }
  await cancelUnneeded(ctx, rec, now, log);
  const timedOut = rec.spec.nodes.find((node) => overdue(node) && node.on_timeout === 'abort');
  if (!timedOut) return false;
  await abortOnTimeout(ctx, rec, timedOut, now, log);
  return true;
}

/** A node past its timeout gets its declared default, marked low-confidence; its run is cancelled. */
async function injectDefault(
  ctx: CoordinatorContext,
  rec: WorkflowRecord,
  node: WorkflowNodeSpec,
  now: number,
  log: Logger,
): Promise<void> {
  if (node.on_timeout === 'abort') return;
  const runId = rec.started.get(node.id)?.run_id;
  const result: NodeResult = {
    status: 'defaulted',
    output: node.on_timeout.default,
    low_confidence: true,
    low_confidence_from: [node.id],
    note: `node ${node.id} timed out after ${node.timeout_ms} ms; this is its declared default`,
    reason: 'timeout',
    at: now,
  };
  const fired = await transition(
    ctx,
    rec,
    {
      target: 'done',
      node: node.id,
      value: result,
      events: [
        {
          type: 'watchdog_fired',
          at: now,
          node: node.id,
          action: 'default',
          timeout_ms: node.timeout_ms,
          ...(runId ? { run_id: runId } : {}),
        },
        nodeFinished(node.id, runId, result),
      ],
    },
    now,
  );
  if (fired) {
    ctx.options.metrics?.watchdogFirings.inc({ workflow: rec.name, action: 'default' });
    log.info({ node: node.id, runId }, 'watchdog injected the default of a node past its timeout');
    if (runId) await ctx.runs.cancel(runId).catch(() => undefined);
  }
}

/** Nodes whose output nobody needs any more (see `unneededNodes`) end cancelled or skipped. */
async function cancelUnneeded(
  ctx: CoordinatorContext,
  rec: WorkflowRecord,
  now: number,
  log: Logger,
): Promise<void> {
  for (const [id, by] of unneededNodes(rec.spec.nodes, rec.done)) {
    const runId = rec.started.get(id)?.run_id;
    const result: NodeResult = {
      status: runId ? 'cancelled' : 'skipped',
      low_confidence: false,
      reason: `unneeded: the watchdog gave ${by.join(' and ')} ${by.length > 1 ? 'their defaults' : 'its default'}, so nothing needs this node's output any more`,
      unneeded_by: by,
      at: now,
    };
    const applied = await transition(
      ctx,
      rec,
      { target: 'done', node: id, value: result, events: [nodeFinished(id, runId, result)] },
      now,
    );
    if (!applied) continue;
    log.info({ node: id, runId, unneededBy: by }, 'cancelled a node nothing needs any more');
    if (runId) await ctx.runs.cancel(runId).catch(() => undefined);
  }
}

/** A node still needed past its timeout with on_timeout abort ends the workflow with a report. */
async function abortOnTimeout(
  ctx: CoordinatorContext,
  rec: WorkflowRecord,
  node: WorkflowNodeSpec,
  now: number,
  log: Logger,
): Promise<void> {
  const runId = rec.started.get(node.id)?.run_id;
  const report = abortReport(rec, node, now);
  ctx.options.metrics?.watchdogFirings.inc({ workflow: rec.name, action: 'abort' });
  log.warn({ node: node.id, waits: report.waits.length }, 'watchdog aborted the workflow');
  await finish(
    ctx,
    rec,
    { status: 'aborted', reason: 'timeout', low_confidence: lowConfidence(rec), report },
    now,
    [
      {
        type: 'watchdog_fired',
        at: now,
        node: node.id,
        action: 'abort',
        timeout_ms: node.timeout_ms,
        ...(runId ? { run_id: runId } : {}),
        report,
      },
    ],
  );
}

/**
 * A node that failed (its run ended without an answer and it has no default to stand in) fails the
 * workflow: nodes after it never start (skipped), and runs still going are cancelled by `finish` —
 * their outputs could only feed a workflow that has already ended. Returns true when it did.
 */
async function failOnFailedNode(ctx: CoordinatorContext, rec: WorkflowRecord, now: number): Promise<boolean> {
  const failed = rec.spec.nodes.find((n) => rec.done.get(n.id)?.status === 'failed');
  if (!failed) return false;
  const done = rec.done.get(failed.id);
  await finish(
    ctx,
    rec,
    {
      status: 'failed',
      reason: 'node_failed',
      low_confidence: lowConfidence(rec),
      failed_node: failed.id,
      error: `node ${failed.id} (agent ${failed.agent}) failed: ${done?.error ?? done?.reason ?? 'no answer'}`,
    },
    now,
  );
  return true;
}

/** Nodes whose dependencies have all finished with an output start now, in parallel. */
async function startReadyNodes(ctx: CoordinatorContext, rec: WorkflowRecord, now: number): Promise<void> {
  for (const node of rec.spec.nodes) {
    if (rec.started.has(node.id) || rec.done.has(node.id)) continue;
    if (!node.depends_on.every((d) => HAS_OUTPUT.has(rec.done.get(d)?.status ?? ''))) continue;
    const outputs = new Map<string, NodeOutput>();
    for (const d of node.depends_on) {
      const r = rec.done.get(d);
      if (r)
        outputs.set(d, {
          output: r.output ?? '',
          low_confidence: r.low_confidence,
          ...(r.note ? { note: r.note } : {}),
        });
    }
    const start: NodeStart = {
      run_id: nodeRunId(rec.workflowId, node.id),
      at: now,
      input: renderNodeInput(node.input, rec.input, outputs),
      low_confidence_inputs: node.depends_on.filter((d) => rec.done.get(d)?.low_confidence),
    };
    const won = await transition(
      ctx,
      rec,
      {
        target: 'started',
        node: node.id,
        value: start,
        events: [
          {
            type: 'node_started',
            at: now,
            node: node.id,
            agent: node.agent,
            run_id: start.run_id,
            waited_ms: now - rec.createdAt,
            low_confidence_inputs: start.low_confidence_inputs,
          },
        ],
      },
      now,
    );
    if (!won) continue;
    ctx.options.metrics?.nodeWait.observe({ workflow: rec.name }, (now - rec.createdAt) / 1000);
    await queueRun(ctx, rec, node, start);
  }
}

function queueRun(
  ctx: CoordinatorContext,
  rec: WorkflowRecord,
  node: WorkflowNodeSpec,
  start: NodeStart,
): Promise<string> {
  return ctx.runs.start({
    runId: start.run_id,
    agent: node.agent,
    input: start.input,
    traceId: rec.traceId,
    ...(node.model ? { model: node.model } : {}),
    ...(node.output_schema ? { outputSchema: node.output_schema } : {}),
    metadata: { workflow_id: rec.workflowId, workflow_node: node.id },
    ...(rec.tenant ? { tenant: rec.tenant } : {}),
  });
}

/** Whether something happened that the step just taken did not see: a node run ended, or a cancel. */
async function missedWake(ctx: CoordinatorContext, workflowId: string): Promise<boolean> {
  const rec = await ctx.store.load(workflowId);
  if (!rec || rec.outcome) return false;
  if (rec.cancelRequested) return true;
  for (const [id, start] of rec.started) {
    if (rec.done.has(id)) continue;
    const summary = await ctx.runs.store.summary(start.run_id);
    if (summary && FINAL_RUN.has(summary.status)) return true;
  }
  return false;
}

function nodeFinished(node: string, runId: string | undefined, r: NodeResult): WorkflowEvent {
  return {
    type: 'node_finished',
    at: r.at,
    node,
    ...(runId ? { run_id: runId } : {}),
    status: r.status,
    low_confidence: r.low_confidence,
    ...(r.reason ? { reason: r.reason } : {}),
    ...(r.error ? { error: r.error } : {}),
  };
}

/** The workflow's answer: the output of its one final node, or each final node's output under its id. */
function workflowOutput(rec: WorkflowRecord): string {
  const needed = new Set(rec.spec.nodes.flatMap((n) => n.depends_on));
  const sinks = rec.spec.nodes.filter((n) => !needed.has(n.id));
  if (sinks.length === 1) return rec.done.get(sinks[0]!.id)?.output ?? '';
  return sinks.map((n) => `${n.id}: ${rec.done.get(n.id)?.output ?? ''}`).join('\n\n');
}

/** Who was waiting on whom when `timedOut` passed its timeout, since when, and why. */
export function abortReport(rec: WorkflowRecord, timedOut: WorkflowNodeSpec, now: number): AbortReport {
  const iso = (ms: number) => new Date(ms).toISOString();
  const waits: WaitRecord[] = [];
  for (const node of rec.spec.nodes) {
    if (rec.done.has(node.id)) continue;
    const start = rec.started.get(node.id);
    const late = node.id === timedOut.id ? `; timed out after ${node.timeout_ms} ms (on_timeout: abort)` : '';
    if (start) {
      waits.push({
        node: node.id,
        agent: node.agent,
        state: 'running',
        waiting_on: [],
        since: start.at,
        run_id: start.run_id,
        why: `its run ${start.run_id} (agent ${node.agent}) has not answered${late}`,
      });
      continue;
    }
    const pending = node.depends_on.filter((d) => !rec.done.has(d));
    const describe = (d: string) => {
      const s = rec.started.get(d);
      return s ? `${d} is running as run ${s.run_id} since ${iso(s.at)}` : `${d} has not started`;
    };
    waits.push({
      node: node.id,
      agent: node.agent,
      state: 'waiting',
      waiting_on: pending,
      since: rec.createdAt,
      why: `needs the output of ${pending.join(' and ')}: ${pending.map(describe).join('; ')}${late}`,
    });
  }
  const text = waits
    .map((w) =>
      w.state === 'running'
        ? `${w.node} running since ${iso(w.since)}: ${w.why}`
        : `${w.node} waiting on ${w.waiting_on.join(', ')} since ${iso(w.since)}: ${w.why}`,
    )
    .join('\n');
  return { timed_out: timedOut.id, timeout_ms: timedOut.timeout_ms, at: now, waits, text };
}

/**
 * A node's answer. When its input used a low-confidence output it is low-confidence too, resting on the
 * same defaults, so that a stand-in stays marked all the way down a chain (a → b → c).
 */
function answered(id: string, output: string, from: string[], at: number): NodeResult {
  if (from.length === 0) return { status: 'succeeded', output, low_confidence: false, at };
  return {
    status: 'succeeded',
    output,
    low_confidence: true,
    low_confidence_from: from,
    note: `node ${id} answered from the declared default of ${from.join(' and ')}, not from an answer`,
    at,
  };
}

/** The defaulted nodes the low-confidence outputs of `inputs` rest on, in order, each once. */
export function lowConfidenceFrom(rec: Pick<WorkflowRecord, 'done'>, inputs: readonly string[]): string[] {
  const from = inputs.flatMap((d) => {
    const r = rec.done.get(d);
    if (!r?.low_confidence) return [];
    return r.low_confidence_from ?? [d];
  });
  return [...new Set(from)];
}

/**
 * The nodes nobody needs any more, each with the defaulted nodes that made it so. A node is unneeded when
 * it has no result, it is not a final node (some node depends on it: a final node's output is the
 * workflow's), and every node that depends on it has a result already (the watchdog gave it its default
 * while it waited) or is itself unneeded. Such a node can no longer change the workflow's output, so its
 * run is cancelled rather than left to run to its own timeout (and, with on_timeout abort, to end a
 * workflow whose answer is already there).
 */
export function unneededNodes(
  nodes: readonly WorkflowNodeSpec[],
  done: ReadonlyMap<string, NodeResult>,
): Map<string, string[]> {
  const dependants = new Map<string, string[]>(nodes.map((n) => [n.id, []]));
  for (const n of nodes) for (const d of n.depends_on) dependants.get(d)?.push(n.id);
  const unneeded = new Map<string, string[]>();
  // Dependants before the nodes they wait on; a fixpoint, since nodes may be declared in any order.
  for (let changed = true; changed;) {
    changed = false;
    for (const n of nodes) {
      const after = dependants.get(n.id) ?? [];
      if (done.has(n.id) || unneeded.has(n.id) || after.length === 0) continue;
      if (!after.every((d) => done.has(d) || unneeded.has(d))) continue;
      const by = after.flatMap((d) => {
        const r = done.get(d);
        if (r?.status === 'defaulted') return [d];
        return unneeded.get(d) ?? r?.unneeded_by ?? [];
      });
      unneeded.set(n.id, [...new Set(by)]);
      changed = true;
    }
  }
  return unneeded;
}
