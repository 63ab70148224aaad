import type { RedisClient } from '@agent-reach/shared';

type Duplicate = (override: Record<string, unknown>) => RedisClient;

/**
 * A connection for a BullMQ worker beside an API connection that fails fast: the same server, without a
 * command timeout (a worker blocks on Redis) and with commands retried through a reconnect.
 */
export function connectionOf(redis: RedisClient): RedisClient {
  return (redis.duplicate as Duplicate).call(redis, {
    commandTimeout: undefined,
    maxRetriesPerRequest: null,
  });
}
