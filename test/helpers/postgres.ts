import { randomUUID } from 'node:crypto';
import { createPool, type Pool } from '@agent-reach/archive';

/** The machine's PostgreSQL (trust auth); `postgres` is the database new ones are created from. */
export const POSTGRES_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

const withDatabase = (url: string, name: string) => {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
};

/**
 * A database of the test file's own, created empty and dropped (with its connections) by `drop`. `pool`
 * is a connection pool on it for the test's own queries.
 */
export async function testDatabase(): Promise<{
  url: string;
  name: string;
  pool: Pool;
  drop(): Promise<void>;
}> {
  const name = `ar_test_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  const admin = createPool(POSTGRES_URL, { max: 1 });
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = withDatabase(POSTGRES_URL, name);
  const pool = createPool(url, { max: 4, onError: () => undefined });
  return {
    url,
    name,
    pool,
    async drop() {
      await pool.end().catch(() => undefined);
      const a = createPool(POSTGRES_URL, { max: 1 });
      try {
        await a.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await a.end();
      }
    },
  };
}
