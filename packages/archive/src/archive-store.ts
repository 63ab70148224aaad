import type { ArchiveSearch } from '@agent-reach/protocol';
import type { Pool } from './db.js';
import { fromArchiveRow, type ArchiveRow, type RawRunRecord } from './run-record.js';

const DAY_MS = 86_400_000;

/** The UTC day (`YYYY-MM-DD`) an epoch ms falls on. */
export const utcDay = (ms: number): string =>
  new Date(Math.floor(ms / DAY_MS) * DAY_MS).toISOString().slice(0, 10);

/**
 * Text PostgreSQL cannot hold, made storable: its `jsonb` and `text` take no NUL character and no lone
 * UTF-16 surrogate. `JSON.stringify` writes both as escapes (`\u0000`, `\ud800`: a paired surrogate is
 * written as the character itself), so each such escape in the serialized rows becomes U+FFFD (an
 * escaped backslash before it is left alone). Every string of a row goes through here: the `text`
 * columns are read out of the same JSON.
 */
export const storableJson = (json: string): string =>
  json.replace(/(?<!\\)((?:\\\\)*)\\u(?:0000|d[89a-f][0-9a-f]{2})/gi, '$1\\ufffd');

/** SQLSTATE classes of a database that cannot answer now (connection, resources, operator, lock wait). */
const UNAVAILABLE_SQLSTATE = /^(08|53|57|58|55P03|40P01|40001)/;

/** Network errors of the connection (node's `code`). */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
]);

/**
 * Whether an error of a query means PostgreSQL cannot answer right now (down, restarting, overloaded, a
 * statement timed out or waited on a lock), as opposed to a statement it refuses (bad data).
 */
export function databaseUnavailable(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | undefined;
  if (!e || typeof e !== 'object') return false;
  const code = typeof e.code === 'string' ? e.code : '';
  if (NETWORK_CODES.has(code) || UNAVAILABLE_SQLSTATE.test(code)) return true;
  const message = typeof e.message === 'string' ? e.message : '';
  return /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Cannot use a pool after calling end/i.test(
    message,
  );
}

const INSERT = `
INSERT INTO archived_runs (run_id, finished_at, created_ms, agent, status, reason, trace_id, tenant,
  session_id, workflow_id, config_version, tools, error_kinds, metadata, meta, state, messages, approvals,
  results, events)
SELECT r.run_id, timestamptz 'epoch' + r.finished_ms * interval '1 millisecond', r.created_ms, r.agent,
  r.status, r.reason, r.trace_id, r.tenant, r.session_id, r.workflow_id, r.config_version, r.tools,
  r.error_kinds, r.metadata, r.meta, r.state, r.messages, r.approvals, r.results, r.events
FROM jsonb_to_recordset($1::jsonb) AS r(run_id text, finished_ms bigint, created_ms bigint, agent text,
  status text, reason text, trace_id text, tenant text, session_id text, workflow_id text,
  config_version integer, tools text[], error_kinds text[], metadata jsonb, meta jsonb, state jsonb,
  messages jsonb, approvals jsonb, results jsonb, events jsonb)
ON CONFLICT (run_id, finished_at) DO NOTHING`;

/** The SQL and parameters of a search, newest first (shared with the benchmark, which explains it). */
export function searchQuery(q: ArchiveSearch): { text: string; values: unknown[] } {
  const where: string[] = [];
  const values: unknown[] = [];
  const param = (v: unknown) => {
    values.push(v);
    return `$${values.length}`;
  };
  if (q.tenants) where.push(`tenant = ANY(${param([...q.tenants])}::text[])`);
  if (q.agents) where.push(`agent = ANY(${param([...q.agents])}::text[])`);
  if (q.status) where.push(`status = ${param(q.status)}`);
  if (q.since !== undefined) where.push(`created_ms >= ${param(q.since)}`);
  if (q.until !== undefined) where.push(`created_ms <= ${param(q.until)}`);
  if (q.traceId) where.push(`trace_id = ${param(q.traceId)}`);
  if (q.tool) where.push(`tools @> ARRAY[${param(q.tool)}]::text[]`);
  if (q.errorKind) where.push(`error_kinds @> ARRAY[${param(q.errorKind)}]::text[]`);
  if (q.metadata && Object.keys(q.metadata).length > 0)
    where.push(`metadata @> ${param(JSON.stringify(q.metadata))}::jsonb`);
  if (q.sessionId) where.push(`session_id = ${param(q.sessionId)}`);
  if (q.workflowId) where.push(`workflow_id = ${param(q.workflowId)}`);
  if (q.after)
    where.push(
      `(created_ms, run_id) < (${param(q.after.createdMs)}::bigint, ${param(q.after.runId)}::text COLLATE "C")`,
    );
  const text = `SELECT run_id, meta FROM archived_runs${where.length ? ` WHERE ${where.join(' AND ')}` : ''}
ORDER BY created_ms DESC, run_id DESC LIMIT ${param(q.limit)}`;
  return { text, values };
}

