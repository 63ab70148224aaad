import { setTimeout as delay } from 'node:timers/promises';
import { randomUUID } from 'node:crypto';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { Keys } from '@agent-reach/protocol';
import { METRIC_PREFIX, type Logger, type RedisClient } from '@agent-reach/shared';
import * as constants from './constants.js';
import { ArchiveStore, databaseUnavailable } from './archive-store.js';
import { createPool, migrate } from './db.js';
import { Outbox } from './outbox.js';
import {
  isFinalRecord,
  readRunRecord,
  runKeys,
  toArchiveRow,
  type ArchiveRow,
  type RawRunRecord,
} from './run-record.js';

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
  /** Tries at a run PostgreSQL refuses before it is dead-lettered. Default `ARCHIVE_MAX_TRIES` (5). */
  maxTries?: number;
  /** First pause before an entry not taken is looked at again, doubled per try, in ms. Default 1000. */
  retryBaseMs?: number;
  /** Longest such pause, in ms. Default 300 000. */
  retryMaxMs?: number;
}

/** The archiver's options with every default filled in (see {@link resolveArchiverOptions}). */
export type ResolvedArchiverOptions = ArchiverOptions &
  Required<
    Pick<ArchiverOptions, 'pollMs' | 'sampleMs' | 'maintenanceMs' | 'maxTries' | 'retryBaseMs' | 'retryMaxMs'>
  >;

/** Every default of the archiver, in one place. */
export function resolveArchiverOptions(o: ArchiverOptions): ResolvedArchiverOptions {
  return {
    ...o,
    pollMs: o.pollMs ?? 200,
    sampleMs: o.sampleMs ?? 5000,
    maintenanceMs: o.maintenanceMs ?? 3_600_000,
    maxTries: o.maxTries ?? constants.ARCHIVE_MAX_TRIES,
    retryBaseMs: o.retryBaseMs ?? constants.ARCHIVE_RETRY_BASE_MS,
    retryMaxMs: o.retryMaxMs ?? constants.ARCHIVE_RETRY_MAX_MS,
  };
}

