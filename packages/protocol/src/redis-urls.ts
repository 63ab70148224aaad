// What every caller of the platform's Redis agrees on without needing a connection: where a `REDIS_URL`
// points, how it is shown, how long to wait for it. Pure, so that the client (which must not depend on
// the Node runtime kit) reconnects and reports exactly as the platform's own processes do.

/** Reconnect backoff of every Redis connection: doubles from the first delay up to the cap. */
export const REDIS_RECONNECT_FIRST_DELAY_MS = 100;
export const REDIS_RECONNECT_MAX_DELAY_MS = 5000;
/** How long a one-off caller (`enqueueRun`, the CLI) waits for Redis before reporting it unreachable. */
export const DEFAULT_REDIS_READY_TIMEOUT_MS = 3000;

/** The node URLs of a `REDIS_URL`: one, or several separated by commas (a cluster's startup nodes). */
export function redisNodeUrls(url: string): string[] {
  return url
    .split(',')
    .map((u) => u.trim())
    .filter(Boolean);
}

/**
 * A URL with its password (and any credentials in the query) replaced by `***`, for messages and logs.
 * Text that is not a URL is returned with anything between `//` and `@` masked.
 */
export function maskUrl(url: string): string {
  if (url.includes(',')) return redisNodeUrls(url).map(maskUrl).join(',');
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
