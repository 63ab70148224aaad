import {
  ArchiveStore,
  createPool,
  databaseUnavailable,
  Outbox,
  type DeadLetter,
  type Pool,
} from '@agent-reach/archive';
import type { Keys } from '@agent-reach/protocol';
import type { AgentReachConfig, Logger, RedisClient } from '@agent-reach/shared';
import type { RunArchive } from './run-store.js';

/** The archive as a scheduler, the API or the CLI uses it: hand-offs to the outbox, reads from PostgreSQL. */
export interface OpenedRunArchive extends RunArchive {
  readonly store: ArchiveStore;
  /** Runs the archive refused every try, set aside with their errors (their records stay in Redis). */
  deadLetters(runId?: string): Promise<DeadLetter[]>;
  close(): Promise<void>;
}

/**
 * A read of the run archive that PostgreSQL could not answer (down, restarting, too slow: its statement
 * timed out). The API answers it 503 with `Retry-After`, naming PostgreSQL; never a 500.
 */
export class ArchiveUnavailable extends Error {
  constructor(cause: unknown) {
    super(
      `the run archive (PostgreSQL) cannot answer: ${cause instanceof Error ? cause.message : String(cause)}`,
      { cause },
    );
    this.name = 'ArchiveUnavailable';
  }
}

/** Runs an archive read, turning PostgreSQL being away or too slow into `ArchiveUnavailable`. */
export async function readArchive<T>(read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (err) {
    if (databaseUnavailable(err)) throw new ArchiveUnavailable(err);
    throw err;
  }
}

/** Opens the run archive when `DATABASE_URL` is set; undefined without it (Redis only, as before). */
export function openRunArchive(
  config: AgentReachConfig,
  redis: RedisClient,
  keys: Keys,
  logger?: Logger,
): OpenedRunArchive | undefined {
  const url = config.archive.databaseUrl;
  if (!url) return undefined;
  const pool: Pool = createPool(url, {
    // A request reading the archive answers an error rather than waiting on a locked or stuck database.
    statementTimeoutMs: 5000,
    onError: (err) => logger?.warn({ err: err.message }, 'archive database client error'),
  });
  const store = new ArchiveStore(pool);
  const outbox = new Outbox(redis, keys);
  return {
    store,
    handOff: (runId) => outbox.add(runId),
    record: (runId) => readArchive(() => store.record(runId)),
    deadLetters: (runId) => outbox.deadLetters(runId),
    async close() {
      await pool.end().catch(() => undefined);
    },
  };
}
