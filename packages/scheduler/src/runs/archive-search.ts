import type { ArchiveStore } from '@agent-reach/archive';
import type { Keys, RunSearch, RunSearchPage } from '@agent-reach/protocol';
import type { RedisClient } from '@agent-reach/shared';
import { toSummary, type RunSummary } from './run-store.js';
import { decodeCursor, encodeCursor, searchRuns } from './run-search.js';
import { readArchive } from './run-archive.js';

interface Position {
  score: number;
  runId: string;
}

/** Listing order: newer creation time first, then the greater run id (as Redis orders equal scores). */
const before = (a: Position, b: Position) => a.score > b.score || (a.score === b.score && a.runId > b.runId);
const at = (s: RunSummary): Position => ({ score: s.createdAt, runId: s.runId });

/**
 * One page of runs across Redis (live and recently finished runs) and the archive, in one order
 * (creation time, run id; newest first) that never changes for a run, from one cursor.
 *
 * Redis is read first, the archive after: a run leaves the Redis index only once the archive committed
 * it, so a run Redis no longer lists is in the archive by the time it is asked. A run in both is shown
 * once. Each source says how far down it is complete (Redis stops after a bounded scan, the archive after
 * `limit` rows); the page holds only runs above the higher of those two points, and its cursor resumes
 * there, so nothing below is skipped.
 */
export async function searchAcross(
  redis: RedisClient,
  keys: Keys,
  archive: ArchiveStore,
  q: RunSearch,
): Promise<RunSearchPage<RunSummary>> {
  const limit = q.limit ?? 50;
  const live = await searchRuns(redis, keys, q);
  const after = q.cursor ? decodeCursor(q.cursor) : undefined;
  const rows = await readArchive(() =>
    archive.search({
      ...(q.agents ? { agents: q.agents } : {}),
      ...(q.tenants ? { tenants: q.tenants } : {}),
      ...(q.status ? { status: q.status } : {}),
      ...(q.since !== undefined ? { since: q.since } : {}),
      ...(q.until !== undefined ? { until: q.until } : {}),
      ...(q.traceId ? { traceId: q.traceId } : {}),
      ...(q.tool ? { tool: q.tool } : {}),
      ...(q.errorKind ? { errorKind: q.errorKind } : {}),
      ...(q.metadata ? { metadata: q.metadata } : {}),
      ...(after ? { after: { createdMs: after.score, runId: after.runId } } : {}),
      limit: limit + 1,
    }),
  );
  const archived = rows.slice(0, limit).map((r) => toSummary(r.meta));
  // How far down each source is complete: undefined = to the end.
  const liveEnd = live.nextCursor ? decodeCursor(live.nextCursor) : undefined;
  const lastArchived = archived[archived.length - 1];
  const archiveEnd = rows.length > limit && lastArchived ? at(lastArchived) : undefined;
  const bound =
    liveEnd && archiveEnd ? (before(liveEnd, archiveEnd) ? liveEnd : archiveEnd) : (liveEnd ?? archiveEnd);
  const seen = new Set<string>();
  const merged = [...live.runs, ...archived]
    .filter((s) => !seen.has(s.runId) && seen.add(s.runId))
    .filter((s) => !bound || !before(bound, at(s)))
    .sort((a, b) => (before(at(a), at(b)) ? -1 : 1));
  const page = merged.slice(0, limit);
  const last = page[page.length - 1];
  const resume = merged.length > limit && last ? at(last) : bound;
  return {
    runs: page,
    scanned: live.scanned + rows.length,
    ...(resume ? { nextCursor: encodeCursor(resume) } : {}),
  };
}
