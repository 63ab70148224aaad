import { createDatabase, type OwnDatabase } from '@agent-reach/faults';

/** The machine's PostgreSQL (trust auth); `postgres` is the database new ones are created from. */
export const POSTGRES_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/**
 * A database of the test file's own, created empty and dropped (with its connections) by `drop`. `pool`
 * is a connection pool on it for the test's own queries.
 */
export function testDatabase(): Promise<OwnDatabase> {
  return createDatabase(POSTGRES_URL, 'ar_test');
}
