import { Redis, type RedisOptions } from 'ioredis';
import { REDIS_RECONNECT_FIRST_DELAY_MS, REDIS_RECONNECT_MAX_DELAY_MS } from './constants.js';
import { createLogger, type Logger } from './logger.js';

/** Options of `createRedis`: ioredis's, plus where connection events are logged. */
export interface CreateRedisOptions extends RedisOptions {
  /** Logs one structured line per connection error and one when the connection is back. Default: a `redis` logger. */
  logger?: Logger;
}

/**
 * A URL with its password (and any credentials in the query) replaced by `***`, for messages and logs.
 * Text that is not a URL is returned with anything between `//` and `@` masked.
 */
export function maskUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    for (const key of [...u.searchParams.keys()]) {
      if (/pass|secret|token|key/i.test(key)) u.searchParams.set(key, '***');
    }
    return u.toString();
  } catch {
    return url.replace(/\/\/[^@/]*@/, '//***@');
  }
}

/** Delay before reconnect attempt `attempt` (1-based): doubles from 100 ms, capped at 5 s. */
export function reconnectDelayMs(attempt: number): number {
  const exponent = Math.min(Math.max(attempt, 1) - 1, 30);
  return Math.min(REDIS_RECONNECT_FIRST_DELAY_MS * 2 ** exponent, REDIS_RECONNECT_MAX_DELAY_MS);
}

/** The error's fields worth a log line: never the stack, never a password. */
function errorFields(err: Error & { code?: string; syscall?: string; address?: string; port?: number }) {
  return {
    ...(err.code ? { code: err.code } : {}),
    ...(err.syscall ? { syscall: err.syscall } : {}),
    message: maskUrl(err.message),
  };
}

/**
 * An ioredis client whose duplicates (BullMQ's blocking connections, subscribers, the project's own
 * readers) carry the same error handling: ioredis copies options to a duplicate but not listeners, and
 * a client with no `error` listener prints raw stack traces.
 */
class ObservedRedis extends Redis {
  readonly #logger: Logger;
  readonly #label: string;

  constructor(target: { url: string; options: RedisOptions } | RedisOptions, logger: Logger, label: string) {
    if ('url' in target && typeof target.url === 'string') super(target.url, target.options);
    else super(target as RedisOptions);
    this.#logger = logger;
    this.#label = label;
    let failures = 0;
    let downSince = 0;
    this.on('error', (err: Error) => {
      failures++;
      downSince ||= Date.now();
      this.#logger.warn(
        {
          redis: this.#label,
          connection: this.options.connectionName,
          attempt: failures,
          err: errorFields(err),
        },
        'redis connection error',
      );
    });
    this.on('ready', () => {
      if (failures > 0) {
        this.#logger.info({ ...this.#where(), downMs: Date.now() - downSince }, 'redis connection restored');
      }
      failures = 0;
      downSince = 0;
    });
  }

  #where(): { redis: string; connection?: string } {
    const name = this.options.connectionName;
    return { redis: this.#label, ...(name ? { connection: name } : {}) };
  }

  override duplicate(override?: Partial<RedisOptions>): Redis {
    return new ObservedRedis({ ...this.options, ...override }, this.#logger, this.#label);
  }
}

/**
 * Redis connections for the two roles BullMQ distinguishes:
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
  const { logger, ...rest } = options;
  const base: RedisOptions =
    role === 'worker'
      ? { maxRetriesPerRequest: null, enableReadyCheck: true }
      : { maxRetriesPerRequest: 1, enableOfflineQueue: false, connectTimeout: 5000 };
  return new ObservedRedis(
    {
      url,
      options: { retryStrategy: reconnectDelayMs, ...base, ...rest, lazyConnect: rest.lazyConnect ?? false },
    },
    logger ?? createLogger('redis'),
    maskUrl(url),
  );
}

/**
 * Waits for a connection to be ready, or rejects with one message naming the URL (password masked), the
 * last connection error and what to check.
 */
export async function waitReady(redis: Redis, url: string, timeoutMs = 5000): Promise<void> {
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
