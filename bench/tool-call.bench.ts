/**
 * Tool-call benchmark: the platform (dispatcher → executor → reply) against raw BullMQ (Queue.add →
 * Worker → QueueEvents) on one Redis, for a no-op tool with a few hundred bytes of arguments.
 *
 * Per round and system: throughput of a closed loop with IN_FLIGHT calls outstanding, then latency of
 * calls made one at a time. Systems alternate (raw, platform, raw, platform, …) and the median of rounds
 * is reported, because the machine is shared and noisy.
 *
 *   pnpm bench                       BENCH_CALLS (default 5000), BENCH_ROUNDS (default 5), REDIS_URL
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { constants } from '@agent-reach/shared';
import { benchEnvironment } from './measure.js';
import type { RedisDelta } from './redis-stats.js';
import { startPlatform, startRawBullmq, type BenchSystem } from './systems.js';
import { envInt } from './env.js';
import {
  IN_FLIGHT,
  measureRound,
  medianFigures,
  type Medians,
  type RoundFigures,
} from './tool-call-round.js';

const PAYLOAD_CHARS = 300;
const TOP_COMMANDS = 12;

function printTable(raw: Medians, platform: Medians): void {
  const rows: Array<[string, number, number, number]> = [];
  const row = (label: string, pick: (f: Medians) => number, digits: number) =>
    rows.push([label, pick(raw), pick(platform), digits]);
  row('throughput (calls/s)', (f) => f.throughputPerS, 0);
  row(`latency @${IN_FLIGHT} p50 (ms)`, (f) => f.underLoad.p50, 2);
  row(`latency @${IN_FLIGHT} p99 (ms)`, (f) => f.underLoad.p99, 2);
  row('sequential p50 (ms)', (f) => f.sequential.p50, 3);
  row('sequential p90 (ms)', (f) => f.sequential.p90, 3);
  row('sequential p99 (ms)', (f) => f.sequential.p99, 3);
  row('sequential mean (ms)', (f) => f.sequential.mean, 3);
  row('node CPU / call (µs)', (f) => f.nodeCpuUsPerCall, 0);
  row('redis CPU / call (µs)', (f) => f.redisCpuUsPerCall, 0);
  row('redis commands / call', (f) => f.redisCommandsPerCall, 1);
  const fmt = (v: number, digits: number) =>
    v.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
  const header = ['', 'raw BullMQ', 'platform', 'platform/raw'];
  const lines = rows.map(([label, r, p, digits]) => [label, fmt(r, digits), fmt(p, digits), fmt(p / r, 2)]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => (l[i] ?? '').length)));
  const render = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('   ');
  console.log(render(header));
  console.log(render(widths.map((w) => '-'.repeat(w))));
  for (const line of lines) console.log(render(line));
}

function printCommands(label: string, delta: RedisDelta, calls: number): void {
  const top = delta.calls
    .slice(0, TOP_COMMANDS)
    .map(([name, n]) => `${name} ${(n / calls).toFixed(1)}`)
    .join(', ');
  console.log(`  ${label.padEnd(10)} ${top}`);
}

async function main(): Promise<void> {
  const redisUrl = process.env.REDIS_URL ?? constants.DEFAULT_REDIS_URL;
  const calls = envInt('BENCH_CALLS', 5000, 10);
  const rounds = envInt('BENCH_ROUNDS', 5, 1);
  const plan = {
    calls,
    warmup: Math.max(1, Math.round(calls / 10)),
    seqCalls: Math.max(1, Math.round(calls / 5)),
    seqWarmup: Math.max(1, Math.round(calls / 50)),
  };
  const payload = 'x'.repeat(PAYLOAD_CHARS);
  const concurrency = constants.DEFAULT_EXECUTOR_CONCURRENCY;
  const admin = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  const tmpDir = await mkdtemp(path.join(os.tmpdir(), 'agent-reach-bench-'));
  const systems: BenchSystem[] = [];
  const started = performance.now();
  try {
    const environment = await benchEnvironment((section) => admin.info(section));
    const redisVersion = environment.redis;
    const raw = await startRawBullmq({ redisUrl, payload, concurrency });
    systems.push(raw);
    const platform = await startPlatform({ redisUrl, payload, concurrency, tmpDir });
    systems.push(platform);
    console.log(
      `tool-call bench: ${calls} calls @ ${IN_FLIGHT} in flight (warm-up ${plan.warmup}), ` +
        `${plan.seqCalls} sequential (warm-up ${plan.seqWarmup}), ${rounds} rounds, ` +
        `worker concurrency ${concurrency}, arguments ${JSON.stringify({ payload }).length} B`,
    );
    console.log(
      `node ${process.version}, redis ${redisVersion} at ${redisUrl}, ${os.cpus().length} CPUs, ${os.loadavg()[0]?.toFixed(2)} load`,
    );
    const figures = { raw: [] as RoundFigures[], platform: [] as RoundFigures[] };
    for (let round = 1; round <= rounds; round += 1) {
      for (const [name, system] of [
        ['raw', raw],
        ['platform', platform],
      ] as const) {
        const f = await measureRound(system, admin, plan);
        figures[name].push(f);
        console.log(
          `  round ${round} ${system.label.padEnd(10)} ${f.throughputPerS.toFixed(0).padStart(6)} calls/s   ` +
            `sequential p50 ${f.sequential.p50.toFixed(3)} ms   p99 ${f.sequential.p99.toFixed(3)} ms`,
        );
      }
    }
    const med = { raw: medianFigures(figures.raw), platform: medianFigures(figures.platform) };
    const ratios = {
      throughput: med.platform.throughputPerS / med.raw.throughputPerS,
      sequentialP50: med.platform.sequential.p50 / med.raw.sequential.p50,
      sequentialP99: med.platform.sequential.p99 / med.raw.sequential.p99,
      underLoadP50: med.platform.underLoad.p50 / med.raw.underLoad.p50,
    };
    console.log(`\nmedian of ${rounds} rounds`);
    printTable(med.raw, med.platform);
    console.log(
      'node CPU: this process (callers and worker/executor, all threads) under load; redis CPU: the server ' +
        'under load; commands: per sequential call, Lua-internal calls included',
    );
    console.log(
      `\nthroughput platform/raw ${ratios.throughput.toFixed(2)} (want >= 1.00), ` +
        `sequential p50 platform/raw ${ratios.sequentialP50.toFixed(2)} (want <= 1.00)`,
    );
    console.log(`\nredis commands per sequential call (last round; script-internal calls included)`);
    const last = { raw: figures.raw.at(-1), platform: figures.platform.at(-1) };
    if (last.raw) printCommands('raw', last.raw.redisCommands, plan.seqCalls);
    if (last.platform) printCommands('platform', last.platform.redisCommands, plan.seqCalls);

    const resultsDir = fileURLToPath(new URL('./results/', import.meta.url));
    await mkdir(resultsDir, { recursive: true });
    const jsonPath = path.join(resultsDir, 'tool-call.json');
    const perCall = (d: RedisDelta | undefined) =>
      Object.fromEntries((d?.calls ?? []).map(([name, n]) => [name, n / plan.seqCalls]));
    const report = {
      date: new Date().toISOString(),
      environment,
      settings: {
        ...plan,
        rounds,
        inFlight: IN_FLIGHT,
        workerConcurrency: concurrency,
        payloadChars: PAYLOAD_CHARS,
      },
      median: med,
      ratios,
      rounds: {
        raw: figures.raw.map(({ redisCommands: _, ...f }) => f),
        platform: figures.platform.map(({ redisCommands: _, ...f }) => f),
      },
      redisCommandsPerSequentialCall: {
        raw: perCall(last.raw?.redisCommands),
        platform: perCall(last.platform?.redisCommands),
      },
      durationS: (performance.now() - started) / 1000,
    };
    await writeFile(jsonPath, `${JSON.stringify(report, null, 2)}\n`);
    console.log(`\nwrote ${path.relative(process.cwd(), jsonPath)} (${report.durationS.toFixed(0)} s)`);
  } finally {
    for (const system of systems.reverse()) await system.close();
    await admin.quit();
    await rm(tmpDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
