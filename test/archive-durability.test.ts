import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Registry } from 'prom-client';
import { createPool, migrate, Outbox, startArchiver, type Archiver } from '@agent-reach/archive';
import { createLogger } from '@agent-reach/shared';
import { startRunsHarness } from './helpers/runs.js';
import { waitFor, REDIS_URL } from './helpers/redis.js';
import { testDatabase } from './helpers/postgres.js';
import { startChild, type Child } from './helpers/processes.js';

const quiet = createLogger('archiver-test', { level: 'silent' });

describe('run archive durability: PostgreSQL blocked or an archiver killed mid-batch loses no run and writes none twice (real Redis, PostgreSQL, processes)', () => {
  let db: Awaited<ReturnType<typeof testDatabase>>;
  let h: Awaited<ReturnType<typeof startRunsHarness>>;
  let outbox: Outbox;
  const archivers: Archiver[] = [];
  const children: Child[] = [];

  beforeAll(async () => {
    db = await testDatabase();
    await migrate(db.url);
    h = await startRunsHarness({ DATABASE_URL: db.url, ARCHIVED_RUN_RETENTION_S: '60' });
    outbox = new Outbox(h.producer, h.keys);
  });
  afterAll(async () => {
    for (const c of children) c.kill('SIGKILL');
    for (const a of archivers) await a.close();
    await h?.close();
    await db?.drop();
  });

  const finishRuns = async (n: number, tag: string) => {
    const ids = await Promise.all(
      Array.from({ length: n }, (_, i) => h.control.start({ agent: 'test_agent', input: `${tag} ${i}` })),
    );
    for (const id of ids) expect((await h.control.wait(id, 20_000)).status).toBe('succeeded');
    return ids;
  };
  /** Holds an ACCESS EXCLUSIVE lock on the archive's table until `release`: every write waits. */
  const lockArchive = async () => {
    const locker = createPool(db.url, { max: 1, applicationName: 'archive-test-lock' });
    const client = await locker.connect();
    await client.query('BEGIN');
    await client.query('LOCK TABLE archived_runs IN ACCESS EXCLUSIVE MODE');
    return async () => {
      await client.query('ROLLBACK');
      client.release();
      await locker.end();
    };
  };
  const archivedIds = async (ids: string[]) => {
    const res = await db.pool.query<{ run_id: string }>(
      'SELECT run_id FROM archived_runs WHERE run_id = ANY($1::text[]) ORDER BY run_id',
      [ids],
    );
    return res.rows.map((r) => r.run_id);
  };
  const archiverBackends = async () => {
    const res = await db.pool.query<{ pid: number; wait: string | null }>(
      `SELECT pid, wait_event_type AS wait FROM pg_stat_activity WHERE datname = $1 AND application_name = 'agent-reach-archiver'`,
      [db.name],
    );
    return res.rows;
  };
  const inProcessArchiver = (registry: Registry, batchSize: number) =>
    startArchiver({
      redis: h.producer,
      keys: h.keys,
      databaseUrl: db.url,
      logger: quiet,
      registry,
      archivedRunRetentionS: 60,
      retentionDays: 30,
      batchSize,
      visibilityTimeoutMs: 1000,
      pollMs: 20,
      sampleMs: 50,
    });
  const metric = async (registry: Registry, name: string) =>
    (await registry.getSingleMetric(name)?.get())?.values[0]?.value ?? 0;

  it('keeps finishing runs while PostgreSQL refuses the archiver, holds them in the outbox (backlog gauge), and archives each once when it answers again', async () => {
    const release = await lockArchive();
    const registry = new Registry();
    archivers.push(await inProcessArchiver(registry, 5));
    // The archiver's sessions are cut again and again while the lock holds its writes.
    let cutting = true;
    const cuts = (async () => {
      let n = 0;
      while (cutting) {
        for (const b of await archiverBackends()) {
          await db.pool.query('SELECT pg_terminate_backend($1)', [b.pid]);
          n += 1;
        }
        await new Promise((r) => setTimeout(r, 100));
      }
      return n;
    })();
    const ids = await finishRuns(12, 'outage');
    await waitFor(
      async () => (await metric(registry, 'agent_reach_archive_batch_failures_total')) >= 2,
      15_000,
    );
    expect(await outbox.size()).toBe(12);
    await waitFor(
      async () => (await metric(registry, 'agent_reach_archive_backlog')) === 12,
      5000,
      'the backlog gauge',
    );
    // Every run is still whole in Redis.
    for (const id of ids) expect(await h.producer.exists(h.keys.runState(id))).toBe(1);
    cutting = false;
    expect(await cuts).toBeGreaterThan(0);
    await release();

    await waitFor(async () => (await outbox.size()) === 0, 20_000, 'the backlog to drain');
    expect(await archivedIds(ids)).toEqual([...ids].sort());
    const ttl = await h.producer.ttl(h.keys.runState(ids[0]!));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(60);
    await waitFor(
      async () => (await metric(registry, 'agent_reach_archive_backlog')) === 0,
      5000,
      'the gauge at 0',
    );
  });

  it('loses no run and writes none twice when an archiver process is killed with SIGKILL in the middle of a batch', async () => {
    for (const a of archivers.splice(0)) await a.close();
    const release = await lockArchive();
    const child = startChild('packages/archive/src/main.ts', {
      DATABASE_URL: db.url,
      REDIS_URL,
      AR_KEY_PREFIX: h.prefix,
      ARCHIVE_BATCH_SIZE: '4',
      ARCHIVE_VISIBILITY_TIMEOUT_MS: '1000',
      ARCHIVED_RUN_RETENTION_S: '60',
      ARCHIVER_METRICS_PORT: '0',
    });
    children.push(child);
    await child.ready;
    const ids = await finishRuns(10, 'killed');
    // The archiver claimed a batch and its INSERT waits on the lock: it is mid-batch.
    await waitFor(
      async () => (await archiverBackends()).some((b) => b.wait === 'Lock'),
      15_000,
      'a blocked write',
    );
    child.kill('SIGKILL');
    await child.exited;
    expect(await outbox.size()).toBe(10);
    archivers.push(await inProcessArchiver(new Registry(), 4));
    // The dead archiver's statement may still commit once the lock goes: the batch is then written twice.
    await release();
    await waitFor(async () => (await outbox.size()) === 0, 20_000, 'the outbox to drain');
    const rows = await db.pool.query<{ n: number; distinct: number }>(
      'SELECT count(*)::int AS n, count(DISTINCT run_id)::int AS distinct FROM archived_runs WHERE run_id = ANY($1::text[])',
      [ids],
    );
    expect(rows.rows[0]).toEqual({ n: 10, distinct: 10 });
  });

  it('polls an idle outbox for as long as it runs without leaving a listener per poll on its stop signal', async () => {
    const leaks: string[] = [];
    const onWarning = (w: Error) => {
      if (w.name === 'MaxListenersExceededWarning') leaks.push(w.message);
    };
    process.on('warning', onWarning);
    const archiver = await inProcessArchiver(new Registry(), 5);
    try {
      // Some fifty polls of an empty outbox, 20 ms apart.
      await new Promise((r) => setTimeout(r, 1000));
      expect(await outbox.size()).toBe(0);
    } finally {
      await archiver.close();
      process.off('warning', onWarning);
    }
    expect(leaks).toEqual([]);
  });
});
