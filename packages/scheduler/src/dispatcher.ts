import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import {
  AgentReachError,
  constants,
  errorResult,
  toolJobId,
  type Keys,
  type Logger,
  type ToolCallJob,
  type ToolResult,
} from '@agent-reach/shared';
import type { ToolCatalog } from './tool-catalog.js';

/** One call of a model turn. */
export interface DispatchCall {
  toolCallId: string;
  name: string;
  /** The model's raw argument string. */
  arguments: string;
  approval?: ToolCallJob['approval'];
}

export interface DispatchRun {
  runId: string;
  traceId: string;
  agent: string;
}

export interface DispatcherOptions {
  /** Producer connection (adds, result look-ups). A blocking duplicate is made for replies. */
  connection: Redis;
  keys: Keys;
  catalog: ToolCatalog;
  logger: Logger;
  /** Identifies this dispatcher's reply list. Default: a random id. */
  id?: string;
  /** Added to a call's worst-case executor time before it is given up as `timeout`, in ms. Default 5000. */
  slackMs?: number;
}

interface Pending {
  resolve: (result: ToolResult) => void;
  timer: NodeJS.Timeout;
  runId: string;
  toolCallId: string;
  name: string;
  since: number;
}

/**
 * Publishes the tool calls of a model turn and awaits their results by `tool_call_id`.
 *
 * How results come back: every job carries `replyTo`, the Redis list of the dispatcher that published
 * it. The executor records the result in the run's results hash and pushes it onto that list in one
 * MULTI; this dispatcher drains its own list with a blocking BLMPOP (up to REPLY_BATCH_SIZE replies per
 * round trip). So each scheduler reads only the completions of its own calls — unlike BullMQ's
 * QueueEvents, where every listener reads every completion of the fleet — and a result reaches the
 * waiting run before BullMQ has even moved the job to completed. The results hash is the durable record:
 * it is read before publishing (a call with a result is never dispatched again) and at each call's
 * deadline (a reply pushed to a dispatcher that has since died is still found).
 */
export class Dispatcher {
  readonly id: string;
  readonly #opts: DispatcherOptions;
  readonly #queues = new Map<string, Queue>();
  readonly #pending = new Map<string, Pending>();
  readonly #replyKey: string;
  #reader: Redis | undefined;
  #reading: Promise<void> | undefined;
  #closed = false;

