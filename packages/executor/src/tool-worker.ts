import { DelayedError, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import {
  constants,
  type AgentsFile,
  type Keys,
  type Logger,
  type Metrics,
  type ToolCallJob,
  type ToolRegistry,
  type ToolResult,
} from '@agent-reach/shared';
import { BreakerBoard, type BreakerOptions } from './breakers.js';
import { runTool } from './run-tool.js';

export interface ToolWorkerOptions {
  /** Connection for commands (results, breakers); BullMQ makes its own blocking connections from it. */
  connection: Redis;
  registry: ToolRegistry;
  agents: AgentsFile;
  keys: Keys;
  logger: Logger;
  metrics: Metrics;
  /** Groups whose queues this process serves. Default: every group of the registry. */
  groups?: readonly string[];
  /** Jobs run at once per group. Default 50. */
  concurrency?: number;
  breaker?: Partial<BreakerOptions>;
  /** How long `close()` lets in-flight calls finish before it stops waiting, in ms. Default 10 000. */
  shutdownGraceMs?: number;
  /** Identifies this process in breaker snapshots. */
  executorId?: string;
  /** How long a run's recorded results stay in Redis, in seconds. */
  resultsTtlS?: number;
  /** How long a truncated result's full content stays fetchable, in seconds. */
  refTtlS?: number;
  /** BullMQ lock settings, exposed so chaos tests can use short ones. */
  lockDurationMs?: number;
  stalledIntervalMs?: number;
}

export interface ToolWorker {
  readonly groups: readonly string[];
  readonly breakers: BreakerBoard;
  /** Publishes this process's tool catalog to Redis so schedulers can offer the tools. */
  publishCatalog(): Promise<void>;
  /** Stops taking jobs, lets in-flight ones finish within the grace period, then closes. */
  close(): Promise<void>;
}

/** Starts one BullMQ worker per served group on the tool-call queues. */
export function createToolWorker(options: ToolWorkerOptions): ToolWorker {
  const { connection, registry, agents, keys, logger, metrics } = options;
  const groups = options.groups ?? registry.groups();
  const executorId = options.executorId ?? `executor-${process.pid}`;
  const resultsTtlS = options.resultsTtlS ?? constants.DEFAULT_RESULTS_TTL_S;
  const refTtlS = options.refTtlS ?? constants.DEFAULT_RESULT_REF_TTL_S;
  // Result and breaker writes share a plain connection: a MULTI on BullMQ's connection copies its ~60
  // scripts onto every pipeline (CPU per call), and one connection keeps a breaker transition ahead of
  // the result that caused it, so a scheduler never sees the result first.
  const writer = connection.duplicate() as ResultWriter;
  writer.defineCommand('agentReachResult', { numberOfKeys: 3, lua: RECORD_RESULT_LUA });
  const breakers = new BreakerBoard(
    {
      failureThreshold: options.breaker?.failureThreshold ?? constants.DEFAULT_BREAKER_FAILURE_THRESHOLD,
      resetTimeoutMs: options.breaker?.resetTimeoutMs ?? constants.DEFAULT_BREAKER_RESET_TIMEOUT_MS,
    },
    { redis: writer, keys, executorId, logger, metrics },
  );

  let draining = false;
  const processJob = async (job: Job<ToolCallJob>, token?: string): Promise<void> => {
    if (draining) {
      // BullMQ can still hand over a job that arrived while its blocking read was being closed: give it
      // back untouched (no attempt used) for another executor, instead of starting work while stopping.
      await job.moveToDelayed(Date.now(), token);
      throw new DelayedError();
    }
    const data = job.data;
    // Child loggers cost an allocation per call (bindings go through redaction): made only when used.
    let child: Logger | undefined;
    const log = () =>
      (child ??= logger.child({
        runId: data.runId,
        traceId: data.traceId,
        toolCallId: data.toolCallId,
        tool: data.name,
      }));
    const resultsKey = keys.results(data.runId);
    // A redelivered job (crashed executor) may already have a result: hand that back, never run twice.
    if (job.attemptsStarted > 1 || job.stalledCounter > 0) {
      const recorded = await writer.hget(resultsKey, data.toolCallId);
      if (recorded !== null) {
        await writer.lpush(data.replyTo, replyOf(data.runId, recorded));
        log().info('redelivered call already had a result; not run again');
        return;
      }
    }
    metrics.queueWait.observe(
      { group: job.queueName.replace(/^tools-/, '') },
      Math.max(0, Date.now() - data.enqueuedAt) / 1000,
    );
    metrics.toolCallsInFlight.inc();
    let outcome;
    try {
      outcome = await runTool(data, { registry, agents, breakers, logger: logger, bindings: log });
    } finally {
      metrics.toolCallsInFlight.dec();
    }
    const { result, full } = outcome;
    record(metrics, result);
    const json = JSON.stringify(result);
    // One command: the run's record, the reply to the waiting dispatcher, and the full result if cut.
    const cut = result.ref !== undefined && full !== undefined;
    await writer.agentReachResult(
      resultsKey,
      data.replyTo,
      cut ? keys.ref(result.ref as string) : resultsKey,
      data.toolCallId,
      json,
      replyOf(data.runId, json),
      resultsTtlS,
      cut ? (full as string) : '',
      refTtlS,
    );
  };

  const workers = groups.map(
    (group) =>
      new Worker<ToolCallJob>(keys.toolQueue(group), processJob, {
        connection,
        prefix: keys.prefix,
        concurrency: options.concurrency ?? constants.DEFAULT_EXECUTOR_CONCURRENCY,
        removeOnComplete: { count: 0 },
        removeOnFail: { age: constants.TOOL_JOB_KEEP_FAILED_S },
        ...(options.lockDurationMs === undefined ? {} : { lockDuration: options.lockDurationMs }),
        ...(options.stalledIntervalMs === undefined ? {} : { stalledInterval: options.stalledIntervalMs }),
      }),
  );
  for (const worker of workers) {
    worker.on('error', (err) => logger.error({ err, queue: worker.name }, 'tool worker error'));
    worker.on('failed', (job, err) =>
      logger.error({ err, jobId: job?.id }, 'tool job failed inside the executor'),
    );
  }

  return {
    groups,
    breakers,
    async publishCatalog() {
      // Every registered tool, not only this process's groups: the catalog says where each tool's queue is.
      const entries = registry.catalog();
      if (entries.length === 0) return;
      await connection.hset(
        keys.catalog,
        Object.fromEntries(entries.map((e) => [e.name, JSON.stringify(e)])),
      );
    },
    async close() {
      draining = true;
      const grace = options.shutdownGraceMs ?? constants.DEFAULT_SHUTDOWN_GRACE_MS;
      const graceful = Promise.all(workers.map((w) => w.close()));
      let timer: NodeJS.Timeout | undefined;
      const expired = new Promise<'expired'>((resolve) => {
        timer = setTimeout(() => resolve('expired'), grace);
      });
      const how = await Promise.race([graceful.then(() => 'done' as const), expired]);
      clearTimeout(timer);
      if (how === 'expired') {
        // Calls still running keep their jobs active; their locks lapse and another executor takes them.
        logger.warn({ graceMs: grace }, 'grace period over; closing with calls in flight');
        await Promise.all(workers.map((w) => w.close(true)));
      }
      breakers.shutdown();
      await writer.quit().catch(() => undefined);
    },
  };
}

/**
 * Records a result and replies in one script call (a script is one command for the client, where a MULTI
 * is six). KEYS: results hash, reply list, ref key (the results hash again when the result was not cut).
 * ARGV: tool call id, result JSON, reply JSON, TTL of both, the full content ('' when not cut), its TTL.
 */
const RECORD_RESULT_LUA = `
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[4])
if ARGV[5] ~= '' then redis.call('SET', KEYS[3], ARGV[5], 'EX', ARGV[6]) end
redis.call('LPUSH', KEYS[2], ARGV[3])
redis.call('EXPIRE', KEYS[2], ARGV[4])
return 1
`;

type ResultWriter = Redis & {
  agentReachResult(...keysAndArgs: Array<string | number>): Promise<number>;
};

/** A reply names its run: tool call ids are unique only within a run. */
function replyOf(runId: string, resultJson: string): string {
  return `{"runId":${JSON.stringify(runId)},"result":${resultJson}}`;
}

function record(metrics: Metrics, result: ToolResult): void {
  const kind = result.error?.kind ?? (result.no_result ? 'no_result' : 'none');
  metrics.toolCalls.inc({ tool: result.name, status: result.status, error_kind: kind });
  metrics.toolCallDuration.observe({ tool: result.name, status: result.status }, result.duration_ms / 1000);
  if (result.attempts > 0) metrics.toolCallAttempts.observe({ tool: result.name }, result.attempts);
  if (result.attempts > 1) metrics.toolRetries.inc({ tool: result.name }, result.attempts - 1);
}
