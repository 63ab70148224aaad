import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import {
  CALLBACK_EVENTS,
  MAX_CALLBACK_URL_CHARS,
  type RunCallback,
  type RunVariant,
  DEFAULT_KEY_PREFIX,
  DEFAULT_REDIS_READY_TIMEOUT_MS,
  createKeys,
  isValidRunId,
  maskUrl,
  reconnectDelayMs,
  RESERVED_RUN_IDS,
  RUN_ID_PATTERN,
  runJob,
  runJobOptions,
  TENANT_PATTERN,
  TRACEPARENT_PATTERN,
  newRunId,
} from '@agent-reach/protocol';
import { AgentReachApiError } from './errors.js';

/**
 * What a job on `agent-runs` carries besides its version and run id (the job schema of docs/api.md), in this
 * API's camelCase; the job itself is written in the wire's snake_case.
 */
export interface RunJobFields {
  agent: string;
  input: string;
  sessionId?: string;
  /** The model to use instead of the scheduler's default. */
  model?: string;
  traceId?: string;
  /**
   * The caller's span, as a W3C `traceparent` (`00-<trace id>-<span id>-<flags>`): the run joins that
   * trace (its trace id is the traceparent's unless `traceId` says the same) and its root span is a child
   * of that span.
   */
  traceParent?: string;
  metadata?: Record<string, string>;
  /** The tenant the run belongs to (`[a-z0-9][a-z0-9_-]{0,39}`): only API keys of it see the run. Default `default`. */
  tenant?: string;
  /**
   * JSON Schema the final answer must match, instead of the agent's `output_schema`: the run's `output`
   * is the parsed answer. One that is not an object is refused here; one the scheduler cannot compile
   * ends the run `failed` with reason `invalid_job`, its report naming the problem.
   */
  outputSchema?: object;
  /**
   * Signed deliveries of the run's events to an http(s) URL (docs/callbacks.md): `events` of `finished`,
   * `awaiting_approval` (default: `finished`). Runs started through Redis are signed with the secret the
   * operator names `*` in `CALLBACK_SECRETS`; the sender refuses a URL that resolves to a loopback, private
   * or link-local address unless `CALLBACK_ALLOWED_HOSTS` names its host. Check deliveries with
   * `verifyWebhook`.
   */
  callback?: RunCallback;
  /**
   * Overrides of the agent's configuration for this run only (docs/api.md#variants). The scheduler checks
   * it when it takes the run: one that does not pass ends the run `failed` with reason `invalid_job`.
   */
  variant?: RunVariant;
}

export interface EnqueueRunOptions extends RunJobFields {
  /** A connection to reuse (left open), or… */
  connection?: Redis;
  /** …a Redis URL to connect to for this call. */
  redisUrl?: string;
  /** The platform's key prefix (`AR_KEY_PREFIX`), which is also BullMQ's prefix. Default `ar`. */
  prefix?: string;
  /** The run id and job id. Default `run_<uuid>`. */
  runId?: string;
  /** How long BullMQ keeps the finished job, in seconds. Default: the platform's run retention (7 days). */
  retentionS?: number;
  /**
   * How long to wait for Redis to answer before rejecting with `REDIS_UNAVAILABLE`, in milliseconds.
   * Default 3000.
   */
  readyTimeoutMs?: number;
}

export { RUN_ID_PATTERN, RESERVED_RUN_IDS, runJobOptions };

/**
 * {@link EnqueueRunOptions} checked and with every default filled in. `connection` is the caller's (left
 * open), or undefined when the call connects to `redisUrl` itself.
 */
export interface ResolvedEnqueueRunOptions extends Omit<RunJobFields, 'outputSchema'> {
  runId: string;
  connection: Redis | undefined;
  /** The URL connected to, or the caller's connection's target (for messages). */
  redisUrl: string;
  prefix: string;
  retentionS: number | undefined;
  readyTimeoutMs: number;
  /** The schema's JSON text, parsed. */
  outputSchema: Record<string, unknown> | undefined;
}

/** Checks the options (a TypeError naming the problem) and fills in every default. */
export function resolveEnqueueRunOptions(o: EnqueueRunOptions): ResolvedEnqueueRunOptions {
  const runId = o.runId ?? newRunId();
  if (!isValidRunId(runId))
    throw new TypeError(`runId must match ${RUN_ID_PATTERN} and not be one of BullMQ's key names`);
  if (typeof o.agent !== 'string' || !o.agent) throw new TypeError('agent is required');
  if (typeof o.input !== 'string' || !o.input.trim()) throw new TypeError('input must be a non-empty string');
  if (!o.connection && !o.redisUrl) throw new TypeError('pass a connection or a redisUrl');
  if (o.tenant !== undefined && !TENANT_PATTERN.test(o.tenant))
    throw new TypeError(`tenant must match ${TENANT_PATTERN}`);
  if (o.callback !== undefined) checkCallback(o.callback);
  return {
    ...o,
    runId,
    connection: o.connection,
    redisUrl: o.redisUrl ?? describe(o.connection as Redis),
    prefix: o.prefix ?? DEFAULT_KEY_PREFIX,
    retentionS: o.retentionS,
    readyTimeoutMs: o.readyTimeoutMs ?? DEFAULT_REDIS_READY_TIMEOUT_MS,
    outputSchema: jsonSchemaOf(o.outputSchema),
    traceId: traceOf(o.traceId, o.traceParent),
  };
}

