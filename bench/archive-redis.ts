import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { Registry } from 'prom-client';
import { Outbox, outboxKey, runKeys, startArchiver } from '@agent-reach/archive';
import { startDev } from '@agent-reach/cli';
import { createKeys, type Keys } from '@agent-reach/protocol';
import { RunControl } from '@agent-reach/scheduler';
import { constants, createLogger } from '@agent-reach/shared';
import { deleteByPrefix } from './redis-stats.js';

/** The demo's task (scripts/demo.ts): a weather lookup and a Markdown file, played by llm-sim. */
const TASK = '查一下上海天气，然后写一份周末两日游建议存成 md 文件';

/** Redis bytes per finished run at each stage of the hand-off to the archive (MEMORY USAGE, SAMPLES 0). */
export interface RedisPerArchivedRun {
  runs: number;
  /** A finished run's keys (record, results, ledger, run job) before the archiver took it. */
  finishedBytes: number;
  /** Per key of `finishedBytes`. */
  perKey: Record<string, number>;
  /** The outbox's bytes per run waiting in it. */
  outboxBytesPerRun: number;
  /** Once archived: the same keys, kept `archivedRetentionS` more (their TTL shortened), outbox emptied. */
  archivedBytes: number;
  /** TTL of a run's state key right after archiving, in s. */
  ttlAfterArchiveS: number;
  /** Once those keys expired: what a run still holds in Redis. */
  expiredBytes: number;
  archivedRetentionS: number;
}

async function bytesOf(redis: Redis, key: string): Promise<number> {
  return Number((await redis.call('MEMORY', 'USAGE', key, 'SAMPLES', '0')) ?? 0);
}

/** Mean bytes per run of each part of its record (and its run job), and their sum. */
async function weigh(redis: Redis, keys: Keys, runIds: string[]) {
  const parts: Record<string, (id: string) => string[]> = {
    'record (meta, state, messages, events, approvals)': (id) => [
      keys.runMeta(id),
      keys.runState(id),
      keys.runMessages(id),
      keys.runEvents(id),
      keys.runApprovals(id),
    ],
    'results, ledger, starts': (id) => [keys.results(id), keys.runCalls(id), keys.runStarts(id)],
    'run job': (id) => [`${keys.queuePrefix(keys.runsQueue)}:${keys.runsQueue}:${id}`],
  };
  const perKey: Record<string, number> = {};
  for (const [label, of] of Object.entries(parts)) {
    let sum = 0;
    for (const id of runIds) for (const key of of(id)) sum += await bytesOf(redis, key);
    perKey[label] = sum / runIds.length;
  }
  return { perKey, total: Object.values(perKey).reduce((a, b) => a + b, 0) };
}

async function until(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Runs `runs` demo runs through a scheduler and an executor in this process (llm-sim as the model) with
 * the archive on, on a fresh prefix of the machine's Redis, and weighs what each run keeps in Redis:
 * finished and waiting in the outbox, archived (kept `archivedRetentionS`), and once that expired.
 */
export async function redisPerArchivedRun(
  databaseUrl: string,
  runs: number,
  archivedRetentionS = 3,
): Promise<RedisPerArchivedRun> {
  const redisUrl = process.env.REDIS_URL ?? constants.DEFAULT_REDIS_URL;
  const prefix = `arb${randomUUID().slice(0, 8)}`;
  const keys = createKeys(prefix);
  const outputs = await mkdtemp(path.join(tmpdir(), 'ar-bench-archive-'));
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: null });
  const stack = await startDev({
    REDIS_URL: redisUrl,
    AR_KEY_PREFIX: prefix,
    DATABASE_URL: databaseUrl,
    ARCHIVED_RUN_RETENTION_S: String(archivedRetentionS),
    API_PORT: '0',
    OUTPUTS_DIR: outputs,
    LOG_LEVEL: 'error',
  });
  const control = new RunControl(redis, keys);
  let archiver: Awaited<ReturnType<typeof startArchiver>> | undefined;
  try {
    const runIds: string[] = [];
    for (let i = 0; i < runs; i += 10) {
      const ids = await Promise.all(
        Array.from({ length: Math.min(10, runs - i) }, () =>
          control.start({ agent: 'trip_planner', input: TASK }),
        ),
      );
      for (const id of ids) {
        const status = (await control.wait(id, 60_000)).status;
        if (status !== 'succeeded') throw new Error(`demo run ${id} ended ${status}`);
      }
      runIds.push(...ids);
    }
    const outbox = new Outbox(redis, keys);
    await until(async () => (await outbox.size()) === runIds.length, 10_000, 'every run in the outbox');
    const finished = await weigh(redis, keys, runIds);
    const outboxBytesPerRun = (await bytesOf(redis, outboxKey(keys))) / runIds.length;

    archiver = await startArchiver({
      redis,
      keys,
      databaseUrl,
      logger: createLogger('bench-archiver', { level: 'silent' }),
      registry: new Registry(),
      archivedRunRetentionS: archivedRetentionS,
      retentionDays: 30,
      batchSize: 50,
      visibilityTimeoutMs: 5000,
      pollMs: 20,
    });
    await until(async () => (await outbox.size()) === 0, 60_000, 'the outbox to drain');
    const ttlAfterArchiveS = await redis.ttl(keys.runState(runIds[0]!));
    const archived = await weigh(redis, keys, runIds);
    const outboxAfter = (await bytesOf(redis, outboxKey(keys))) / runIds.length;
    await until(
      async () => {
        for (const id of runIds) if ((await redis.exists(...runKeys(keys, id))) > 0) return false;
        return true;
      },
      (archivedRetentionS + 30) * 1000,
      'the archived runs to expire from Redis',
    );
    const expired = await weigh(redis, keys, runIds);
    return {
      runs: runIds.length,
      finishedBytes: finished.total,
      perKey: finished.perKey,
      outboxBytesPerRun,
      archivedBytes: archived.total + outboxAfter,
      ttlAfterArchiveS,
      expiredBytes: expired.total + outboxAfter,
      archivedRetentionS,
    };
  } finally {
    await archiver?.close();
    await control.close();
    await stack.close();
    await deleteByPrefix(redis, prefix);
    await redis.quit();
    await rm(outputs, { recursive: true, force: true });
  }
}
