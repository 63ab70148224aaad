import { ArchiveStore, createPool, Outbox, type Pool } from '@agent-reach/archive';
import type { Keys } from '@agent-reach/protocol';
import type { AgentReachConfig, Logger, RedisClient } from '@agent-reach/shared';
import type { RunArchive } from './run-store.js';

/** The archive as a scheduler, the API or the CLI uses it: hand-offs to the outbox, reads from PostgreSQL. */
export interface OpenedRunArchive extends RunArchive {
  readonly store: ArchiveStore;
  close(): Promise<void>;
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
    record: (runId) => store.record(runId),
    async close() {
      await pool.end().catch(() => undefined);
    },
  };
}
