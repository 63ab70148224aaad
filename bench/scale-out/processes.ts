import { spawn, type ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import net from 'node:net';
import { Redis } from 'ioredis';
import { startChild } from '../../test/helpers/processes.js';

/** Every process started here; none outlives the benchmark, even when it is interrupted or fails. */
const started = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of started)
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(130));

function track(child: ChildProcess): ChildProcess {
  started.add(child);
  child.once('exit', () => started.delete(child));
  return child;
}

/** A platform process (an executor's or scheduler's `main.ts`) forked under tsx. */
export interface PlatformChild {
  readonly label: string;
  readonly pid: number;
  /** CPU time (user + system) the process has used so far, in µs, read from /proc (NaN elsewhere). */
  cpuUs(): Promise<number>;
  /** SIGTERM, then waits for the exit. */
  stop(): Promise<void>;
}

/**
 * Forks a package's `main.ts` under tsx, as the test helpers do, and waits for its `{ type: 'ready' }`
 * IPC message (sent once its workers are up).
 */
export async function startPlatformChild(
  label: string,
  script: string,
  env: Record<string, string>,
): Promise<PlatformChild> {
  const child = startChild(script, env);
  const proc = track(child.proc);
  await child.ready.catch((err: unknown) => {
    throw new Error(`${label}: ${(err as Error).message}`);
  });
  const pid = proc.pid as number;
  return {
    label,
    pid,
    cpuUs: () => processCpuUs(pid),
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      const code = await child.exited;
      if (code !== 0 && code !== null) console.error(`${label} exited ${code}:\n${child.output()}`);
    },
  };
}

const CLOCK_TICKS_PER_S = 100;

/** utime + stime of a process from /proc/<pid>/stat, in µs (NaN when unreadable). */
export async function processCpuUs(pid: number): Promise<number> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces) start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    return (ticks / CLOCK_TICKS_PER_S) * 1e6;
  } catch {
    return Number.NaN;
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** A Redis server of the benchmark's own, so its CPU and command counters are the benchmark's alone. */
export interface PrivateRedis {
  readonly url: string;
  readonly pid: number;
  stop(): Promise<void>;
}

/**
 * Starts `redis-server` on a free loopback port, without persistence (no fork for RDB or AOF during a
 * measurement) and with `noeviction`, as the platform requires. Rejects when `redis-server` is missing.
 */
export async function startPrivateRedis(): Promise<PrivateRedis> {
  const port = await freePort();
  const proc = track(
    spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--maxmemory-policy',
        'noeviction',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    ),
  );
  let out = '';
  proc.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  const failed = new Promise<never>((_, reject) => {
    proc.once('error', reject);
    void exited.then(() => reject(new Error(`redis-server exited before it was ready:\n${out}`)));
  });
  failed.catch(() => undefined);
  const url = `redis://127.0.0.1:${port}`;
  const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  probe.on('error', () => undefined);
  try {
    for (let i = 0; ; i += 1) {
      try {
        await Promise.race([probe.connect().then(() => probe.ping()), failed]);
        break;
      } catch (err) {
        if (i >= 50 || proc.exitCode !== null) throw err;
        probe.disconnect();
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  } finally {
    probe.disconnect();
  }
  return {
    url,
    pid: proc.pid as number,
    async stop() {
      if (proc.exitCode === null) proc.kill('SIGTERM');
      await exited;
    },
  };
}
