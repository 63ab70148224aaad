import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ArchiveStore, createDatabase, migrate, MIGRATIONS_TABLE, type ArchiveRow } from '../src/index.js';

/** The machine's PostgreSQL (trust auth); each test file gets a database of its own, dropped at the end. */
const POSTGRES_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const testDatabase = () => createDatabase(POSTGRES_URL, 'ar_test');

const DAY = 86_400_000;

const row = (runId: string, finishedMs: number, over: Partial<ArchiveRow> = {}): ArchiveRow => ({
  run_id: runId,
  finished_ms: finishedMs,
  created_ms: finishedMs - 1000,
  agent: 'weather',
  status: 'completed',
  reason: 'completed',
  trace_id: `trace-${runId}`,
  tenant: 'default',
  session_id: null,
  workflow_id: null,
  config_version: 1,
  tools: ['query_weather'],
  error_kinds: [],
  metadata: { team: 'ops' },
  meta: { runId, agent: 'weather', status: 'completed' },
  state: { v: 2, runId },
  messages: [{ role: 'user', content: 'hi' }],
  approvals: {},
  results: {},
  events: [['1-0', { type: 'run_started' }]],
  ...over,
});

describe('archive schema: migrations from an empty database, idempotent writes, retention by partition (real PostgreSQL)', () => {
  let db: Awaited<ReturnType<typeof testDatabase>>;
  beforeAll(async () => {
    db = await testDatabase();
  });
  afterAll(async () => {
    await db.drop();
  });

  it('migrates an empty database to a partitioned runs table with an index for each filter, and a second run applies nothing', async () => {
    const applied = await migrate(db.url);
    expect(applied.length).toBeGreaterThan(0);
    const recorded = await db.pool.query(`SELECT name FROM ${MIGRATIONS_TABLE} ORDER BY run_on`);
    expect(recorded.rows.map((r: { name: string }) => r.name)).toEqual(applied);
    const part = await db.pool.query(
      `SELECT partstrat, a.attname FROM pg_partitioned_table p
         JOIN pg_attribute a ON a.attrelid = p.partrelid AND a.attnum = p.partattrs[0]
        WHERE partrelid = 'archived_runs'::regclass`,
    );
    expect(part.rows).toEqual([{ partstrat: 'r', attname: 'finished_at' }]);
    const indexes = await db.pool.query(`SELECT indexdef FROM pg_indexes WHERE tablename = 'archived_runs'`);
    const defs = indexes.rows.map((r: { indexdef: string }) => r.indexdef).join('\n');
    for (const column of [
      'tenant',
      'agent',
      'status',
      'reason',
      'trace_id',
      'session_id',
      'workflow_id',
      'created_ms',
    ])
      expect(defs).toContain(`(${column}`);
    for (const column of ['tools', 'error_kinds', 'metadata'])
      expect(defs).toMatch(new RegExp(`gin \\(${column}`));
    expect(await migrate(db.url)).toEqual([]);
  });

  it('writes a run once: writing the same rows again adds nothing', async () => {
    const store = new ArchiveStore(db.pool);
    const now = Date.now();
    expect(await store.write([row('run_once_a', now), row('run_once_b', now)])).toBe(2);
    expect(await store.write([row('run_once_a', now), row('run_once_b', now), row('run_once_c', now)])).toBe(
      1,
    );
    const count = await db.pool.query(
      `SELECT count(*)::int AS n FROM archived_runs WHERE run_id LIKE 'run_once_%'`,
    );
    expect(count.rows[0].n).toBe(3);
  });

  it('keeps a NUL character of a tool result from failing the write', async () => {
    const store = new ArchiveStore(db.pool);
    const written = await store.write([
      row('run_nul', Date.now(), { messages: [{ role: 'tool', content: 'a\u0000b' }] }),
    ]);
    expect(written).toBe(1);
    const back = await store.record('run_nul');
    expect(JSON.parse(back?.messages[0] ?? '{}').content).toBe('a\ufffdb');
  });

  it('drops whole daily partitions past the retention and keeps the newer ones and their runs', async () => {
    const store = new ArchiveStore(db.pool);
    const now = Date.now();
    await store.write([row('run_old', now - 40 * DAY), row('run_recent', now - 2 * DAY)]);
    const dropped = await store.dropExpired(30, now);
    expect(dropped).toHaveLength(1);
    expect(dropped[0]).toMatch(/^archived_runs_p\d{8}$/);
    expect(await store.record('run_old')).toBeUndefined();
    const left = await db.pool.query(
      `SELECT run_id FROM archived_runs WHERE run_id IN ('run_old', 'run_recent')`,
    );
    expect(left.rows).toEqual([{ run_id: 'run_recent' }]);
    const parts = await db.pool.query(
      `SELECT count(*)::int AS n FROM pg_inherits WHERE inhparent = 'archived_runs'::regclass`,
    );
    expect(parts.rows[0].n).toBeGreaterThanOrEqual(2);
    // Archived again later (a backlog after an outage), the run's day gets its partition back.
    expect(await new ArchiveStore(db.pool).write([row('run_old', now - 40 * DAY)])).toBe(1);
  });
});
