import { Redis, type RedisOptions } from 'ioredis';

/**
 * Redis connections for the two roles BullMQ distinguishes:
 * - `worker`: blocking commands, must never give up (`maxRetriesPerRequest: null`), reconnects forever;
 * - `producer`: fails fast so a caller learns at once that Redis is away instead of queueing commands.
 */
export function createRedis(url: string, role: 'worker' | 'producer', options: RedisOptions = {}): Redis {
  const base: RedisOptions =
    role === 'worker'
      ? { maxRetriesPerRequest: null, enableReadyCheck: true }
      : { maxRetriesPerRequest: 1, enableOfflineQueue: false, connectTimeout: 5000 };
  return new Redis(url, { ...base, ...options, lazyConnect: options.lazyConnect ?? false });
}

/** Waits for a connection to be ready, or rejects with a message naming the URL. */
export async function waitReady(redis: Redis, url: string, timeoutMs = 5000): Promise<void> {
  if (redis.status === 'ready') return;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`Redis at ${url} did not answer within ${timeoutMs} ms`));
    }, timeoutMs);
    const onReady = () => {
      cleanup();
      resolve();
    };
    const cleanup = () => {
      clearTimeout(timer);
      redis.off('ready', onReady);
    };
    redis.on('ready', onReady);
  });
}
