import { TIMED_OUT, waitAtMost } from '@agent-reach/shared';
import { ArchiveUnavailable } from '../runs/run-archive.js';

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

/**
 * Why the run archive could not answer a read, in a few words naming PostgreSQL, or undefined for any other
 * error. Such a request is answered 503 UNAVAILABLE with `Retry-After` (never a 500: a slow archive read
 * times out into this).
 */
export function archiveUnavailable(error: unknown): string | undefined {
  for (let e = error, depth = 0; e && typeof e === 'object' && depth < 5; depth += 1) {
    if (e instanceof ArchiveUnavailable)
      return 'the run archive (PostgreSQL) cannot be reached or did not answer in time';
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}
