import { MAX_RETRY_AFTER_MS, QUOTA_BACKOFF_FIRST_MS, QUOTA_BACKOFF_MAX_MS } from './constants.js';

/** A `Retry-After` header (seconds or an HTTP date) in ms, or undefined. */
export function retryAfterMs(header: string | null, now = Date.now()): number | undefined {
  if (!header) return undefined;
  if (/^\d+(\.\d+)?$/.test(header.trim())) return Number(header) * 1000;
  const at = Date.parse(header);
  return Number.isFinite(at) ? Math.max(0, at - now) : undefined;
}

const sleep = (ms: number, signal?: AbortSignal | null) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason as Error);
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(t);
      reject(signal.reason as Error);
    });
  });

/**
 * A fetch that waits out the tenant's quota: a 429 (rate limit or quota) is retried after its
 * `Retry-After`, or after a doubling pause when it names none, as often as it takes — an eval's case is
 * never failed for the quota. `onWait` hears of each pause.
 */
export function quotaFetch(inner: typeof fetch = fetch, onWait?: (ms: number) => void): typeof fetch {
  return async (input, init) => {
    let pause = QUOTA_BACKOFF_FIRST_MS;
    for (;;) {
      const res = await inner(input, init);
      if (res.status !== 429) return res;
      await res.body?.cancel();
      const named = retryAfterMs(res.headers.get('retry-after'));
      // A "Retry-After: 0" still waits a little: the quota is shared with everyone else of the tenant.
      const wait = Math.max(100, Math.min(named ?? pause, MAX_RETRY_AFTER_MS));
      pause = Math.min(pause * 2, QUOTA_BACKOFF_MAX_MS);
      onWait?.(wait);
      await sleep(wait, init?.signal);
    }
  };
}