/** A callback's URL http(s) and of bounded length, its events known and each named once (a TypeError otherwise). */
function checkCallback(callback: RunCallback): void {
  const { url, events } = callback;
  if (typeof url !== 'string' || !/^https?:\/\//.test(url) || url.length > MAX_CALLBACK_URL_CHARS)
    throw new TypeError(
      `callback.url must be an http(s) URL of at most ${MAX_CALLBACK_URL_CHARS} characters`,
    );
  if (
    events !== undefined &&
    (!Array.isArray(events) ||
      events.length === 0 ||
      new Set(events).size !== events.length ||
      !events.every((e) => (CALLBACK_EVENTS as readonly string[]).includes(e)))
  )
    throw new TypeError(`callback.events must name each of ${CALLBACK_EVENTS.join(', ')} at most once`);
}

function jsonSchemaOf(schema: object | undefined): Record<string, unknown> | undefined {
  if (schema === undefined) return undefined;
  // Its JSON text: a TypeBox schema's symbol keys are not part of it.
  const json = JSON.parse(JSON.stringify(schema)) as Record<string, unknown>;
  if (typeof json !== 'object' || Array.isArray(json))
    throw new TypeError('outputSchema must be a JSON Schema object');
  return json;
}

/** The run's trace id: the one given, else the caller's span's (the two must agree). */
function traceOf(traceId: string | undefined, traceParent: string | undefined): string | undefined {
  const parentTrace =
    traceParent !== undefined && TRACEPARENT_PATTERN.test(traceParent)
      ? traceParent.split('-')[1]
      : undefined;
  if (traceParent !== undefined && !parentTrace)
    throw new TypeError(`traceParent must be a W3C traceparent matching ${TRACEPARENT_PATTERN}`);
  if (parentTrace && traceId !== undefined && traceId !== parentTrace)
    throw new TypeError(
      `traceId ${traceId} is not the trace of traceParent (${parentTrace}): a run has one trace`,
    );
  return traceId ?? parentTrace;
}

/**
 * Starts a run without the HTTP API: adds its job straight onto the `agent-runs` queue, exactly as the
 * API does. Adding the same run id twice starts it once. Returns the run id. When Redis does not answer
 * within `readyTimeoutMs` it rejects with one `AgentReachApiError` (`REDIS_UNAVAILABLE`, status 0)
 * naming the URL with its password masked, and prints nothing.
 */
export async function enqueueRun(options: EnqueueRunOptions): Promise<{ runId: string }> {
  const o = resolveEnqueueRunOptions(options);
  const keys = createKeys(o.prefix);
  const url = o.redisUrl;
  const connection = o.connection ?? connect(url);
  let queue: Queue | undefined;
  try {
    await ready(connection, url, o.readyTimeoutMs);
    queue = new Queue(keys.runsQueue, { connection, prefix: keys.queuePrefix(keys.runsQueue) });
    // Connection errors are reported by the rejection below, not as an unhandled 'error' event.
    queue.on('error', () => undefined);
    const data = runJob({
      run_id: o.runId,
      agent: o.agent,
      input: o.input,
      session_id: o.sessionId,
      model: o.model,
      trace_id: o.traceId,
      trace_parent: o.traceParent,
      metadata: o.metadata,
      tenant: o.tenant,
      output_schema: o.outputSchema,
      callback: o.callback,
      variant: o.variant,
    });
    await queue.add('run', data, runJobOptions(o.runId, o.retentionS)).catch((err: unknown) => {
      throw unavailable(url, `adding the run's job failed (${(err as Error).message})`, err);
    });
    return { runId: o.runId };
  } finally {
    await queue?.close().catch(() => undefined);
    if (!o.connection) connection.disconnect();
  }
}

function unavailable(url: string, what: string, cause?: unknown): AgentReachApiError {
  return new AgentReachApiError({
    status: 0,
    code: 'REDIS_UNAVAILABLE',
    message: `Redis at ${maskUrl(url)}: ${maskUrl(what)}`,
    ...(cause === undefined ? {} : { cause }),
  });
}

/**
 * Resolves once the connection is ready, or rejects after `timeoutMs` with one `REDIS_UNAVAILABLE` error
 * naming the URL (password masked), the last connection error and what to check: the words of the
 * platform processes' own wait, which lives in their runtime kit, a package this client does not install.
 */
async function ready(redis: Redis, url: string, timeoutMs: number): Promise<void> {
  if (redis.status === 'ready') return;
  let last: Error | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let onReady: (() => void) | undefined;
  const onError = (err: Error) => (last = err);
  redis.on('error', onError);
  try {
    await new Promise<void>((resolve, reject) => {
      onReady = resolve;
      redis.once('ready', onReady);
      timer = setTimeout(() => {
        const why = last ? ` (last error: ${maskUrl(last.message)})` : '';
        const check = `Check that Redis is running and reachable from here, and that the URL's host, port and password are right.`;
        const message = `Redis at ${maskUrl(url)} did not answer within ${timeoutMs} ms${why}. ${check}`;
        reject(new AgentReachApiError({ status: 0, code: 'REDIS_UNAVAILABLE', message, cause: last }));
      }, timeoutMs);
    });
  } finally {
    clearTimeout(timer);
    if (onReady) redis.off('ready', onReady);
    redis.off('error', onError);
  }
}

/**
 * A connection that fails fast and reconnects with the platform's backoff, and logs nowhere: the caller
 * gets one error instead (plain ioredis, so this entry point needs no logger).
 */
function connect(url: string): Redis {
  const redis = new Redis(url, {
    retryStrategy: reconnectDelayMs,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
  });
  // ready() reports the last connection error; without a listener ioredis would print each one.
  redis.on('error', () => undefined);
  return redis;
}

/** A connection's target for messages (its options hold no URL). */
function describe(redis: Redis): string {
  const { host, port, db } = redis.options;
  return `redis://${host ?? '127.0.0.1'}:${port ?? 6379}/${db ?? 0}`;
}
