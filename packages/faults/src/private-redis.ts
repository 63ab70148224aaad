import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { forget, killOnExit } from './reaper.js';

/**
 * A `redis-server` of the test's own, on a free port, persisting to an append-only file in a temporary
 * directory (fsync on every write), so that it can be killed, paused or starved without touching the
 * Redis other tests share, and restarted from its AOF on the same port.
 */
export interface PrivateRedis {
  readonly port: number;
  readonly url: string;
  /** The data directory (AOF); removed by `destroy`. */
  readonly dir: string;
  /** Whether the server process is running. */
  readonly running: boolean;
  /** `kill -9`: the server dies at once, with whatever its AOF holds. */
  kill9(): Promise<void>;
  /** Starts the server again on the same port and directory (it loads its AOF) and waits until it answers. */
  restart(): Promise<void>;
  /** Kills the server (if running) and removes its directory. Safe to call twice. */
  destroy(): Promise<void>;
  /** What the server printed, for failure messages. */
  output(): string;
}

/** A TCP port nothing listens on right now (the OS's pick). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === 'object') resolve(address.port);
        else reject(new Error('no port'));
      });
    });
  });
}

/** Starts a private `redis-server` (on `port`, else a free one) and waits until it answers PING. */
export async function startPrivateRedis(
  options: { extraArgs?: string[]; port?: number } = {},
): Promise<PrivateRedis> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'ar-faults-redis-'));
  const port = options.port ?? (await freePort());
  const args = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--dir',
    dir,
    '--appendonly',
    'yes',
    '--appendfsync',
    'always',
    '--save',
    '',
    '--enable-debug-command',
    'yes',
    '--maxmemory-policy',
    'noeviction',
    ...(options.extraArgs ?? []),
  ];
  let proc: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  let out = '';
  let destroyed = false;

  const launch = async () => {
    const p = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
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
    const end = Date.now() + 20_000;
    for (;;) {
      if (gone) throw new Error(`redis-server on port ${port} exited at start:\n${out}`);
      if (await answers(port)) return;
      if (Date.now() > end)
        throw new Error(`redis-server on port ${port} did not answer within 20 s:\n${out}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  const kill = async () => {
    const p = proc;
    if (!p) return;
    p.kill('SIGKILL');
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
    url: `redis://127.0.0.1:${port}`,
    dir,
    get running() {
      return proc !== undefined;
    },
    kill9: kill,
    async restart() {
      if (destroyed) throw new Error('the private redis-server was destroyed');
      await kill();
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

/** A one-off connection to the Redis on a local port: connects when told, never retries nor queues. */
export function probeRedis(port: number): Redis {
  const probe = new Redis({
    port,
    host: '127.0.0.1',
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 1000,
  });
  probe.on('error', () => undefined);
  return probe;
}

/** Whether a Redis on the port answers PING within a second (loading an AOF answers an error: not yet). */
export async function answers(port: number): Promise<boolean> {
  const probe = probeRedis(port);
  try {
    await probe.connect();
    return (await probe.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    probe.disconnect();
  }
}
