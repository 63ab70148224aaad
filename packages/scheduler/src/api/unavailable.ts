import { TIMED_OUT, waitAtMost } from '@agent-reach/shared';

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
export async function withinRedisTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  const answer = await waitAtMost(promise, ms);
  if (answer === TIMED_OUT) throw new RedisTimeoutError(ms);
  return answer;
}
