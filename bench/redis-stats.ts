import type { Redis } from 'ioredis';

/** Redis's own counters at one instant: calls per command (script-internal calls included) and CPU. */
export interface RedisSample {
  calls: Map<string, number>;
  cpuUs: number;
}

/** What Redis did between two samples; the sampling's own INFO calls are left out. */
export interface RedisDelta {
  /** Calls per command, most frequent first. */
  calls: Array<[string, number]>;
  total: number;
  cpuUs: number;
}

export async function sampleRedis(redis: Redis): Promise<RedisSample> {
  const [stats, cpu] = await Promise.all([redis.info('commandstats'), redis.info('cpu')]);
  const calls = new Map<string, number>();
  for (const m of stats.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    calls.set(m[1] as string, Number(m[2]));
  }
  const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(cpu)?.[1] ?? 0);
  return { calls, cpuUs: (field('used_cpu_user') + field('used_cpu_sys')) * 1e6 };
}

export function diffRedis(before: RedisSample, after: RedisSample): RedisDelta {
  const calls: Array<[string, number]> = [];
  for (const [name, n] of after.calls) {
    const d = n - (before.calls.get(name) ?? 0);
    if (d > 0 && name !== 'info') calls.push([name, d]);
  }
  calls.sort((a, b) => b[1] - a[1]);
  return { calls, total: calls.reduce((s, [, n]) => s + n, 0), cpuUs: after.cpuUs - before.cpuUs };
}

/** Deletes every key under `prefix:` (SCAN, never KEYS, so a shared Redis is not blocked). */
export async function deleteByPrefix(redis: Redis, prefix: string): Promise<number> {
  let cursor = '0';
  let deleted = 0;
  do {
    const [next, found] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    cursor = next;
    if (found.length > 0) deleted += await redis.del(...found);
  } while (cursor !== '0');
  return deleted;
}
