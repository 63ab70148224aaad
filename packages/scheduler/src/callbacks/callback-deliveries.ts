import { createHash } from 'node:crypto';
import { Counter, type Registry } from 'prom-client';
import { Queue, UnrecoverableError, Worker, type Job } from 'bullmq';
import type { CallbackEventName, Keys, RunCallback, RunJobData } from '@agent-reach/protocol';
import type { Logger, RedisClient } from '@agent-reach/shared';
import { CallbackRefused, HostUnresolved } from './callback-address.js';
import { secretFor, type CallbackConfig } from './callback-config.js';
import { sendDelivery, type AttemptResult } from './callback-sender.js';
import { CALLBACK_QUEUE } from './constants.js';

/** An event of a run (or workflow) that its callback may ask for, as `runs/` and `workflows/` hand it over. */
export interface CallbackEventInput {
  runId: string;
  event: CallbackEventName;
  /** Tells apart repeated events of one kind (a run awaiting approval of other calls); one id per value. */
  occurrence?: string;
  /** The run's callback and API key name; undefined: read from the run's job. */
  callback?: RunCallback | undefined;
  key?: string | undefined;
  /** The body's `data`: ids, agent, status, reason, metadata. */
  data: Record<string, unknown>;
}

/** What a delivery's job carries: the same on every attempt. */
interface DeliveryJob {
  id: string;
  run_id: string;
  type: string;
  url: string;
  key?: string;
  body: string;
}

/** A delivery's state as `GET /v1/runs/:id` shows it. */
export interface DeliveryState {
  id: string;
  event: string;
  state: 'pending' | 'delivered' | 'dead_lettered';
  attempts: number;
  last_status?: number;
  last_error?: string;
  updated_at: number;
}

/** A dead-lettered delivery as `GET /v1/callbacks/dead-letters` lists it. */
export interface DeadLetteredDelivery {
  id: string;
  /** The run's (or workflow's) id. */
  run_id: string;
  event: string;
  /** Where it went: the URL without its query or fragment, which may carry a token. */
  url: string;
  attempts: number;
  last_error: string;
  dead_lettered_at: number;
}

/** What asking to deliver a dead letter again did. */
export type RedeliverOutcome = 'queued' | 'not_found' | 'not_dead_lettered';

