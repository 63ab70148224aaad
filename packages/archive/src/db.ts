import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { runner } from 'node-pg-migrate';

/** The migrations directory shipped with the package (beside `src/` and `dist/`). */
export const MIGRATIONS_DIR = fileURLToPath(new URL('../migrations', import.meta.url));

/** The table node-pg-migrate records applied migrations in. */
export const MIGRATIONS_TABLE = 'archive_migrations';

/** A pool on the archive's database; errors of idle clients are logged by the caller, never thrown. */
export function createPool(
  databaseUrl: string,
  options: {
    max?: number;
    onError?: (err: Error) => void;
    applicationName?: string;
    /** Longest a statement may run before PostgreSQL cancels it, in ms. Default 30 000. */
    statementTimeoutMs?: number;
  } = {},
) {
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    // Names this process's sessions in pg_stat_activity.
    application_name: options.applicationName ?? 'agent-reach',
    max: options.max ?? 4,
    // A locked or overloaded database fails a statement instead of holding a batch or a request forever.
    statement_timeout: options.statementTimeoutMs ?? 30_000,
    // A database that does not answer fails a batch instead of holding it.
    connectionTimeoutMillis: 5000,
    idleTimeoutMillis: 30_000,
  });
  pool.on('error', (err) => options.onError?.(err));
  return pool;
}

export type Pool = pg.Pool;

/**
 * Applies the migrations not applied yet, in order, under node-pg-migrate's advisory lock (several
 * processes starting at once wait for each other). Forward only: there is no down migration.
 * Returns the names of the migrations applied now.
 */
export async function migrate(databaseUrl: string): Promise<string[]> {
  const applied = await runner({
    databaseUrl,
    dir: MIGRATIONS_DIR,
    migrationsTable: MIGRATIONS_TABLE,
    direction: 'up',
    checkOrder: true,
    singleTransaction: true,
    advisoryLockMode: 'wait',
    log: () => undefined,
  });
  return applied.map((m) => m.name);
}

/*
 * Databases of one's own: the fault harness's archive, the benchmarks' and the tests' databases, each
 * created empty on a shared server and dropped with its connections afterwards.
 */

const withDatabase = (url: string, name: string) => {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
};

/** An empty database of one's own on a PostgreSQL server, with a pool on it; `drop` removes both. */
export interface OwnDatabase {
  readonly url: string;
  readonly name: string;
  readonly pool: Pool;
  drop(): Promise<void>;
}

/**
 * Creates an empty database named `<prefix>_<random>` on the server of `serverUrl` (whose database is
 * only what the new one is created from). `drop` ends the pool and drops it with its connections.
 */
export async function createDatabase(serverUrl: string, prefix: string): Promise<OwnDatabase> {
  const name = `${prefix}_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  const admin = createPool(serverUrl, { max: 1 });
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = withDatabase(serverUrl, name);
  const pool = createPool(url, { max: 4, onError: () => undefined });
  return {
    url,
    name,
    pool,
    async drop() {
      await pool.end().catch(() => undefined);
      const a = createPool(serverUrl, { max: 1 });
      try {
        await a.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await a.end();
      }
    },
  };
}
