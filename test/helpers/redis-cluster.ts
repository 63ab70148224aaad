import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { forget, killOnExit } from './reaper.js';
import { answers, freePort, probeRedis } from './redis-server.js';

const exec = promisify(execFile);

/** Whether `redis-server` and `redis-cli` can be run here (the cluster tests are skipped without them). */
export function hasRedisServer(): boolean {
  return ['redis-server', 'redis-cli'].every((bin) => spawnSync(bin, ['--version']).status === 0);
}

/** One `redis-server` of the cluster. */
export interface ClusterNodeProcess {
  readonly port: number;
  /** Whether its process is running. */
  readonly running: boolean;
  /** `kill -9`: the node dies at once. */
  kill9(): Promise<void>;
}

/**
 * A Redis Cluster of the test's own: six `redis-server` processes (three masters, three replicas) on
 * free ports, each with its own directory in a temporary one, `cluster-enabled` and an append-only file.
 */
export interface PrivateCluster {
  readonly nodes: readonly ClusterNodeProcess[];
  /** The startup nodes as `REDIS_URL` takes them: comma-separated `redis://` URLs. */
  readonly url: string;
  /** The node serving `key`'s slot as a master now (asked of a live node). */
  masterOf(key: string): Promise<ClusterNodeProcess>;
  /** `CLUSTER KEYSLOT key`, asked of a live node. */
  keySlot(key: string): Promise<number>;
  /**
   * Waits until a live node's `CLUSTER NODES` names a master other than `formerPort` for `slot`;
   * resolves to when that was first seen (epoch ms, polled every 50 ms).
   */
  waitPromoted(slot: number, formerPort: number, timeoutMs: number): Promise<number>;
  /** Waits until a replica has taken over every slot of a dead master and the cluster state is ok. */
  waitHealthy(timeoutMs?: number): Promise<void>;
  /** Kills every node and removes the directory. Safe to call twice. */
  destroy(): Promise<void>;
  /** What the nodes printed, for failure messages. */
  output(): string;
}

/** How long a master may be unreachable before its replica is promoted (kept short for the tests). */
const NODE_TIMEOUT_MS = 2000;