/** Writes and reads archived runs. */
export class ArchiveStore {
  readonly #partitions = new Set<string>();
  readonly #cache = new Map<string, { at: number; record: RawRunRecord | undefined }>();
  readonly #reading = new Map<string, Promise<RawRunRecord | undefined>>();

  constructor(readonly pool: Pool) {}

  /** Creates the daily partitions of these days (UTC) unless they exist. */
  async ensurePartitions(days: Iterable<string>): Promise<void> {
    for (const day of days) {
      if (this.#partitions.has(day)) continue;
      await this.pool.query('SELECT archive_ensure_partition($1::date)', [day]);
      this.#partitions.add(day);
    }
  }

  /** Partitions for today and the next `aheadDays` days. */
  ensurePartitionsAhead(now = Date.now(), aheadDays = 2): Promise<void> {
    return this.ensurePartitions(Array.from({ length: aheadDays + 1 }, (_, i) => utcDay(now + i * DAY_MS)));
  }

  /**
   * Writes the rows in one statement (one transaction): a run archived before is left as it is.
   * Returns how many rows were new. Resolves only once PostgreSQL committed.
   */
  async write(rows: readonly ArchiveRow[]): Promise<number> {
    if (rows.length === 0) return 0;
    await this.ensurePartitions(new Set(rows.map((r) => utcDay(r.finished_ms))));
    try {
      const res = await this.pool.query(INSERT, [storableJson(JSON.stringify(rows))]);
      return res.rowCount ?? 0;
    } catch (err) {
      // A partition dropped (retention) or made by hand since: look again next time.
      this.#partitions.clear();
      throw err;
    }
  }

  /** Which of these runs the archive holds (a committed row each). */
  async archivedOf(runIds: readonly string[]): Promise<Set<string>> {
    if (runIds.length === 0) return new Set();
    const res = await this.pool.query<{ run_id: string }>(
      'SELECT DISTINCT run_id FROM archived_runs WHERE run_id = ANY($1::text[])',
      [runIds],
    );
    return new Set(res.rows.map((r) => r.run_id));
  }

  /** Drops the partitions wholly older than `days` days; returns their names. */
  async dropExpired(days: number, now = Date.now()): Promise<string[]> {
    const res = await this.pool.query<{ name: string }>(
      'SELECT archive_drop_partitions_before($1::timestamptz) AS name',
      [new Date(now - days * DAY_MS).toISOString()],
    );
    for (const { name } of res.rows)
      this.#partitions.delete(`${name.slice(15, 19)}-${name.slice(19, 21)}-${name.slice(21, 23)}`);
    return res.rows.map((r) => r.name);
  }

  /**
   * A run's archived record, or undefined. An archived record never changes: it is kept 30 s (an API read
   * asks for the listing, the state and the events of one run in turn); a miss only 1 s, and concurrent
   * reads of one run share one query.
   */
  record(runId: string): Promise<RawRunRecord | undefined> {
    const hit = this.#cache.get(runId);
    if (hit && Date.now() - hit.at < (hit.record ? 30_000 : 1000)) return Promise.resolve(hit.record);
    const pending = this.#reading.get(runId);
    if (pending) return pending;
    const read = this.pool
      .query(
        'SELECT run_id, meta, state, messages, approvals, results, events FROM archived_runs WHERE run_id = $1 LIMIT 1',
        [runId],
      )
      .then((res) => {
        const record = res.rows[0] ? fromArchiveRow(res.rows[0]) : undefined;
        if (this.#cache.size >= 200) this.#cache.delete(this.#cache.keys().next().value as string);
        this.#cache.set(runId, { at: Date.now(), record });
        return record;
      })
      .finally(() => this.#reading.delete(runId));
    this.#reading.set(runId, read);
    return read;
  }

  /** Listing hashes of archived runs, newest first. */
  async search(q: ArchiveSearch): Promise<Array<{ runId: string; meta: Record<string, string> }>> {
    const { text, values } = searchQuery(q);
    const res = await this.pool.query<{ run_id: string; meta: Record<string, string> }>(text, values);
    return res.rows.map((r) => ({ runId: r.run_id, meta: r.meta }));
  }
}
