import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createPool } from '@agent-reach/archive';
import { forget, killOnExit } from './reaper.js';
import { freePort } from './private-redis.js';

/** Where Debian and Ubuntu install PostgreSQL 15's server programs; `POSTGRES_BIN` overrides it. */
export const DEFAULT_POSTGRES_BIN = '/usr/lib/postgresql/15/bin';

/** How long a private PostgreSQL may take to answer after it is started, in ms. */
const START_TIMEOUT_MS = 30_000;

/**
 * A PostgreSQL server of the caller's own, on a free port, its cluster in a temporary directory: it can be
 * stopped, killed and started again without touching the server other tests share on 5432.
 */
export interface PrivatePostgres {
  readonly port: number;
  /** `postgres://postgres@127.0.0.1:<port>/postgres` (trust auth). */
  readonly url: string;
  readonly dir: string;
  readonly running: boolean;
  /** Stops the server at once, as a crash would (`SIGQUIT`: immediate shutdown, crash recovery on start). */
  kill(): Promise<void>;
  /** Starts the server again on the same port and cluster, and waits until it answers. */
  start(): Promise<void>;
  /** Kills the server (if running) and removes its directory. Safe to call twice. */
  destroy(): Promise<void>;
  /** What the server printed, for failure messages. */
  output(): string;
}

/** Root may not run PostgreSQL: the server then runs as the `postgres` user (setpriv execs, no fork). */
const asServerUser = (argv: string[]): [string, string[]] =>
  process.getuid?.() === 0
    ? ['setpriv', ['--reuid=postgres', '--regid=postgres', '--init-groups', '--', ...argv]]
    : [argv[0]!, argv.slice(1)];

/** Whether a PostgreSQL on the port accepts a query within a second. */
async function answers(url: string): Promise<boolean> {
  const pool = createPool(url, { max: 1, onError: () => undefined });
  try {
    await pool.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await pool.end().catch(() => undefined);
  }
}

/** Creates a cluster with `initdb` (trust auth, no fsync: it is thrown away) and starts its server. */
export async function startPrivatePostgres(options: { bin?: string } = {}): Promise<PrivatePostgres> {
  const bin = options.bin ?? process.env.POSTGRES_BIN ?? DEFAULT_POSTGRES_BIN;
  if (!existsSync(path.join(bin, 'initdb')))
    throw new Error(`no PostgreSQL server programs in ${bin} (set POSTGRES_BIN)`);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'ar-faults-pg-'));
  const data = path.join(dir, 'data');
  if (process.getuid?.() === 0) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
    chownSync(dir, uid, gid);
    chmodSync(dir, 0o700);
  }
  const [initdb, initArgs] = asServerUser([
    path.join(bin, 'initdb'),
    '-D',
    data,
    '-A',
    'trust',
    '-U',
    'postgres',
    '--no-sync',
  ]);
  execFileSync(initdb, initArgs, { stdio: 'ignore' });
  const port = await freePort();
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  let proc: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  let out = '';
  let destroyed = false;

  const launch = async () => {
    const [cmd, args] = asServerUser([
      path.join(bin, 'postgres'),
      '-D',
      data,
      '-p',
      String(port),
      '-k',
      dir,
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'fsync=off',
      '-c',
      'max_connections=200',
    ]);
    const p = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    proc = p;
    killOnExit(p.pid);
    let gone = false;
    exited = new Promise<void>((resolve) =>
      p.once('exit', () => {
        forget(p.pid);
        gone = true;
        if (proc === p) proc = undefined;
        resolve();
      }),
    );
    p.once('error', (err) => (out += `\nspawn error: ${err.message}`));
    p.stdout?.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-20_000)));
    p.stderr?.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-20_000)));
    const end = Date.now() + START_TIMEOUT_MS;
    for (;;) {
      if (gone) throw new Error(`postgres on port ${port} exited at start:\n${out}`);
      if (await answers(url)) return;
      if (Date.now() > end) throw new Error(`postgres on port ${port} did not answer in time:\n${out}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };

  const kill = async () => {
    const p = proc;
    if (!p) return;
    p.kill('SIGQUIT');
    await exited;
  };

  try {
    await launch();
  } catch (err) {
    await kill();
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    port,
    url,
    dir,
    get running() {
      return proc !== undefined;
    },
    kill,
    async start() {
      if (destroyed) throw new Error('the private PostgreSQL was destroyed');
      if (proc) return;
      await launch();
    },
    async destroy() {
      destroyed = true;
      await kill();
      rmSync(dir, { recursive: true, force: true });
    },
    output: () => out,
  };
}
