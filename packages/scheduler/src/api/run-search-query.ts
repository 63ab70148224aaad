import type { RunStatus } from '../agent-loop/run-state.js';
import { decodeCursor } from '../runs/run-search.js';
import type { Principal } from './auth.js';
import { ApiError } from './errors.js';
import type { ApiContext } from './options.js';
import { summaryView } from './run-view.js';
import { visibleRuns } from './session-access.js';
import type { ListRunsQuery, RunSummaryView } from '@agent-reach/protocol';

/** Text no run's metadata can hold (PostgreSQL stores neither): a NUL, a UTF-16 surrogate not in a pair. */
const unstorable = (text: string) => {
  if (text.includes('\u0000')) return true;
  try {
    encodeURIComponent(text); // throws on a lone surrogate
    return false;
  } catch {
    return true;
  }
};

/** A 400 naming the query parameter and what is wrong with it. */
const invalid = (parameter: string, problem: string) =>
  new ApiError('VALIDATION_FAILED', `querystring/${parameter} ${problem}`, [
    { in: 'querystring', path: `/${parameter}`, message: problem },
  ]);

/**
 * Refuses, before anything reaches Redis or SQL, the values the schema lets through but no store can take:
 * a time that is no safe whole number of ms (`1e400` and `Infinity` pass a JSON Schema integer), text with
 * a NUL or a lone surrogate, a cursor this API did not give.
 */
export function checkListQuery(q: ListRunsQuery): void {
  for (const name of ['since', 'until'] as const) {
    const v = q[name];
    if (v !== undefined && !Number.isSafeInteger(v))
      throw invalid(name, 'must be a whole number of epoch ms (at most 2^53 - 1)');
  }
  if (q.metadata !== undefined && unstorable(q.metadata))
    throw invalid('metadata', 'must not hold a NUL character or a lone surrogate');
  if (q.cursor !== undefined && !decodeCursor(q.cursor))
    throw invalid('cursor', 'is not a cursor this API gave');
}

/** A page of `GET /v1/runs` found by a cursor-paged search; a limited key sees only its agents' runs. */
export async function searchPage(
  ctx: ApiContext,
  principal: Principal,
  q: ListRunsQuery,
): Promise<{ runs: RunSummaryView[]; next_offset?: number; next_cursor?: string }> {
  checkListQuery(q);
  const agents = q.agent ? new Set([q.agent]) : principal.agents;
  const page = await ctx.deps.control.search({
    ...(agents ? { agents } : {}),
    tenants: principal.tenants,
    ...(q.status ? { status: q.status as RunStatus } : {}),
    ...(q.since !== undefined ? { since: q.since } : {}),
    ...(q.until !== undefined ? { until: q.until } : {}),
    ...(q.trace_id ? { traceId: q.trace_id } : {}),
    ...(q.tool ? { tool: q.tool } : {}),
    ...(q.error_kind ? { errorKind: q.error_kind } : {}),
    ...(q.metadata ? { metadata: metadataPair(q.metadata) } : {}),
    ...(q.cursor ? { cursor: q.cursor } : {}),
    limit: q.limit,
  });
  const shown = await visibleRuns(ctx, principal, page.runs);
  return {
    runs: shown.map(summaryView),
    ...(page.nextCursor
      ? {
          next_cursor: page.nextCursor,
          // No offset to offer with the archive on: only the cursor pages across Redis and the archive.
          ...(q.cursor || ctx.deps.control.archive ? {} : { next_offset: page.runs.length }),
        }
      : {}),
  };
}

/** `KEY=VALUE` as a one-pair filter (the value may hold `=`). */
function metadataPair(text: string): Record<string, string> {
  const at = text.indexOf('=');
  return { [text.slice(0, at)]: text.slice(at + 1) };
}
