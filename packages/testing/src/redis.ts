import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { createKeys, type Keys } from '@agent-reach/protocol';

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A Redis connection and a key prefix of the test's own, removed again by `cleanup`. */
export function testRedis(): { redis: Redis; keys: Keys; prefix: string; cleanup(): Promise<void> } {
  const prefix = `t${randomUUID().slice(0, 8)}`;
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  return {
    redis,
    prefix,
    keys: createKeys(prefix),
    async cleanup() {
      let cursor = '0';
      do {
        const [next, found] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
        cursor = next;
        if (found.length > 0) await redis.del(...found);
      } while (cursor !== '0');
      await redis.quit();
    },
  };
}

/** Polls `check` until it returns a value other than undefined/false, or fails after `timeoutMs`. */
export async function waitFor<T>(
  check: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 10_000,
  what = 'condition',
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value as T;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