/** A new archiver's id: `archiver-<8 random hex>`, in its logs and its outbox claims. */
function newArchiverId(): string {
  return `archiver-${randomUUID().slice(0, 8)}`;
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
    lag: new Gauge({
      name: `${METRIC_PREFIX}archive_lag_seconds`,
      help: 'How long the most overdue run in the outbox has waited past its due time (0: none overdue; sampled by each archiver).',
      registers,
    }),
    archived: new Counter({
      name: `${METRIC_PREFIX}archive_runs_total`,
      help: 'Runs an archiver wrote to PostgreSQL (new rows; a repeated write is not counted).',
      registers,
    }),
    deadLetters: new Gauge({
      name: `${METRIC_PREFIX}archive_dead_letters`,
      help: 'Finished runs set aside because PostgreSQL refused them every try (sampled by each archiver; kept in Redis).',
      registers,
    }),
    deadLettered: new Counter({
      name: `${METRIC_PREFIX}archive_dead_lettered_total`,
      help: 'Runs this archiver set aside as dead letters after ARCHIVE_MAX_TRIES refusals.',
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

/**
 * Waits `ms`, or until `signal` aborts. The loop waits on one signal for as long as it runs: Node's timer
 * takes its listener off again when it fires (one left behind per idle poll had piled up without end).
 */
const sleep = (ms: number, signal: AbortSignal) => delay(ms, undefined, { signal }).catch(() => undefined);

/** What one archiver's batches and loop work with. */
interface ArchiverContext {
  o: ResolvedArchiverOptions;
  log: Logger;
  store: ArchiveStore;
  outbox: Outbox;
  metrics: ReturnType<typeof createArchiveMetrics>;
  stop: AbortSignal;
  /** New rows written by this process. */
  archived: number;
  /** When partitions were last made ahead and expired ones dropped (epoch ms). */
  maintainedAt: number;
}

/**
 * Moves finished runs from Redis to PostgreSQL: claims a batch from the outbox, reads each run's record,
 * writes the final ones in one statement (idempotent), then shortens their Redis retention, drops them
 * from the Redis index of runs and acknowledges them. Killed at any point, nothing is lost: an
 * unacknowledged batch is claimed again after the visibility timeout, and a repeat writes nothing new.
 * PostgreSQL down: batches fail and wait in the outbox; the loop retries with a growing pause.
 */
export async function startArchiver(given: ArchiverOptions): Promise<Archiver> {
  const o = resolveArchiverOptions(given);
  const id = newArchiverId();
  const log = o.logger.child({ archiver: id });
  const pool = createPool(o.databaseUrl, {
    applicationName: 'agent-reach-archiver',
    onError: (err) => log.warn({ err: err.message }, 'postgres client error'),
  });
  const stop = new AbortController();
  const ctx: ArchiverContext = {
    o,
    log,
    store: new ArchiveStore(pool),
    outbox: new Outbox(o.redis, o.keys),
    metrics: createArchiveMetrics(o.registry),
    stop: stop.signal,
    archived: 0,
    maintainedAt: 0,
  };
  const stopSampling = sampleBacklog(ctx);
  const running = archiveLoop(ctx);
  log.info({ batchSize: o.batchSize, visibilityTimeoutMs: o.visibilityTimeoutMs }, 'archiver started');
  return {
    id,
    store: ctx.store,
    archived: () => ctx.archived,
    async close() {
      stop.abort();
      stopSampling();
      await running;
      await pool.end().catch(() => undefined);
    },
  };
}

/** Samples the outbox's size, dead letters and lag into their gauges now and every `sampleMs`; returns the stop. */
function sampleBacklog({ outbox, metrics, o }: ArchiverContext): () => void {
  const sample = () =>
    Promise.all([outbox.size(), outbox.deadCount(), outbox.firstDueAt()]).then(
      ([backlog, dead, dueAt]) => {
        metrics.backlog.set(backlog);
        metrics.deadLetters.set(dead);
        metrics.lag.set(dueAt === undefined ? 0 : Math.max(0, Date.now() - dueAt) / 1000);
      },
      () => undefined,
    );
  const timer = setInterval(() => void sample(), o.sampleMs);
  timer.unref();
  void sample();
  return () => clearInterval(timer);
}

/** Makes the partitions ahead and drops those past retention. */
async function maintain(ctx: ArchiverContext): Promise<void> {
  await ctx.store.ensurePartitionsAhead();
  const dropped = await ctx.store.dropExpired(ctx.o.retentionDays);
  if (dropped.length) ctx.log.info({ dropped }, 'archive partitions past retention dropped');
  ctx.maintainedAt = Date.now();
}

/**
 * Migrates once, then claims and archives batches until stopped; a failed step (PostgreSQL or Redis
 * away) is retried after a pause doubling from 250 ms to 10 s.
 */
async function archiveLoop(ctx: ArchiverContext): Promise<void> {
  const { o, log, metrics, outbox, stop } = ctx;
  let pause = 0;
  let migrated = false;
  while (!stop.aborted) {
    try {
      if (!migrated) {
        const applied = await migrate(o.databaseUrl);
        if (applied.length) log.info({ applied }, 'archive migrations applied');
        migrated = true;
      }
      if (Date.now() - ctx.maintainedAt > o.maintenanceMs) await maintain(ctx);
      const ids = await outbox.claim(o.batchSize, o.visibilityTimeoutMs);
      if (ids.length === 0) {
        await sleep(o.pollMs, stop);
        continue;
      }
      const end = metrics.batchDuration.startTimer();
      await archiveBatch(ctx, ids);
      end();
      pause = 0;
    } catch (err) {
      metrics.failures.inc();
      pause = Math.min(Math.max(pause * 2, 250), 10_000);
      log.warn(
        { err: (err as Error).message, retryInMs: pause },
        'archive batch failed; runs wait in the outbox',
      );
      await sleep(pause, stop);
    }
  }
}

/** A run the archive could not take this time, and why. */
interface Refusal {
  runId: string;
  error: string;
}

/** The rows of the final records; a record that does not parse is refused (and logged). */
function rowsOf(ctx: ArchiverContext, final: RawRunRecord[]): { rows: ArchiveRow[]; broken: Refusal[] } {
  const rows: ArchiveRow[] = [];
  const broken: Refusal[] = [];
  for (const r of final) {
    try {
      rows.push(toArchiveRow(r));
    } catch (err) {
      broken.push({ runId: r.runId, error: `its record does not parse: ${(err as Error).message}` });
      ctx.log.error({ runId: r.runId, err: (err as Error).message }, 'run record does not parse');
    }
  }
  return { rows, broken };
}

/**
 * Writes the rows in one statement; when PostgreSQL refuses it for what a row holds (not an outage), each
 * row alone, so that one run it cannot take never holds the others. An outage throws.
 */
async function writeRows(
  ctx: ArchiverContext,
  rows: ArchiveRow[],
): Promise<{ written: number; refused: Refusal[] }> {
  try {
    return { written: await ctx.store.write(rows), refused: [] };
  } catch (err) {
    if (databaseUnavailable(err)) throw err;
    if (rows.length === 1) return { written: 0, refused: [{ runId: rows[0]!.run_id, error: message(err) }] };
  }
  let written = 0;
  const refused: Refusal[] = [];
  for (const row of rows) {
    try {
      written += await ctx.store.write([row]);
    } catch (err) {
      if (databaseUnavailable(err)) throw err;
      refused.push({ runId: row.run_id, error: message(err) });
    }
  }
  return { written, refused };
}

const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

/** The pause before the `tries`-th look again at one entry: doubling, capped. */
const retryDelayMs = ({ o }: ArchiverContext, tries: number) =>
  Math.min(o.retryBaseMs * 2 ** Math.max(0, tries - 1), o.retryMaxMs);

/** Redis keeps these runs until their rows are committed: their keys lose their TTL (a commit sets it again). */
async function hold(ctx: ArchiverContext, runIds: readonly string[]): Promise<void> {
  const { redis, keys } = ctx.o;
  await Promise.all(
    runIds.map(async (runId) => {
      const tx = redis.multi();
      for (const key of runKeys(keys, runId)) tx.persist(key);
      await tx.exec();
    }),
  );
}

/**
 * Runs PostgreSQL refused: each is tried again after a growing pause, and after `ARCHIVE_MAX_TRIES` set
 * aside as a dead letter with its error (its record kept in Redis), so that it blocks no other run.
 */
async function refuse(ctx: ArchiverContext, refusals: readonly Refusal[]): Promise<void> {
  const { outbox, log, metrics } = ctx;
  for (const { runId, error } of refusals) {
    const tries = await outbox.tried(runId);
    if (tries < ctx.o.maxTries) {
      log.warn({ runId, tries, err: error }, 'archive refused a run; tried again later');
      await outbox.defer([runId], Date.now() + retryDelayMs(ctx, tries));
      continue;
    }
    await hold(ctx, [runId]);
    await outbox.deadLetter({ runId, error, tries, at: Date.now() });
    metrics.deadLettered.inc();
    log.error({ runId, tries, err: error }, 'archive refused a run every try; set aside as a dead letter');
  }
}

/**
 * Entries whose run has no record in Redis: archived before (a row exists: the entry is done), not
 * written yet (a run whose first checkpoint is its final one, or a late checkpoint: looked at again), or
 * expired long ago (dropped once missing for `ARCHIVE_MISSING_RECORD_GIVE_UP_MS`). Returns the done ones.
 */
async function settleMissing(ctx: ArchiverContext, missing: readonly string[]): Promise<string[]> {
  if (missing.length === 0) return [];
  const archived = await ctx.store.archivedOf(missing);
  const done = missing.filter((id) => archived.has(id));
  const now = Date.now();
  for (const runId of missing) {
    if (archived.has(runId)) continue;
    const since = await ctx.outbox.missingSince(runId, now);
    if (now - since >= constants.ARCHIVE_MISSING_RECORD_GIVE_UP_MS) {
      ctx.log.warn(
        { runId, missingSinceMs: since },
        'outbox entry dropped: its run has had no record for too long',
      );
      done.push(runId);
      continue;
    }
    await ctx.outbox.defer([runId], now + retryDelayMs(ctx, await ctx.outbox.tried(runId, 'waited')));
  }
  return done;
}

/** Archives one claimed batch; returns how many runs it archived (or found archived before). */
async function archiveBatch(ctx: ArchiverContext, ids: string[]): Promise<number> {
  const { o, outbox } = ctx;
  const records = await Promise.all(ids.map((runId) => readRunRecord(o.redis, o.keys, runId)));
  const missing = ids.filter((_, i) => records[i] === undefined);
  const present = records.filter((r): r is RawRunRecord => r !== undefined);
  const final = present.filter(isFinalRecord);
  const { rows, broken } = rowsOf(ctx, final);
  let result: Awaited<ReturnType<typeof writeRows>>;
  try {
    result = await writeRows(ctx, rows);
  } catch (err) {
    // PostgreSQL away: the batch waits in the outbox, and Redis keeps its runs however long that takes.
    await hold(
      ctx,
      rows.map((r) => r.run_id),
    ).catch(() => undefined);
    throw err;
  }
  const { written, refused } = result;
  ctx.archived += written;
  ctx.metrics.archived.inc(written);
  const notTaken = new Set(refused.map((r) => r.runId));
  const done = rows.map((r) => r.run_id).filter((id) => !notTaken.has(id));
  // Committed: Redis may let the run go now (only ever sooner: LT), and the listing finds it in the archive.
  await Promise.all(
    done.map(async (runId) => {
      const tx = o.redis.multi();
      for (const key of runKeys(o.keys, runId)) tx.expire(key, o.archivedRunRetentionS, 'LT');
      await tx.exec();
    }),
  );
  if (done.length) await o.redis.zrem(o.keys.runIndex, ...done);
  const gone = await settleMissing(ctx, missing);
  await outbox.ack([...done, ...gone]);
  await refuse(ctx, [...broken, ...refused]);
  // Runs not final yet (a final checkpoint still on its way, or a run taken over) are looked at again soon.
  const later = present.filter((r) => !isFinalRecord(r)).map((r) => r.runId);
  for (const runId of later)
    await outbox.defer([runId], Date.now() + retryDelayMs(ctx, await outbox.tried(runId, 'waited')));
  return done.length;
}
