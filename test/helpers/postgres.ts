import { Registry } from 'prom-client';
import { createDatabase, startArchiver, type Archiver, type OwnDatabase } from '@agent-reach/archive';
import type { Keys } from '@agent-reach/protocol';
import { createLogger, type RedisClient } from '@agent-reach/shared';

/** The machine's PostgreSQL (trust auth); `postgres` is the database new ones are created from. */
export const POSTGRES_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/**
 * A database of the test file's own, created empty and dropped (with its connections) by `drop`. `pool`
 * is a connection pool on it for the test's own queries.
 */
export function testDatabase(): Promise<OwnDatabase> {
  return createDatabase(POSTGRES_URL, 'ar_test');
}

/**
 * An archiver in the test's process that looks at the outbox every 20 ms and lets Redis keep an archived
 * run `archivedRunRetentionS` (default 1 s).
 */
export function startTestArchiver(o: {
  redis: RedisClient;
  keys: Keys;
  databaseUrl: string;
  archivedRunRetentionS?: number;
  batchSize?: number;
}): Promise<Archiver> {
  return startArchiver({
    redis: o.redis,
    keys: o.keys,
    databaseUrl: o.databaseUrl,
    logger: createLogger('archiver-test', { level: 'silent' }),
    registry: new Registry(),
    archivedRunRetentionS: o.archivedRunRetentionS ?? 1,
    retentionDays: 30,
    batchSize: o.batchSize ?? 50,
    visibilityTimeoutMs: 2000,
    pollMs: 20,
  });
}
