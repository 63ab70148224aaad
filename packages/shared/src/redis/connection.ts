import { Cluster, Redis, type ClusterNode, type ClusterOptions, type RedisOptions } from 'ioredis';
import { maskUrl, reconnectDelayMs, redisNodeUrls } from '@agent-reach/protocol';
import { createLogger, type Logger } from '../observability/logger.js';
import { coalesceWrites } from './coalesce-writes.js';

/** A connection to one Redis or to a Redis Cluster. */
export type RedisClient = Redis | Cluster;

/** Options of `createRedis`: ioredis's, plus where connection events are logged. */
export interface CreateRedisOptions extends RedisOptions {
  /** Logs one structured line per connection error and one when the connection is back. Default: a `redis` logger. */
  logger?: Logger;
  /**
   * Connects to a Redis Cluster, the URL's nodes being where discovery starts. Default: true when the
   * URL lists more than one node.
   */
  cluster?: boolean;
  /**
   * Sends the commands issued by one callback and the promise callbacks it queued in one socket write (see
   * `coalesceWrites`), on this connection and on its duplicates (BullMQ's among them). Default: true.
   */
  coalesceWrites?: boolean;
}

/** Coalesces the writes of every socket `client` connects with (ioredis makes a new one per connect). */
function coalesceSockets(client: Redis): void {
  const coalesced = new WeakSet<object>();
  const apply = () => {
    const socket = client.stream;
    if (!socket || coalesced.has(socket)) return;
    coalesced.add(socket);
    coalesceWrites(socket);
  };
  client.on('connect', apply);
  if (client.status === 'connect' || client.status === 'ready') apply();
}

/** The error's fields worth a log line: never the stack, never a password. */
function errorFields(err: Error & { code?: string; syscall?: string; address?: string; port?: number }) {
  return {
    ...(err.code ? { code: err.code } : {}),
    ...(err.syscall ? { syscall: err.syscall } : {}),
    message: maskUrl(err.message),
  };
}

/** Logs a connection's errors as one structured line each, and the moment it is back. */
function observe(client: RedisClient, logger: Logger, where: () => Record<string, unknown>): void {
  let failures = 0;
  let downSince = 0;
  client.on('error', (err: Error) => {
    failures++;
    downSince ||= Date.now();
    logger.warn({ ...where(), attempt: failures, err: errorFields(err) }, 'redis connection error');
  });
  client.on('ready', () => {
    if (failures > 0)
      logger.info({ ...where(), downMs: Date.now() - downSince }, 'redis connection restored');
    failures = 0;
    downSince = 0;
  });
}

/**
 * An ioredis client whose duplicates (BullMQ's blocking connections, subscribers, the project's own
 * readers) carry the same error handling: ioredis copies options to a duplicate but not listeners, and
 * a client with no `error` listener prints raw stack traces.
 */
class ObservedRedis extends Redis {
  readonly #logger: Logger;
  readonly #label: string;
  readonly #coalesce: boolean;

  constructor(
    target: { url: string; options: RedisOptions } | RedisOptions,
    logger: Logger,
    label: string,
    coalesce: boolean,
  ) {
    if ('url' in target && typeof target.url === 'string') super(target.url, target.options);
    else super(target as RedisOptions);
    this.#logger = logger;
    this.#label = label;
    this.#coalesce = coalesce;
    if (coalesce) coalesceSockets(this);
    observe(this, logger, () => {
      const name = this.options.connectionName;
      return { redis: label, ...(name ? { connection: name } : {}) };
    });
  }

  override duplicate(override?: Partial<RedisOptions>): Redis {
    return new ObservedRedis({ ...this.options, ...override }, this.#logger, this.#label, this.#coalesce);
  }
}

/** The cluster counterpart of `ObservedRedis`: its duplicates (BullMQ's among them) are observed too. */
class ObservedCluster extends Cluster {
  readonly #nodes: ClusterNode[];
  readonly #logger: Logger;
  readonly #label: string;
  readonly #coalesce: boolean;

