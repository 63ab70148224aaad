/** What {@link waitAtMost} gives when the promise has not settled in time. */
export const TIMED_OUT: unique symbol = Symbol('timed out');

/**
 * `promise`'s value, or {@link TIMED_OUT} when it has not settled within `ms` (a negative `ms` is 0). A
 * rejection within `ms` is passed on. The timer is cleared as soon as the wait ends, so it never holds
 * the process up.
 */
export async function waitAtMost<T>(promise: PromiseLike<T>, ms: number): Promise<T | typeof TIMED_OUT> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<typeof TIMED_OUT>((resolve) => {
    timer = setTimeout(() => resolve(TIMED_OUT), Math.max(0, ms));
  });
  try {
    return await Promise.race([promise, expired]);
  } finally {
    clearTimeout(timer);
  }
}
