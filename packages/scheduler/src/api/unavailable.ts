export { redisUnavailable } from '@agent-reach/shared';

/** An error of a Redis call that took longer than the API waits. */
export class RedisTimeoutError extends Error {
  constructor(ms: number) {
    super(`Redis did not answer within ${ms} ms`);
    this.name = 'RedisTimeoutError';
  }
}

/**
 * Rejects after `ms` when `promise` has not settled: for calls on connections that queue commands
 * through an outage (the scheduler's own), which would otherwise hold a request until Redis returns.
 */
export function withinRedisTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new RedisTimeoutError(ms)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