  constructor(
    nodes: ClusterNode[],
    options: ClusterOptions,
    logger: Logger,
    label: string,
    coalesce: boolean,
  ) {
    super(nodes, options);
    this.#nodes = nodes;
    this.#logger = logger;
    this.#label = label;
    this.#coalesce = coalesce;
    // Each node's connection is made by the cluster client itself, as nodes are discovered.
    if (coalesce) this.on('+node', (node: Redis) => coalesceSockets(node));
    observe(this, logger, () => {
      const name = this.options.redisOptions?.connectionName;
      return { redis: label, cluster: true, ...(name ? { connection: name } : {}) };
    });
  }

  override duplicate(nodes: ClusterNode[] = [], override: Partial<ClusterOptions> = {}): Cluster {
    return new ObservedCluster(
      nodes.length > 0 ? nodes : this.#nodes.slice(0),
      { ...this.options, ...override },
      this.#logger,
      this.#label,
      this.#coalesce,
    );
  }
}

/** Whether a client is a Redis Cluster client (commands on different slots go to different nodes). */
export function isCluster(client: RedisClient): client is Cluster {
  return client instanceof Cluster;
}

/** The connections to every master: the one Redis, or each master of a cluster known to the client. */
export function redisMasters(client: RedisClient): Redis[] {
  return isCluster(client) ? client.nodes('master') : [client];
}

/**
 * A second connection like `client` (same target, options and logging) with some connection options
 * changed: readers that block or subscribe need one of their own. A cluster client takes them as the
 * options of each node's connection, and `enableOfflineQueue` for the cluster as well.
 */
export function duplicateRedis(client: RedisClient, override: Partial<RedisOptions> = {}): RedisClient {
  if (!isCluster(client)) return client.duplicate(override);
  return client.duplicate(undefined, {
    redisOptions: { ...client.options.redisOptions, ...override },
    ...(override.enableOfflineQueue === undefined ? {} : { enableOfflineQueue: override.enableOfflineQueue }),
  });
}

/**
 * The options of a cluster client from those of a single connection: each node's connection gets them,
 * and the few that ioredis reads at the cluster level (offline queue, ready check, lazy connect,
 * reconnection) are set there as well. Credentials and TLS come from the first node URL.
 */
function clusterOptions(url: string, options: RedisOptions): ClusterOptions {
  const { enableOfflineQueue, enableReadyCheck, lazyConnect, retryStrategy, ...perNode } = options;
  const first = new URL(redisNodeUrls(url)[0] ?? url);
  const credentials = {
    ...(first.username ? { username: decodeURIComponent(first.username) } : {}),
    ...(first.password ? { password: decodeURIComponent(first.password) } : {}),
    ...(first.protocol === 'rediss:' ? { tls: {} } : {}),
  };
  return {
    redisOptions: { ...credentials, ...perNode },
    ...(enableOfflineQueue === undefined ? {} : { enableOfflineQueue }),
    ...(enableReadyCheck === undefined ? {} : { enableReadyCheck }),
    ...(lazyConnect === undefined ? {} : { lazyConnect }),
    ...(retryStrategy ? { clusterRetryStrategy: (times: number) => retryStrategy(times) } : {}),
  };
}

/**
 * A connection to one Redis for the two roles BullMQ distinguishes:
 * - `worker`: blocking commands, must never give up (`maxRetriesPerRequest: null`), reconnects forever;
 * - `producer`: fails fast so a caller learns at once that Redis is away instead of queueing commands.
 *
 * Both reconnect with capped exponential backoff (`reconnectDelayMs`) and log each connection error as
 * one structured line with the password masked, as do their duplicates.
 */
export function createRedis(
  url: string,
  role: 'worker' | 'producer',
  options: CreateRedisOptions = {},
): Redis {
  const { logger, cluster: _cluster, coalesceWrites: coalesce, ...rest } = options;
  return new ObservedRedis(
    { url, options: connectionOptions(role, rest) },
    logger ?? createLogger('redis'),
    maskUrl(url),
    coalesce ?? true,
  );
}

/**
 * Like `createRedis`, to one Redis or to a Redis Cluster: a cluster client when the URL lists more
 * than one node or `cluster` is set, its startup nodes being the URL's. What every process uses for
 * its own connections (BullMQ's included: a cluster client is a valid BullMQ `connection`).
 */
export function connectRedis(
  url: string,
  role: 'worker' | 'producer',
  options: CreateRedisOptions = {},
): RedisClient {
  const { logger, cluster, coalesceWrites: coalesce, ...rest } = options;
  const nodes = redisNodeUrls(url);
  if (!(cluster ?? nodes.length > 1)) return createRedis(nodes[0] ?? url, role, options);
  return new ObservedCluster(
    nodes,
    clusterOptions(url, connectionOptions(role, rest)),
    logger ?? createLogger('redis'),
    maskUrl(url),
    coalesce ?? true,
  );
}

function connectionOptions(role: 'worker' | 'producer', options: RedisOptions): RedisOptions {
  const base: RedisOptions =
    role === 'worker'
      ? { maxRetriesPerRequest: null, enableReadyCheck: true }
      : { maxRetriesPerRequest: 1, enableOfflineQueue: false, connectTimeout: 5000 };
  return { retryStrategy: reconnectDelayMs, ...base, ...options, lazyConnect: options.lazyConnect ?? false };
}

/**
 * Waits for a connection to be ready, or rejects with one message naming the URL (password masked), the
 * last connection error and what to check.
 */
export async function waitReady(redis: RedisClient, url: string, timeoutMs = 5000): Promise<void> {
  if (redis.status === 'ready') return;
  let last: Error | undefined;
  const onError = (err: Error) => (last = err);
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      cleanup();
      const why = last ? ` (last error: ${maskUrl(last.message)})` : '';
      reject(
        new Error(
          `Redis at ${maskUrl(url)} did not answer within ${timeoutMs} ms${why}. Check that Redis is running ` +
            `and reachable from here, and that the URL's host, port and password are right.`,
          { cause: last },
        ),
      );
    }, timeoutMs);
    const onReady = () => {
      cleanup();
      resolve();
    };
    const cleanup = () => {
      clearTimeout(timer);
      redis.off('ready', onReady);
      redis.off('error', onError);
    };
    redis.on('ready', onReady);
    redis.on('error', onError);
  });
}