/** Starts six nodes, joins them with `redis-cli --cluster create`, and waits for `cluster_state:ok`. */
export async function startPrivateCluster(): Promise<PrivateCluster> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'ar-cluster-'));
  const procs: Array<{ port: number; proc: ChildProcess | undefined; exited: Promise<void> }> = [];
  let out = '';
  const destroy = async () => {
    await Promise.all(procs.map((p) => kill(p)));
    rmSync(dir, { recursive: true, force: true });
  };
  const kill = async (p: (typeof procs)[number]) => {
    if (!p.proc) return;
    p.proc.kill('SIGKILL');
    await p.exited;
  };
  try {
    for (let i = 0; i < 6; i++) {
      const port = await freePort();
      const nodeDir = path.join(dir, String(port));
      mkdirSync(nodeDir);
      const proc = spawn(
        'redis-server',
        [
          '--port',
          String(port),
          '--bind',
          '127.0.0.1',
          '--dir',
          nodeDir,
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          'nodes.conf',
          '--cluster-node-timeout',
          String(NODE_TIMEOUT_MS),
          '--appendonly',
          'yes',
          '--save',
          '',
          '--maxmemory-policy',
          'noeviction',
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      killOnExit(proc.pid);
      const entry = { port, proc: proc as ChildProcess | undefined, exited: Promise.resolve() };
      entry.exited = new Promise<void>((resolve) =>
        proc.once('exit', () => {
          forget(proc.pid);
          entry.proc = undefined;
          resolve();
        }),
      );
      proc.stdout?.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-40_000)));
      proc.stderr?.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-40_000)));
      procs.push(entry);
    }
    for (const p of procs) await until(() => answers(p.port), 20_000, `node ${p.port} to answer`);
    await exec(
      'redis-cli',
      [
        '--cluster',
        'create',
        ...procs.map((p) => `127.0.0.1:${p.port}`),
        '--cluster-replicas',
        '1',
        '--cluster-yes',
      ],
      { timeout: 60_000 },
    );
  } catch (err) {
    await destroy();
    throw new Error(`could not start a Redis Cluster: ${(err as Error).message}\n${out}`, { cause: err });
  }

  const nodes: ClusterNodeProcess[] = procs.map((p) => ({
    port: p.port,
    get running() {
      return p.proc !== undefined;
    },
    kill9: () => kill(p),
  }));
  const live = () => procs.filter((p) => p.proc !== undefined);
  /** `CLUSTER INFO` and `CLUSTER SLOTS` as every live node sees them agree on a healthy cluster. */
  const healthy = async () => {
    for (const p of live()) {
      const client = probeRedis(p.port);
      try {
        await client.connect();
        const info = (await client.call('CLUSTER', 'INFO')) as string;
        if (!/cluster_state:ok/.test(info)) return false;
        const slots = (await client.call('CLUSTER', 'SLOTS')) as Array<[number, number, [string, number]]>;
        // Every slot range is served by a live master.
        if (slots.some(([, , master]) => !live().some((q) => q.port === Number(master[1])))) return false;
      } catch {
        return false;
      } finally {
        client.disconnect();
      }
    }
    return true;
  };
  const cluster: PrivateCluster = {
    nodes,
    url: procs.map((p) => `redis://127.0.0.1:${p.port}`).join(','),
    async masterOf(key) {
      const p = live()[0];
      if (!p) throw new Error('no live node');
      const client = probeRedis(p.port);
      try {
        await client.connect();
        const slot = Number(await client.call('CLUSTER', 'KEYSLOT', key));
        const slots = (await client.call('CLUSTER', 'SLOTS')) as Array<[number, number, [string, number]]>;
        const range = slots.find(([from, to]) => slot >= from && slot <= to);
        const node = nodes.find((n) => n.port === Number(range?.[2][1]));
        if (!node) throw new Error(`no master serves slot ${slot}`);
        return node;
      } finally {
        client.disconnect();
      }
    },
    async keySlot(key) {
      const p = live()[0];
      if (!p) throw new Error('no live node');
      return ask(p.port, async (client) => Number(await client.call('CLUSTER', 'KEYSLOT', key)));
    },
    async waitPromoted(slot, formerPort, timeoutMs) {
      let seenAt = 0;
      await until(
        async () => {
          const port = await slotMasterPort(live(), slot).catch(() => undefined);
          if (port === undefined || port === formerPort) return false;
          seenAt = Date.now();
          return true;
        },
        timeoutMs,
        `a new master of slot ${slot}`,
        50,
      );
      return seenAt;
    },
    waitHealthy: (timeoutMs = 30_000) => until(healthy, timeoutMs, 'the cluster to be healthy'),
    destroy,
    output: () => out,
  };
  try {
    await cluster.waitHealthy();
  } catch (err) {
    await destroy();
    throw err;
  }
  return cluster;
}

async function until(
  check: () => Promise<boolean>,
  timeoutMs: number,
  what: string,
  everyMs = 200,
): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/**
 * The port of the master serving `slot` in the first live node's `CLUSTER NODES` (a master not flagged
 * `fail`, whose slot ranges cover it), or undefined when none does.
 */
async function slotMasterPort(
  nodes: ReadonlyArray<{ port: number }>,
  slot: number,
): Promise<number | undefined> {
  const p = nodes[0];
  if (!p) return undefined;
  const text = await ask(p.port, async (client) => (await client.call('CLUSTER', 'NODES')) as string);
  for (const line of text.split('\n')) {
    // <id> <ip:port@cport> <flags> <master> <ping> <pong> <epoch> <link> <slot> <slot> …
    const [, address, flags, , , , , , ...ranges] = line.split(' ');
    if (!address || !flags || !/\bmaster\b/.test(flags) || /\bfail\b/.test(flags)) continue;
    const covers = ranges.some((r) => {
      const [from, to = from] = r.split('-').map(Number);
      return from !== undefined && to !== undefined && slot >= from && slot <= to;
    });
    if (covers) return Number(/:(\d+)@/.exec(address)?.[1]);
  }
  return undefined;
}

/** Runs `fn` on a connection of its own to the node on `port`, closed afterwards. */
async function ask<T>(port: number, fn: (client: ReturnType<typeof probeRedis>) => Promise<T>): Promise<T> {
  const client = probeRedis(port);
  try {
    await client.connect();
    return await fn(client);
  } finally {
    client.disconnect();
  }
}
