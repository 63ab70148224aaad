import { isDeepStrictEqual } from 'node:util';
import {
  createDatabase,
  fromArchiveRow,
  readRunRecord,
  storableJson,
  type OwnDatabase,
  type Pool,
  type RawRunRecord,
} from '@agent-reach/archive';
import type { Keys } from '@agent-reach/protocol';
import type { RedisClient } from '@agent-reach/shared';
import { FINAL_STATUSES, type Violation } from './fault-check.js';
import { sleep } from './util.js';

/** The machine's PostgreSQL (trust auth); `postgres` is the database the scenario's own is created from. */
export const DEFAULT_POSTGRES_URL = 'postgres://postgres@127.0.0.1:5432/postgres';

/** The application name the archiver's sessions carry (what a scenario cuts off). */
const ARCHIVER_APPLICATION = 'agent-reach-archiver';

/** A database of the scenario's own on the machine's PostgreSQL: the fleet's archive. */
export interface FaultArchive extends OwnDatabase {
  /**
   * Makes PostgreSQL refuse the archive: an ACCESS EXCLUSIVE lock on its table holds every write, and the
   * archiver's sessions are terminated every 100 ms, until the returned function is called (it resolves
   * to how many sessions were terminated). The server itself keeps running for everyone else.
   */
  block(): Promise<() => Promise<number>>;
  /** Whether an archiver has a statement waiting on a lock (it is mid-batch). */
  archiverWaiting(): Promise<boolean>;
}

/** Creates an empty database (the archivers migrate it when they start); `drop` removes it. */
export async function createFaultArchive(postgresUrl: string): Promise<FaultArchive> {
  const db = await createDatabase(postgresUrl, 'ar_faults');
  const { name, pool } = db;
  const archiverSessions = async () =>
    (
      await pool.query<{ pid: number; wait: string | null }>(
        `SELECT pid, wait_event_type AS wait FROM pg_stat_activity WHERE datname = $1 AND application_name = $2`,
        [name, ARCHIVER_APPLICATION],
      )
    ).rows;
  return {
    ...db,
    async block() {
      const client = await pool.connect();
      await client.query('BEGIN');
      await client.query('LOCK TABLE archived_runs IN ACCESS EXCLUSIVE MODE');
      let cutting = true;
      const cuts = (async () => {
        let n = 0;
        while (cutting) {
          for (const s of await archiverSessions().catch(() => [])) {
            await pool.query('SELECT pg_terminate_backend($1)', [s.pid]).catch(() => undefined);
            n += 1;
          }
          await sleep(100);
        }
        return n;
      })();
      return async () => {
        cutting = false;
        const n = await cuts;
        await client.query('ROLLBACK');
        client.release();
        return n;
      };
    },
    async archiverWaiting() {
      return (await archiverSessions()).some((s) => s.wait === 'Lock');
    },
  };
}

/** How many of these runs the archive holds (rows per run). */
async function archivedCounts(pool: Pool, runIds: readonly string[]): Promise<Map<string, number>> {
  const res = await pool.query<{ run_id: string; n: number }>(
    'SELECT run_id, count(*)::int AS n FROM archived_runs WHERE run_id = ANY($1::text[]) GROUP BY run_id',
    [runIds],
  );
  return new Map(res.rows.map((r) => [r.run_id, r.n]));
}

/** Waits until every run final in Redis has a row, at most `timeoutMs`; returns how long it took. */
export async function waitArchived(
  archive: FaultArchive,
  redis: RedisClient,
  keys: Keys,
  runIds: readonly string[],
  timeoutMs: number,
): Promise<number> {
  const t0 = Date.now();
  for (;;) {
    const statuses = await Promise.all(runIds.map((id) => redis.hget(keys.runMeta(id), 'status')));
    const final = runIds.filter((_, i) => FINAL_STATUSES.includes(statuses[i] ?? ''));
    const counts = await archivedCounts(archive.pool, final).catch(() => new Map<string, number>());
    if (final.every((id) => counts.has(id)) || Date.now() - t0 > timeoutMs) return Date.now() - t0;
    await sleep(250);
  }
}

/**
 * A raw record parsed, so that two are compared by value (the archive's JSON keeps no key order). The
 * listing's `epoch` is left out: it counts the claims of the run, and a run job taken again after the run
 * ended (its completion lost to a Redis fault) claims it once more without changing anything the API shows.
 */
const parsed = (r: RawRunRecord) => ({
  meta: Object.fromEntries(Object.entries(r.meta).filter(([k]) => k !== 'epoch')),
  state: JSON.parse(r.state || 'null') as unknown,
  messages: r.messages.map((m) => JSON.parse(m) as unknown),
  approvals: r.approvals,
  results: Object.fromEntries(Object.entries(r.results).map(([k, v]) => [k, JSON.parse(v) as unknown])),
  events: r.events.map(([id, e]) => [id, JSON.parse(e) as unknown]),
});

/** The listing fields two listings disagree on, as ` (field: archived → live, …)`. */
function differingFields(archived: Record<string, string>, live: Record<string, string>): string {
  const names = [...new Set([...Object.keys(archived), ...Object.keys(live)])].filter(
    (k) => archived[k] !== live[k],
  );
  return ` (${names.map((k) => `${k}: ${archived[k] ?? '-'} → ${live[k] ?? '-'}`).join(', ')})`;
}

/**
 * The archive's invariants: every run that ended is archived exactly once (one row), and its archived
 * record is the record Redis still holds (the one the API read live, archived runs being read back
 * through the same parser), part by part.
 */
export async function checkArchive(input: {
  archive: FaultArchive;
  redis: RedisClient;
  keys: Keys;
  runIds: readonly string[];
}): Promise<Violation[]> {
  const { archive, redis, keys, runIds } = input;
  const violations: Violation[] = [];
  const counts = await archivedCounts(archive.pool, runIds);
  for (const runId of runIds) {
    const live = await readRunRecord(redis, keys, runId);
    const final = live !== undefined && FINAL_STATUSES.includes(live.meta.status ?? '');
    const n = counts.get(runId) ?? 0;
    if (final && n !== 1)
      violations.push({ invariant: 'not_archived', subject: runId, detail: `${n} archived rows` });
    if (!final && n > 0)
      violations.push({
        invariant: 'not_archived',
        subject: runId,
        detail: `archived while its record is ${live ? `status ${live.meta.status}` : 'gone from Redis'}`,
      });
    if (!final || n !== 1) continue;
    const row = await archive.pool.query(
      'SELECT run_id, meta, state, messages, approvals, results, events FROM archived_runs WHERE run_id = $1',
      [runId],
    );
    const archived = parsed(fromArchiveRow(row.rows[0]));
    // What PostgreSQL cannot hold (a NUL, a lone surrogate) is archived as U+FFFD, as documented.
    const shown = JSON.parse(storableJson(JSON.stringify(parsed(live)))) as ReturnType<typeof parsed>;
    for (const part of Object.keys(shown) as Array<keyof typeof shown>)
      if (!isDeepStrictEqual(archived[part], shown[part]))
        violations.push({
          invariant: 'archive_differs',
          subject: runId,
          detail: `its archived ${part} is not what Redis holds${part === 'meta' ? differingFields(archived.meta, shown.meta) : ''}`,
        });
  }
  return violations;
}