/** Redis's refusals of the connection's credentials: a configuration error that no wait mends. */
const CREDENTIALS_REFUSED = /^(WRONGPASS|NOAUTH|NOPERM)\b/;

/**
 * Waits as long as it takes for a connection to be ready: a process started (or restarted by its
 * supervisor) while Redis is away waits for it, the connection retrying with the same capped backoff
 * as its reconnects (`reconnectDelayMs`), instead of exiting. Logs once that it waits and once that
 * Redis answered. Rejects only when Redis refuses the URL's credentials, a configuration error.
 */
export async function waitForRedis(redis: RedisClient, url: string, logger: Logger): Promise<void> {
  if (redis.status === 'ready') return;
  logger.warn({ redis: maskUrl(url) }, 'waiting for Redis');
  await new Promise<void>((resolve, reject) => {
    const onReady = () => {
      cleanup();
      logger.info({ redis: maskUrl(url) }, 'Redis answered');
      resolve();
    };
    const onError = (err: Error) => {
      if (!CREDENTIALS_REFUSED.test(err.message)) return;
      cleanup();
      reject(
        new Error(
          `Redis at ${maskUrl(url)} refused the credentials (${maskUrl(err.message)}): check the URL's user and password.`,
          { cause: err },
        ),
      );
    };
    const cleanup = () => {
      redis.off('ready', onReady);
      redis.off('error', onError);
    };
    redis.on('ready', onReady);
    redis.on('error', onError);
  });
}
