import { randomUUID } from 'node:crypto';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { Keys } from '@agent-reach/protocol';
import { METRIC_PREFIX, type Logger, type RedisClient } from '@agent-reach/shared';
import { ArchiveStore } from './archive-store.js';
import { createPool, migrate } from './db.js';
import { Outbox } from './outbox.js';
import { isFinalRecord, readRunRecord, runKeys, toArchiveRow, type RawRunRecord } from './run-record.js';

export interface ArchiverOptions {
  redis: RedisClient;
  keys: Keys;
  databaseUrl: string;
  logger: Logger;
  registry: Registry;
  /** How long Redis keeps a run once archived, in s. */
  archivedRunRetentionS: number;
  retentionDays: number;
  batchSize: number;
  visibilityTimeoutMs: number;
  /** How long an idle archiver waits before looking at the outbox again, in ms. Default 200. */
  pollMs?: number;
  /** How often the backlog gauge is sampled, in ms. Default 5000. */
  sampleMs?: number;
  /** How often partitions ahead are made and expired ones dropped, in ms. Default one hour. */
  maintenanceMs?: number;
}

export interface Archiver {
  readonly id: string;
  readonly store: ArchiveStore;
  /** Runs archived (new rows) by this process. */
  readonly archived: () => number;
  close(): Promise<void>;
}

export function createArchiveMetrics(registry: Registry) {
  const registers = [registry];
  return {
    backlog: new Gauge({
      name: `${METRIC_PREFIX}archive_backlog`,
      help: 'Finished runs waiting in the outbox to be archived to PostgreSQL (sampled by each archiver).',
      registers,
    }),
    archived: new Counter({
      name: `${METRIC_PREFIX}archive_runs_total`,
      help: 'Runs an archiver wrote to PostgreSQL (new rows; a repeated write is not counted).',
      registers,
    }),
    failures: new Counter({
      name: `${METRIC_PREFIX}archive_batch_failures_total`,
      help: 'Outbox batches an archiver could not archive (left for a retry after the visibility timeout).',
      registers,
    }),
    batchDuration: new Histogram({
      name: `${METRIC_PREFIX}archive_batch_duration_seconds`,
      help: 'Time to archive one outbox batch: read from Redis, write to PostgreSQL, acknowledge.',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    }),
  };
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
  });

/**
 * Moves finished runs from Redis to PostgreSQL: claims a batch from the outbox, reads each run's record,
 * writes the final ones in one statement (idempotent), then shortens their Redis retention, drops them
 * from the Redis index of runs and acknowledges them. Killed at any point, nothing is lost: an
 * unacknowledged batch is claimed again after the visibility timeout, and a repeat writes nothing new.
 * PostgreSQL down: batches fail and wait in the outbox; the loop retries with a growing pause.
 */
export async function startArchiver(o: ArchiverOptions): Promise<Archiver> {
  const id = `archiver-${randomUUID().slice(0, 8)}`;
  const log = o.logger.child({ archiver: id });
  const pool = createPool(o.databaseUrl, {
    applicationName: 'agent-reach-archiver',
    onError: (err) => log.warn({ err: err.message }, 'postgres client error'),
  });
  const store = new ArchiveStore(pool);
  const outbox = new Outbox(o.redis, o.keys);
  const metrics = createArchiveMetrics(o.registry);
  const stop = new AbortController();
  let archived = 0;

  const sample = setInterval(() => {
    outbox.size().then(
      (n) => metrics.backlog.set(n),
      () => undefined,
    );
  }, o.sampleMs ?? 5000);
  sample.unref();
  void outbox.size().then(
    (n) => metrics.backlog.set(n),
    () => undefined,
  );

  let maintainedAt = 0;
  const maintain = async () => {
    await store.ensurePartitionsAhead();
    const dropped = await store.dropExpired(o.retentionDays);
    if (dropped.length) log.info({ dropped }, 'archive partitions past retention dropped');
    maintainedAt = Date.now();
  };

  const archiveBatch = async (ids: string[]) => {
    const records = await Promise.all(ids.map((runId) => readRunRecord(o.redis, o.keys, runId)));
    const gone = ids.filter((_, i) => records[i] === undefined);
    const final = records.filter((r): r is RawRunRecord => r !== undefined && isFinalRecord(r));
    const rows = [];
    const broken: string[] = [];
    for (const r of final) {
      try {
        rows.push(toArchiveRow(r));
      } catch (err) {
        broken.push(r.runId);
        log.error(
          { runId: r.runId, err: (err as Error).message },
          'run record does not parse; left in the outbox',
        );
      }
    }
    const written = await store.write(rows);
    archived += written;
    metrics.archived.inc(written);
    const done = rows.map((r) => r.run_id);
    // Committed: Redis may let the run go now (only ever sooner: LT), and the listing finds it in the archive.
    await Promise.all(
      done.map(async (runId) => {
        const tx = o.redis.multi();
        for (const key of runKeys(o.keys, runId)) tx.expire(key, o.archivedRunRetentionS, 'LT');
        await tx.exec();
      }),
    );
    if (done.length) await o.redis.zrem(o.keys.runIndex, ...done);
    await outbox.ack([...done, ...gone]);
    // A record that does not parse is looked at again in an hour (and logged each time).
    if (broken.length) await outbox.defer(broken, Date.now() + 3_600_000);
    // Runs not finished yet stay claimed: they are looked at again after the visibility timeout.
    return done.length;
  };

  const loop = async () => {
    let pause = 0;
    let migrated = false;
    while (!stop.signal.aborted) {
      try {
        if (!migrated) {
          const applied = await migrate(o.databaseUrl);
          if (applied.length) log.info({ applied }, 'archive migrations applied');
          migrated = true;
        }
        if (Date.now() - maintainedAt > (o.maintenanceMs ?? 3_600_000)) await maintain();
        const ids = await outbox.claim(o.batchSize, o.visibilityTimeoutMs);
        if (ids.length === 0) {
          await sleep(o.pollMs ?? 200, stop.signal);
          continue;
        }
        const end = metrics.batchDuration.startTimer();
        await archiveBatch(ids);
        end();
        pause = 0;
      } catch (err) {
        metrics.failures.inc();
        pause = Math.min(Math.max(pause * 2, 250), 10_000);
        log.warn(
          { err: (err as Error).message, retryInMs: pause },
          'archive batch failed; runs wait in the outbox',
        );
        await sleep(pause, stop.signal);
      }
    }
  };
  const running = loop();
  log.info({ batchSize: o.batchSize, visibilityTimeoutMs: o.visibilityTimeoutMs }, 'archiver started');
  return {
    id,
    store,
    archived: () => archived,
    async close() {
      stop.abort();
      clearInterval(sample);
      await running;
      await pool.end().catch(() => undefined);
    },
  };
}