/** A URL without its query or fragment, which may carry a token (a stored one that is no URL: its text up to them). */
function withoutQuery(text: string): string {
  try {
    const url = new URL(text);
    return `${url.origin}${url.pathname}`;
  } catch {
    return text.split(/[?#]/, 1)[0] ?? '';
  }
}

/** Dead-lettered jobs looked at per listing, newest first (BullMQ keeps them for the retention). */
const DEAD_LETTER_SCAN = 1000;

const TYPES: Record<CallbackEventName, string> = {
  finished: 'run.finished',
  awaiting_approval: 'run.awaiting_approval',
  workflow_finished: 'workflow.finished',
};

/** The events a run's callback gets when it names none. */
const DEFAULT_EVENTS: readonly CallbackEventName[] = ['finished'];
/** The events a workflow's callback gets when it names none. */
const WORKFLOW_EVENTS: readonly CallbackEventName[] = ['workflow_finished'];

function createCallbackMetrics(registry: Registry) {
  return {
    deliveries: new Counter({
      name: 'agent_reach_callback_deliveries_total',
      help: 'Callback delivery attempts by event and outcome (delivered, retried, dead_lettered)',
      labelNames: ['event', 'outcome'] as const,
      registers: [registry],
    }),
  };
}

/**
 * Callback deliveries: a BullMQ queue of their own (`callbacks`), retried with exponential backoff and
 * dead-lettered after the last attempt, with each delivery's state kept beside the run. `notify` is
 * what the rooms above call; `startSending` makes this process one of the senders.
 */
export class CallbackDeliveries {
  readonly queue: Queue<DeliveryJob>;
  readonly #runs: Queue<RunJobData>;
  #worker: Worker<DeliveryJob> | undefined;
  readonly #metrics: ReturnType<typeof createCallbackMetrics> | undefined;

  constructor(
    private readonly deps: {
      connection: RedisClient;
      keys: Keys;
      config: CallbackConfig;
      logger: Logger;
      /** Where the delivery counter is registered; none: not counted (an API-only process). */
      metricsRegistry?: Registry;
    },
  ) {
    const { connection, keys } = deps;
    this.queue = new Queue<DeliveryJob>(CALLBACK_QUEUE, {
      connection,
      prefix: keys.queuePrefix(CALLBACK_QUEUE),
    });
    this.#runs = new Queue<RunJobData>(keys.runsQueue, {
      connection,
      prefix: keys.queuePrefix(keys.runsQueue),
    });
    this.#metrics = deps.metricsRegistry ? createCallbackMetrics(deps.metricsRegistry) : undefined;
  }

  /**
   * Queues the delivery of an event when the run's callback asks for it. Its id derives from the run, the
   * event and the occurrence: handing the same event over twice queues it once.
   */
  async notify(input: CallbackEventInput): Promise<void> {
    const spec = input.callback
      ? { callback: input.callback, key: input.key }
      : await this.#lookup(input.runId);
    const callback = spec?.callback;
    const defaults = input.event === 'workflow_finished' ? WORKFLOW_EVENTS : DEFAULT_EVENTS;
    if (!callback || !(callback.events ?? defaults).includes(input.event)) return;
    const key = spec.key;
    const id = `msg_${createHash('sha256')
      .update(`${input.runId}\n${input.event}\n${input.occurrence ?? ''}`)
      .digest('hex')
      .slice(0, 32)}`;
    const type = TYPES[input.event];
    const body = JSON.stringify({ type, timestamp: new Date().toISOString(), data: input.data });
    const { config } = this.deps;
    // Written first only when absent: a repeat must not set a delivered event back to pending.
    await this.deps.connection.hsetnx(
      this.#stateKey(input.runId),
      id,
      JSON.stringify({ id, event: type, state: 'pending', attempts: 0, updated_at: Date.now() }),
    );
    await this.deps.connection.expire(this.#stateKey(input.runId), config.retentionS);
    await this.queue.add(
      type,
      { id, run_id: input.runId, type, url: callback.url, ...(key ? { key } : {}), body },
      {
        jobId: id,
        attempts: config.maxAttempts,
        backoff: { type: 'exponential', delay: config.backoffMs },
        removeOnComplete: { age: config.retentionS },
        removeOnFail: { age: config.retentionS },
      },
    );
  }

  /**
   * Dead-lettered deliveries of callbacks the key `key` asked for (undefined: runs started through Redis,
   * without a key), newest first, at most `limit`: a delivery belongs to the key whose secret signs it.
   */
  async deadLetters(key: string | undefined, limit = 100): Promise<DeadLetteredDelivery[]> {
    const jobs = await this.queue.getFailed(0, DEAD_LETTER_SCAN - 1);
    return jobs
      .filter((job) => job?.data && job.data.key === key)
      .sort((a, b) => (b.finishedOn ?? 0) - (a.finishedOn ?? 0))
      .slice(0, limit)
      .map((job) => {
        return {
          id: job.data.id,
          run_id: job.data.run_id,
          event: job.data.type,
          url: withoutQuery(job.data.url),
          attempts: job.attemptsMade,
          last_error: job.failedReason ?? '',
          dead_lettered_at: job.finishedOn ?? job.timestamp,
        };
      });
  }

  /**
   * Queues a dead-lettered delivery again with all its attempts (same id and body, so a receiver that
   * took it after all can tell): only the key that asked for the callback may, and only a dead letter.
   */
  async redeliver(id: string, key: string | undefined): Promise<RedeliverOutcome> {
    const job = await this.queue.getJob(id);
    if (!job?.data || job.data.key !== key) return 'not_found';
    if ((await job.getState()) !== 'failed') return 'not_dead_lettered';
    await this.deps.connection.hset(
      this.#stateKey(job.data.run_id),
      id,
      JSON.stringify({
        id,
        event: job.data.type,
        state: 'pending',
        attempts: 0,
        updated_at: Date.now(),
      } satisfies DeliveryState),
    );
    await this.deps.connection.expire(this.#stateKey(job.data.run_id), this.deps.config.retentionS);
    await job.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true });
    return 'queued';
  }

  /** The deliveries of a run, oldest first. */
  async deliveries(runId: string): Promise<DeliveryState[]> {
    const all = await this.deps.connection.hgetall(this.#stateKey(runId));
    return Object.values(all)
      .map((v) => JSON.parse(v) as DeliveryState)
      .sort((a, b) => a.updated_at - b.updated_at);
  }

  /**
   * Records the callback of something that is not a run (a workflow), under its id, for as long as
   * deliveries are kept: `notify` and `callbackOf` find it there. Before it can end: before it starts.
   */
  async register(id: string, callback: RunCallback, key: string | undefined): Promise<void> {
    await this.deps.connection.set(
      this.#specKey(id),
      JSON.stringify({ callback, ...(key ? { key } : {}) }),
      'EX',
      this.deps.config.retentionS,
    );
  }

  /** The callback a run's job (or a registered workflow) asked for, if any. */
  async callbackOf(id: string): Promise<RunCallback | undefined> {
    return (await this.#lookup(id))?.callback;
  }

  async #lookup(id: string): Promise<{ callback: RunCallback; key?: string | undefined } | undefined> {
    const registered = await this.deps.connection.get(this.#specKey(id));
    if (registered) return JSON.parse(registered) as { callback: RunCallback; key?: string };
    const data = (await this.#runs.getJob(id))?.data;
    return data?.callback ? { callback: data.callback, key: data.key } : undefined;
  }

  #specKey(id: string): string {
    return `${this.deps.keys.prefix}:callback-spec:${id}`;
  }

  /** Makes this process a sender: a worker on the callbacks queue. */
  startSending(): void {
    if (this.#worker) return;
    const { connection, keys, config } = this.deps;
    // BullMQ makes its own blocking duplicate of the connection.
    this.#worker = new Worker<DeliveryJob>(CALLBACK_QUEUE, (job) => this.#attempt(job), {
      connection,
      prefix: keys.queuePrefix(CALLBACK_QUEUE),
      concurrency: config.concurrency,
    });
    this.#worker.on('error', (err) => this.deps.logger.warn({ err }, 'callback worker error'));
    this.#worker.on('failed', (job, err) => void this.#onFailed(job, err));
  }

  async close(): Promise<void> {
    await this.#worker?.close();
    await this.queue.close();
    await this.#runs.close();
  }

  #stateKey(runId: string): string {
    return `${this.deps.keys.prefix}:callbacks:${runId}`;
  }

  /** Writes a delivery's state after an attempt and counts the attempt by its outcome. */
  async #record(
    d: DeliveryJob,
    state: DeliveryState['state'],
    attempts: number,
    result: AttemptResult,
  ): Promise<void> {
    await this.deps.connection.hset(
      this.#stateKey(d.run_id),
      d.id,
      JSON.stringify({
        id: d.id,
        event: d.type,
        state,
        attempts,
        ...(result.status === undefined ? {} : { last_status: result.status }),
        ...(result.error ? { last_error: result.error } : {}),
        updated_at: Date.now(),
      } satisfies DeliveryState),
    );
    this.#metrics?.deliveries.inc({ event: d.type, outcome: state === 'pending' ? 'retried' : state });
  }

  /**
   * A job BullMQ failed for good without an attempt saying so (stalled too often: its scheduler died
   * mid-attempt, again and again): dead-lettered, so its state does not stay pending.
   */
  async #onFailed(job: Job<DeliveryJob> | undefined, err: Error): Promise<void> {
    if (!job || err.name === 'UnrecoverableError') return;
    if (job.attemptsMade < (job.opts.attempts ?? 1) && !/stalled/i.test(err.message)) return;
    const current = await this.deps.connection.hget(this.#stateKey(job.data.run_id), job.data.id);
    if (current && (JSON.parse(current) as DeliveryState).state !== 'pending') return;
    await this.#record(job.data, 'dead_lettered', job.attemptsMade, {
      status: undefined,
      ok: false,
      error: err.message,
    }).catch((e: unknown) =>
      this.deps.logger.warn({ err: e }, 'recording a failed callback delivery failed'),
    );
  }

  /** One attempt of a delivery: its state recorded, a retry left to BullMQ, the last one dead-lettered. */
  async #attempt(job: Job<DeliveryJob>): Promise<void> {
    const { config, logger } = this.deps;
    const d = job.data;
    const attempts = job.attemptsMade + 1;
    const log = logger.child({ runId: d.run_id, deliveryId: d.id, attempt: attempts });
    const secret = secretFor(config, d.key);
    let result: AttemptResult;
    let final = attempts >= (job.opts.attempts ?? 1);
    if (secret === undefined) {
      result = { status: undefined, ok: false, error: `no signing secret for key "${d.key ?? '(none)'}"` };
      final = true;
    } else {
      try {
        result = await sendDelivery(d, secret, {
          allowedHosts: config.allowedHosts,
          timeoutMs: config.timeoutMs,
        });
      } catch (err) {
        if (!(err instanceof CallbackRefused)) throw err;
        result = { status: undefined, ok: false, error: err.message };
        // A URL refused now (its host resolves to a private address) is refused for good; a host that
        // does not resolve is tried again.
        if (!(err instanceof HostUnresolved)) final = true;
      }
    }
    await this.#record(d, result.ok ? 'delivered' : final ? 'dead_lettered' : 'pending', attempts, result);
    if (result.ok) return;
    const fields = { status: result.status, error: result.error };
    if (final) {
      log.error(fields, 'callback delivery dead-lettered');
      throw new UnrecoverableError(result.error ?? 'delivery failed');
    }
    log.warn(fields, 'callback delivery failed; retried after its backoff');
    throw new Error(result.error ?? 'delivery failed');
  }
}
