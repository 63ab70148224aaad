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

export interface WorkflowWorkerOptions {
  /** Connection for BullMQ (it makes its own blocking duplicate). */
  connection: RedisClient;
  workflows: WorkflowControl;
  runs: RunControl;
  logger: Logger;
  metrics?: WorkflowMetrics;
  /** Workflows coordinated at once in this process. */
  concurrency?: number;
  /** BullMQ lock duration and stalled-check interval, in ms (as for runs). */
  lockDurationMs?: number;
  stalledIntervalMs?: number;
  /** How long finished coordination jobs are kept, in seconds. */
  retentionS?: number;
  /** Longest a waiting workflow sleeps before its coordinator looks again, in ms. */
  pollMs?: number;
}

export interface WorkflowWorker {
  readonly worker: Worker<WorkflowJobData>;
  close(): Promise<void>;
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
export function createWorkflowWorker(options: WorkflowWorkerOptions): WorkflowWorker {
  const { workflows, runs, logger } = options;
  const store = workflows.store;
  const pollMs = options.pollMs ?? constants.WORKFLOW_POLL_MS;

  const transition = async (
    rec: WorkflowRecord,
    t: Parameters<typeof store.apply>[1],
    now: number,
  ): Promise<boolean> => {
    const applied = await store.apply(rec.workflowId, t, now);
    if (applied && t.target === 'done') rec.done.set(t.node, t.value);
    if (applied && t.target === 'started') rec.started.set(t.node, t.value);
    return applied;
  };

  const cancelRunsOf = async (rec: WorkflowRecord) => {
    for (const [id, start] of rec.started)
      if (!rec.done.has(id)) await runs.cancel(start.run_id).catch(() => undefined);
  };

  const finish = async (
    rec: WorkflowRecord,
    outcome: WorkflowOutcome,
    now: number,
    extra: WorkflowEvent[] = [],
  ) => {
    const applied = await store.apply(
      rec.workflowId,
      {
        target: 'outcome',
        value: outcome,
        events: [...extra, { type: 'workflow_finished', at: now, outcome }],
      },
      now,
    );
    // Runs still going are of no use to anyone now (an aborted, failed or cancelled workflow).
    await cancelRunsOf(rec);
    if (applied) {
      options.metrics?.workflows.inc({ workflow: rec.name, outcome: outcome.status });
      logger.info(
        { workflowId: rec.workflowId, workflow: rec.name, status: outcome.status, reason: outcome.reason },
        'workflow finished',
      );
    }
  };

  /** One coordination step; the time to look again, or undefined when the workflow has ended. */
  const step = async (workflowId: string): Promise<number | undefined> => {
    const rec = await store.load(workflowId);
    if (!rec || rec.outcome) return undefined;
    const now = Date.now();
    const log = logger.child({ workflowId, workflow: rec.name });
    const nodes = rec.spec.nodes;
    const lowConfidence = () => [...rec.done.values()].some((d) => d.low_confidence);

    if (rec.cancelRequested) {
      await finish(
        rec,
        { status: 'cancelled', reason: 'cancel_requested', low_confidence: lowConfidence() },
        now,
      );
      return undefined;
    }

    // Results of node runs that ended.
    for (const node of nodes) {
      const start = rec.started.get(node.id);
      if (!start || rec.done.has(node.id)) continue;
      const summary = await runs.store.summary(start.run_id);
      if (!summary) {
        // Started by a coordinator that died before queueing the run: queue it (same id: at most once).
        if (!(await runs.queue.getJob(start.run_id))) await queueRun(rec, node, start);
        continue;
      }
      if (!FINAL_RUN.has(summary.status)) continue;
      const outcome = (await runs.store.load(start.run_id)).state?.outcome;
      const error = `run ${start.run_id} ended ${summary.status} (${outcome?.reason ?? summary.reason ?? 'no reason'})${
        outcome?.report ? `: ${outcome.report.slice(0, constants.WORKFLOW_NODE_ERROR_MAX_CHARS)}` : ''
      }`;
      const result: NodeResult =
        summary.status === 'succeeded'
          ? { status: 'succeeded', output: outcome?.answer ?? '', low_confidence: false, at: now }
          : node.on_timeout === 'abort'
            ? { status: 'failed', low_confidence: false, reason: `run_${summary.status}`, error, at: now }
            : {
                status: 'defaulted',
                output: node.on_timeout.default,
                low_confidence: true,
                note: `node ${node.id}'s run ended ${summary.status} (${summary.reason ?? 'no reason'}); this is its declared default`,
                reason: `run_${summary.status}`,
                at: now,
              };
      await transition(
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

    // The watchdog: a node without a result past its timeout (waiting or running) gets its default, or
    // ends the workflow with a report of every wait.
    for (const node of nodes) {
      if (rec.done.has(node.id) || now < rec.createdAt + node.timeout_ms) continue;
      const runId = rec.started.get(node.id)?.run_id;
      if (node.on_timeout === 'abort') {
        const report = abortReport(rec, node, now);
        options.metrics?.watchdogFirings.inc({ workflow: rec.name, action: 'abort' });
        log.warn({ node: node.id, waits: report.waits.length }, 'watchdog aborted the workflow');
        await finish(
          rec,
          { status: 'aborted', reason: 'timeout', low_confidence: lowConfidence(), report },
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
        return undefined;
      }
      const result: NodeResult = {
        status: 'defaulted',
        output: node.on_timeout.default,
        low_confidence: true,
        note: `node ${node.id} timed out after ${node.timeout_ms} ms; this is its declared default`,
        reason: 'timeout',
        at: now,
      };
      const fired = await transition(
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
        options.metrics?.watchdogFirings.inc({ workflow: rec.name, action: 'default' });
        log.info({ node: node.id, runId }, 'watchdog injected the default of a node past its timeout');
        if (runId) await runs.cancel(runId).catch(() => undefined);
      }
    }

    // A node that failed (its run ended without an answer and it has no default to stand in) fails the
    // workflow: nodes after it never start (skipped), and runs still going are cancelled by `finish` —
    // their outputs could only feed a workflow that has already ended.
    const failed = nodes.find((n) => rec.done.get(n.id)?.status === 'failed');
    if (failed) {
      const done = rec.done.get(failed.id);
      await finish(
        rec,
        {
          status: 'failed',
          reason: 'node_failed',
          low_confidence: lowConfidence(),
          failed_node: failed.id,
          error: `node ${failed.id} (agent ${failed.agent}) failed: ${done?.error ?? done?.reason ?? 'no answer'}`,
        },
        now,
      );
      return undefined;
    }

    // Nodes whose dependencies have all finished with an output start now, in parallel.
    for (const node of nodes) {
      if (rec.started.has(node.id) || rec.done.has(node.id)) continue;
      if (!node.depends_on.every((d) => rec.done.has(d) && rec.done.get(d)?.status !== 'failed')) continue;
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
      options.metrics?.nodeWait.observe({ workflow: rec.name }, (now - rec.createdAt) / 1000);
      await queueRun(rec, node, start);
    }

    if (nodes.every((n) => rec.done.has(n.id))) {
      await finish(
        rec,
        {
          status: 'succeeded',
          reason: 'completed',
          output: workflowOutput(rec),
          low_confidence: lowConfidence(),
        },
        now,
      );
      return undefined;
    }
    const deadlines = nodes.filter((n) => !rec.done.has(n.id)).map((n) => rec.createdAt + n.timeout_ms);
    return Math.min(now + pollMs, ...deadlines);
  };

  const queueRun = (rec: WorkflowRecord, node: WorkflowNodeSpec, start: NodeStart) =>
    runs.start({
      runId: start.run_id,
      agent: node.agent,
      input: start.input,
      traceId: rec.traceId,
      ...(node.model ? { model: node.model } : {}),
      metadata: { workflow_id: rec.workflowId, workflow_node: node.id },
      ...(rec.tenant ? { tenant: rec.tenant } : {}),
    });

  /** Whether something happened that the step just taken did not see: a node run ended, or a cancel. */
  const missedWake = async (workflowId: string) => {
    const rec = await store.load(workflowId);
    if (!rec || rec.outcome) return false;
    if (rec.cancelRequested) return true;
    for (const [id, start] of rec.started) {
      if (rec.done.has(id)) continue;
      const summary = await runs.store.summary(start.run_id);
      if (summary && FINAL_RUN.has(summary.status)) return true;
    }
    return false;
  };

  const processJob = async (job: Job<WorkflowJobData>, token?: string): Promise<void> => {
    const workflowId = job.data?.workflow_id;
    // Redis is a trust boundary: a job added by hand must name the workflow its id is.
    if (job.id !== workflowId || !WORKFLOW_ID_PATTERN.test(String(workflowId)))
      throw new UnrecoverableError(`invalid agent-workflows job ${job.id}: its id must be its workflow_id`);
    const wakeAt = await step(workflowId);
    if (wakeAt === undefined) return;
    await job.moveToDelayed(Math.max(wakeAt, Date.now() + 1), token);
    if (await missedWake(workflowId)) await job.promote().catch(() => undefined);
    throw new DelayedError();
  };

  const retentionS = options.retentionS ?? constants.DEFAULT_RUN_RETENTION_S;
  const worker = new Worker<WorkflowJobData>(workflows.queue.name, processJob, {
    connection: options.connection,
    prefix: workflows.queue.opts.prefix ?? 'bull',
    concurrency: options.concurrency ?? constants.DEFAULT_WORKFLOW_CONCURRENCY,
    lockDuration: options.lockDurationMs ?? constants.DEFAULT_RUN_LOCK_DURATION_MS,
    stalledInterval: options.stalledIntervalMs ?? constants.DEFAULT_RUN_STALLED_INTERVAL_MS,
    maxStalledCount: constants.RUN_MAX_STALLED_COUNT,
    removeOnComplete: { age: retentionS },
    removeOnFail: { age: retentionS },
  });
  worker.on('error', (err) => logger.error({ err: { message: err.message } }, 'workflow worker error'));
  worker.on('failed', (job, err) => {
    if (err.name === 'DelayedError' || !job) return;
    logger.error({ err: { message: err.message }, workflowId: job.id }, 'workflow step failed');
    if (job.id !== job.data?.workflow_id || err.name === 'UnrecoverableError') return;
    if ((job.opts.attempts ?? 1) > job.attemptsMade && !/stalled/i.test(err.message)) return;
    // Out of attempts: the record must not stay `running` with nobody coordinating it.
    void (async () => {
      const rec = await store.load(job.data.workflow_id);
      if (!rec || rec.outcome) return;
      await finish(
        rec,
        { status: 'failed', reason: 'coordinator_failed', low_confidence: false, error: err.message },
        Date.now(),
      );
    })().catch((e: unknown) => logger.error({ err: e }, 'recording the failed workflow failed'));
  });

  return {
    worker,
    close: () => worker.close(),
  };
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
