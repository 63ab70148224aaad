import { duplicateRedis, type RedisClient } from '@agent-reach/shared';

/**
 * A connection for a BullMQ worker beside an API connection that fails fast: the same server (or
 * cluster), without a command timeout (a worker blocks on Redis), with commands queued and retried
 * through a reconnect.
 */
export function connectionOf(redis: RedisClient): RedisClient {
  return duplicateRedis(redis, {
    commandTimeout: undefined,
    maxRetriesPerRequest: null,
    enableOfflineQueue: true,
  });
}
