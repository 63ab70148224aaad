/**
 * Where a call made alone spends its time: the Redis commands of one sequential call, in the order this
 * process sends them (`>`) and gets their replies (`<`), with the median time of each from the call's
 * start, for the design floor and the platform of `pnpm bench` (bench/systems.ts) side by side. The gap
 * before a send is this process's own work on the way to it; the gap before a reply is Redis and the
 * network. Both systems run in this process, warmed up first, on a redis-server of its own.
 *
 * Commands are named by what they run (a script by the name it was defined under: BullMQ's, the
 * platform's, the floor's). Calls take one of a few orders (whether the worker's completion of the
 * previous job fetches the next one, or its blocking read does); each system's most common order is
 * printed, with its share of the calls and the p50 of the calls that took it.
 *
 * Instrumented: every command is timed in ioredis's `sendCommand`, which adds a little to each, the same
 * for both systems. It measures where the time goes, not how much a call costs (`pnpm bench` does that).
 *
 *   pnpm bench:path   BENCH_PATH_CALLS (default 2000), BENCH_PATH_WARMUP (default 1000)
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { envInt } from './env.js';
import { median } from './measure.js';
import { startPrivateRedis } from './scale-out/processes.js';
import { startDesignFloor, startPlatform, type BenchSystem } from './systems.js';

type Mark = readonly [at: number, label: string];

/** What a client holds of the scripts defined on it (ioredis `defineCommand`). */
interface ScriptHolder {
  scriptsSet?: Record<string, { sha: string }>;
}

interface SentCommand {
  name: string;
  args: unknown[];
  promise: Promise<unknown>;
}

/** The marks of the call under way, or undefined between measured calls. */
let marks: Mark[] | undefined;
const scriptNames = new WeakMap<object, Map<string, string>>();

/** A command's name, or the name its script was defined under (EVALSHA carries the sha, EVAL the source). */
function label(client: ScriptHolder & object, command: SentCommand): string {
  if (command.name !== 'evalsha' && command.name !== 'eval') return command.name;
  const first = String(command.args[0]);
  let names = scriptNames.get(client);
  // Read again on a miss: a client may define more scripts after its first command.
  if (!names?.has(first)) {
    names = new Map(Object.entries(client.scriptsSet ?? {}).map(([name, script]) => [script.sha, name]));
    scriptNames.set(client, names);
  }
  return names.get(first) ?? `script ${first.slice(0, 8)}`;
}

/** Times every command any client of this process sends, while `marks` is set. */
function instrument(): void {
  const proto = Redis.prototype as unknown as {
    sendCommand(this: ScriptHolder & object, command: SentCommand, stream?: unknown): unknown;
  };
  const send = proto.sendCommand;
  proto.sendCommand = function timed(command, stream) {
    const sent = send.call(this, command, stream);
    const into = marks;
    if (into) {
      const name = label(this, command);
      into.push([performance.now(), `> ${name}`]);
      command.promise.then(
        () => into.push([performance.now(), `< ${name}`]),
        () => undefined,
      );
    }
    return sent;
  };
}

/** The most common order of a system's calls, with each mark's median time from the call's start. */
async function measure(system: BenchSystem, calls: number, warmup: number) {
  for (let i = 0; i < warmup; i += 1) await system.call();
  const orders = new Map<string, { offsets: number[][]; latencies: number[] }>();
  for (let i = 0; i < calls; i += 1) {
    const own: Mark[] = [];
    marks = own;
    const started = performance.now();
    await system.call();
    const ended = performance.now();
    marks = undefined;
    // Marks of this call only: replies of its commands that came after it ended belong to no order.
    const seen = own.filter(([at]) => at <= ended);
    const key = seen.map(([, l]) => l).join('\n');
    const order = orders.get(key) ?? { offsets: seen.map(() => []), latencies: [] };
    seen.forEach(([at], k) => order.offsets[k]?.push((at - started) * 1000));
    order.latencies.push((ended - started) * 1000);
    orders.set(key, order);
  }
  const [key, common] = [...orders].sort((a, b) => b[1].latencies.length - a[1].latencies.length)[0] ?? [];
  if (key === undefined || !common) throw new Error(`${system.label}: no call was measured`);
  const labels = key === '' ? [] : key.split('\n');
  const at = (k: number, c: number) => (k < 0 ? 0 : (common.offsets[k]?.[c] ?? Number.NaN));
  const gaps = (k: number) => common.latencies.map((_, c) => at(k, c) - at(k - 1, c));
  const last = labels.length - 1;
  return {
    share: common.latencies.length / calls,
    p50Us: median(common.latencies),
    marks: labels.map((l, k) => ({
      label: l,
      atUs: median(common.offsets[k] ?? []),
      gapUs: median(gaps(k)),
    })),
    tailUs: median(common.latencies.map((t, c) => t - at(last, c))),
  };
}

function print(label: string, m: Awaited<ReturnType<typeof measure>>): void {
  console.log(
    `\n${label}: ${(m.share * 100).toFixed(0)} % of calls in this order, their p50 ${m.p50Us.toFixed(0)} µs`,
  );
  console.log(
    '    at µs   gap µs   command   (medians over those calls: of the time, and of the gap from the mark before)',
  );
  for (const { label: l, atUs, gapUs } of m.marks) {
    console.log(`  ${atUs.toFixed(0).padStart(7)}  ${gapUs.toFixed(0).padStart(7)}   ${l}`);
  }
  console.log(`  ${m.p50Us.toFixed(0).padStart(7)}  ${m.tailUs.toFixed(0).padStart(7)}   (the call returns)`);
}

async function main(): Promise<void> {
  const calls = envInt('BENCH_PATH_CALLS', 2000, 10);
  const warmup = envInt('BENCH_PATH_WARMUP', 1000, 0);
  const redis = await startPrivateRedis();
  const tmpDir = await mkdtemp(path.join(os.tmpdir(), 'agent-reach-path-'));
  const options = { redisUrl: redis.url, payload: 'x'.repeat(300), concurrency: 50 };
  instrument();
  try {
    console.log(`call path: ${calls} calls made one at a time per system, after ${warmup} unmeasured`);
    const report: Record<string, Awaited<ReturnType<typeof measure>>> = {};
    for (const [label, start] of [
      ['design floor', () => startDesignFloor(options)],
      ['platform', () => startPlatform({ ...options, tmpDir })],
    ] as const) {
      const system = await start();
      try {
        report[label] = await measure(system, calls, warmup);
        print(label, report[label]);
      } finally {
        await system.close();
      }
    }
    const resultsDir = fileURLToPath(new URL('./results/', import.meta.url));
    await mkdir(resultsDir, { recursive: true });
    const jsonPath = path.join(resultsDir, 'call-path.json');
    const settings = { calls, warmup };
    await writeFile(
      jsonPath,
      `${JSON.stringify({ date: new Date().toISOString(), settings, report }, null, 2)}\n`,
    );
    console.log(`\nwrote ${path.relative(process.cwd(), jsonPath)}`);
  } finally {
    await redis.stop();
    await rm(tmpDir, { recursive: true, force: true });
  }
}

await main();