  constructor(options: DispatcherOptions) {
    this.#opts = options;
    this.id = options.id ?? randomUUID();
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
    options: { fresh?: boolean } = {},
  ): Promise<ToolResult[]> {
    if (this.#closed) throw new AgentReachError('DISPATCH_CLOSED', 'the dispatcher is closed');
    if (calls.length === 0) return [];
    const { connection, keys, catalog } = this.#opts;
    const recorded = options.fresh
      ? []
      : await connection.hmget(keys.results(run.runId), ...calls.map((c) => c.toolCallId));
    const results = new Array<Promise<ToolResult>>(calls.length);
    const byQueue = new Map<string, Array<{ name: string; data: ToolCallJob; opts: object }>>();
    const now = Date.now();
    calls.forEach((call, i) => {
      const existing = recorded[i];
      if (existing !== null && existing !== undefined) {
        results[i] = Promise.resolve(JSON.parse(existing) as ToolResult);
        return;
      }
      const deadline =
        now + catalog.worstCaseMs(call.name) + (this.#opts.slackMs ?? constants.DEFAULT_DISPATCH_SLACK_MS);
      results[i] = this.#await(run.runId, call, deadline);
      const data: ToolCallJob = {
        v: constants.WIRE_VERSION,
        runId: run.runId,
        traceId: run.traceId,
        agent: run.agent,
        toolCallId: call.toolCallId,
        name: call.name,
        arguments: call.arguments,
        deadline,
        replyTo: this.#replyKey,
        enqueuedAt: now,
        ...(call.approval ? { approval: call.approval } : {}),
      };
      const queueName = keys.toolQueue(catalog.group(call.name));
      const jobs = byQueue.get(queueName) ?? [];
      jobs.push({
        name: call.name,
        data,
        opts: {
          jobId: toolJobId(run.runId, call.toolCallId),
          attempts: constants.TOOL_JOB_ATTEMPTS,
          backoff: { type: 'fixed', delay: 1000 },
          removeOnComplete: true,
          removeOnFail: { age: constants.TOOL_JOB_KEEP_FAILED_S },
        },
      });
      byQueue.set(queueName, jobs);
    });
    this.#startReading();
    // addBulk builds a pipeline, which on BullMQ's script-laden connection costs more than one add.
    await Promise.all(
      [...byQueue].map(([name, jobs]) => {
        const queue = this.#queue(name);
        const [only] = jobs;
        return jobs.length === 1 && only ? queue.add(only.name, only.data, only.opts) : queue.addBulk(jobs);
      }),
    );
    return Promise.all(results);
  }

  /** Stops reading replies and closes queues; calls still waiting resolve as `timeout`. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#recheck);
    for (const pending of this.#pending.values()) {
      clearTimeout(pending.timer);
      pending.resolve(
        errorResult(
          { toolCallId: pending.toolCallId, name: pending.name },
          { kind: 'timeout', message: 'the scheduler shut down while waiting', retryable: true },
        ),
      );
    }
    this.#pending.clear();
    this.#reader?.disconnect();
    await this.#reading?.catch(() => undefined);
    await Promise.all([...this.#queues.values()].map((q) => q.close()));
  }

  #await(runId: string, call: DispatchCall, deadline: number): Promise<ToolResult> {
    const key = `${runId}\n${call.toolCallId}`;
    return new Promise<ToolResult>((resolve) => {
      const timer = setTimeout(
        () => {
          void this.#expire(runId, call, key);
        },
        Math.max(0, deadline - Date.now()),
      );
      this.#pending.set(key, {
        resolve,
        timer,
        runId,
        toolCallId: call.toolCallId,
        name: call.name,
        since: Date.now(),
      });
      this.#startRechecking();
    });
  }

  async #expire(runId: string, call: DispatchCall, key: string): Promise<void> {
    const pending = this.#pending.get(key);
    if (!pending) return;
    // The reply may have gone to another dispatcher's list (a takeover): the run's record still has it.
    const recorded = await this.#opts.connection
      .hget(this.#opts.keys.results(runId), call.toolCallId)
      .catch(() => null);
    if (!this.#pending.delete(key)) return;
    pending.resolve(
      recorded !== null
        ? (JSON.parse(recorded) as ToolResult)
        : errorResult(call, {
            kind: 'timeout',
            message: `no result for "${call.name}" before its deadline; no executor finished it in time`,
            retryable: true,
          }),
    );
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
      const pipe = this.#opts.connection.pipeline();
      for (const [, p] of stale) pipe.hget(this.#opts.keys.results(p.runId), p.toolCallId);
      pipe
        .exec()
        .then((replies) => {
          replies?.forEach(([, value], i) => {
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
    }, constants.DISPATCH_RECHECK_MS);
    this.#recheck.unref();
  }

  #deliver(raw: string): void {
    const reply = JSON.parse(raw) as { runId: string; result: ToolResult };
    const key = `${reply.runId}\n${reply.result.tool_call_id}`;
    const pending = this.#pending.get(key);
    if (!pending) return; // late (past its deadline) or a duplicate: the run's record already holds it
    this.#pending.delete(key);
    clearTimeout(pending.timer);
    pending.resolve(reply.result);
  }

  #startReading(): void {
    if (this.#reading) return;
    const reader = this.#opts.connection.duplicate({ maxRetriesPerRequest: null, enableOfflineQueue: true });
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
      queue = new Queue(name, { connection: this.#opts.connection, prefix: this.#opts.keys.prefix });
      queue.on('error', (err) => this.#opts.logger.warn({ err, queue: name }, 'tool queue error'));
      this.#queues.set(name, queue);
    }
    return queue;
  }
}
