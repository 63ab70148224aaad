import {
  DEFAULT_TENANT,
  RUN_ID_PATTERN,
  type Keys,
  type RunSearch,
  type RunSearchPage,
} from '@agent-reach/protocol';
import type { RedisClient } from '@agent-reach/shared';
import { toSummary, type RunSummary } from './run-store.js';

/** Runs read per batch: one ZREVRANGEBYSCORE, then one HGETALL each, sent together (each its own slot on a cluster). */
const BATCH = 500;
const DEFAULT_MAX_SCAN = 5000;

interface Position {
  score: number;
  runId: string;
}

export function encodeCursor(p: Position): string {
  return Buffer.from(JSON.stringify([p.score, p.runId])).toString('base64url');
}

/** The position a cursor names, or undefined when it is not one this server made. */
export function decodeCursor(cursor: string): Position | undefined {
  try {
    const v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    // Only what this server writes: a creation time (a whole, non-negative, safe ms) and a run id. Anything
    // else (a fraction, 1e400, a NUL) would otherwise reach Redis and SQL as it is.
    if (!Array.isArray(v) || v.length !== 2 || !Number.isSafeInteger(v[0]) || (v[0] as number) < 0)
      return undefined;
    if (typeof v[1] !== 'string' || !RUN_ID_PATTERN.test(v[1])) return undefined;
    return { score: v[0] as number, runId: v[1] };
  } catch {
    return undefined;
  }
}

function matches(s: RunSummary, q: RunSearch): boolean {
  if (q.agents && !q.agents.has(s.agent)) return false;
  if (q.tenants && !q.tenants.has(s.tenant ?? DEFAULT_TENANT)) return false;
  if (q.status && s.status !== q.status) return false;
  if (q.traceId && s.traceId !== q.traceId) return false;
  if (q.tool && !s.tools?.includes(q.tool)) return false;
  if (q.errorKind && !s.errorKinds?.includes(q.errorKind)) return false;
  for (const [k, v] of Object.entries(q.metadata ?? {})) {
    if (!s.metadata || !Object.hasOwn(s.metadata, k) || s.metadata[k] !== v) return false;
  }
  return true;
}

/**
 * Runs newest first, filtered, in pages that resume from a cursor. A bounded scan of the run index (a
 * sorted set by creation time) rather than an index per filter: filters combine freely, a run's status,
 * tools and error kinds change as it runs, and its listing hash already holds them, so there is nothing
 * else to keep in step. Each page reads at most `maxScan` runs, so a rare match over 100 000 runs costs
 * a few pages (each with a cursor), never one unbounded request; the time range narrows the scan in Redis.
 */
export async function searchRuns(
  redis: RedisClient,
  keys: Keys,
  q: RunSearch,
): Promise<RunSearchPage<RunSummary>> {
  const limit = q.limit ?? 50;
  const maxScan = q.maxScan ?? DEFAULT_MAX_SCAN;
  const after = q.cursor ? decodeCursor(q.cursor) : undefined;
  const top = after ? Math.min(after.score, q.until ?? Infinity) : (q.until ?? Infinity);
  const max = Number.isFinite(top) ? String(top) : '+inf';
  const min = q.since !== undefined ? String(q.since) : '-inf';
  const runs: RunSummary[] = [];
  let scanned = 0;
  let last: Position | undefined;
  for (let offset = 0; scanned < maxScan; offset += BATCH) {
    const rows = await redis.zrevrangebyscore(keys.runIndex, max, min, 'WITHSCORES', 'LIMIT', offset, BATCH);
    if (rows.length === 0) return { runs, scanned };
    const batch: Position[] = [];
    for (let i = 0; i + 1 < rows.length; i += 2) {
      const p = { runId: rows[i] as string, score: Number(rows[i + 1]) };
      // Runs of the cursor's own millisecond that an earlier page returned (same score: id order, reversed).
      if (after && p.score === after.score && p.runId >= after.runId) continue;
      batch.push(p);
    }
    const metas = await Promise.all(batch.map((p) => redis.hgetall(keys.runMeta(p.runId))));
    for (const [i, p] of batch.entries()) {
      scanned += 1;
      last = p;
      const meta = metas[i];
      if (meta?.runId) {
        const s = toSummary(meta);
        if (matches(s, q)) runs.push(s);
      }
      if (runs.length >= limit || scanned >= maxScan) {
        const more = i + 1 < batch.length || rows.length === BATCH * 2;
        return { runs, scanned, ...(more || scanned >= maxScan ? { nextCursor: encodeCursor(p) } : {}) };
      }
    }
    if (rows.length < BATCH * 2) return { runs, scanned };
  }
  return { runs, scanned, ...(last ? { nextCursor: encodeCursor(last) } : {}) };
}
