import type { RunStatus } from './run-status.js';

// The shape of a search over runs, the same whether it reads Redis (live and recently finished runs) or
// the archive (PostgreSQL): the scheduler pages across both with one filter and one listing order.

/** What runs are filtered by; every field narrows the result. */
export interface RunFilter {
  /** Only runs of these agents (a limited key's list, or the one asked for). */
  agents?: ReadonlySet<string>;
  /** Only runs of these tenants (a run recorded without one is `default`'s). */
  tenants?: ReadonlySet<string>;
  status?: RunStatus;
  /** Epoch ms bounds on creation time (inclusive). */
  since?: number;
  until?: number;
  traceId?: string;
  /** A tool the run called. */
  tool?: string;
  /** An error kind one of its tool calls ended with. */
  errorKind?: string;
  /** Caller metadata the run was started with: every pair must match. */
  metadata?: Record<string, string>;
}

/**
 * A run's place in the listing order: newer creation time first, then the greater run id (as Redis orders
 * equal scores). Cursors name one.
 */
export interface RunPosition {
  /** Creation time, epoch ms. */
  createdMs: number;
  runId: string;
}

/** A search of runs, newest first, in pages. */
export interface RunSearch extends RunFilter {
  /** Where the previous page stopped (its `nextCursor`). */
  cursor?: string;
  /** Matches wanted. Default 50. */
  limit?: number;
  /** Runs read at most before the page is returned, matched or not. Default 5000. */
  maxScan?: number;
}

/** One page of a search; `Run` is the reader's listing record (the scheduler's run summary). */
export interface RunSearchPage<Run> {
  runs: Run[];
  /** Resume here for the next page; absent when the index holds no older run in range. */
  nextCursor?: string;
  /** Runs read for this page. */
  scanned: number;
}

/** A search of the archive: the same filter, plus the archive's own columns, from a position. */
export interface ArchiveSearch extends RunFilter {
  sessionId?: string;
  workflowId?: string;
  /** Only runs strictly after this position in the listing order. */
  after?: RunPosition;
  limit: number;
}
