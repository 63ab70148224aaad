/**
 * Tool-call benchmark: the platform (dispatcher → executor → reply) against raw BullMQ (Queue.add →
 * Worker → QueueEvents) on one Redis, for a no-op tool with a few hundred bytes of arguments.
 *
 * Per round and system: throughput of a closed loop with IN_FLIGHT calls outstanding, then latency of
 * calls made one at a time. A third system, the BullMQ job alone (add, take, complete, seen in process),
 * is the floor under any design that keeps one BullMQ job per call. A fourth is the platform calling the
 * same no-op through an MCP server over stdio (bench/mcp-echo-server.mjs), printed against our own tool. Systems take turns, each round starting
 * with the next one, and the median of rounds is reported, because the machine is shared and noisy. Redis
 * is a redis-server of the benchmark's own, so its CPU and commands are the systems' alone.
 *
 * It builds, then runs on the packages' built dist/ as shipped (`--conditions=agent-reach-dist`), not on
 * their TypeScript sources as compiled by tsx, which adds work to every function it defines.
 *
 *   pnpm bench      BENCH_CALLS (default 5000), BENCH_ROUNDS (default 5), BENCH_WARMUP_ROUNDS (default 1:
 *                   unmeasured rounds of every system before the measured ones),
 *                   BENCH_REDIS=shared to use REDIS_URL instead of a redis-server of its own,
 *                   BENCH_MCP=0 to leave out the MCP system (its rounds are the slowest)
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { constants } from '@agent-reach/shared';
import { benchEnvironment } from './measure.js';
import type { RedisDelta } from './redis-stats.js';
import { startPrivateRedis } from './scale-out/processes.js';
import {
  startDesignFloor,
  startJobFloor,
  startPlatform,
  startRawBullmq,
  type BenchSystem,
} from './systems.js';
import { envInt } from './env.js';
import { formatTarget, roundRatio, target, type Target } from './targets.js';
import {
  IN_FLIGHT,
  measureRound,
  medianFigures,
  type Medians,
  type RoundFigures,
} from './tool-call-round.js';

const PAYLOAD_CHARS = 300;
const TOP_COMMANDS = 12;

function printTable(raw: Medians, job: Medians, platform: Medians): void {
  const rows: Array<[string, (f: Medians) => number, number]> = [
    ['throughput (calls/s)', (f) => f.throughputPerS, 0],
    [`latency @${IN_FLIGHT} p50 (ms)`, (f) => f.underLoad.p50, 2],
    [`latency @${IN_FLIGHT} p99 (ms)`, (f) => f.underLoad.p99, 2],
    ['sequential p50 (ms)', (f) => f.sequential.p50, 3],
    ['sequential p90 (ms)', (f) => f.sequential.p90, 3],
    ['sequential p99 (ms)', (f) => f.sequential.p99, 3],
    ['sequential mean (ms)', (f) => f.sequential.mean, 3],
    ['node CPU / call (µs)', (f) => f.nodeCpuUsPerCall, 0],
    ['redis CPU / call (µs)', (f) => f.redisCpuUsPerCall, 0],
    ['redis commands / call', (f) => f.redisCommandsPerCall, 1],
  ];
  const fmt = (v: number, digits: number) =>
    v.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
  const header = ['', 'raw BullMQ', 'BullMQ job', 'platform', 'platform/raw', 'platform/job', 'job/raw'];
  const lines = rows.map(([label, pick, digits]) => [
    label,
    fmt(pick(raw), digits),
    fmt(pick(job), digits),
    fmt(pick(platform), digits),
    fmt(pick(platform) / pick(raw), 2),
    fmt(pick(platform) / pick(job), 2),
    fmt(pick(job) / pick(raw), 2),
  ]);
  printColumns(header, lines);
}

/** Prints rows under a header: the first column left-aligned, the others right-aligned. */
function printColumns(header: string[], lines: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => (l[i] ?? '').length)));
  const render = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('   ');
  console.log(render(header));
  console.log(render(widths.map((w) => '-'.repeat(w))));
  for (const line of lines) console.log(render(line));
}

/** The same call through the platform to our own TypeScript tool and to an MCP stdio server's tool. */
function printMcp(own: Medians, mcp: Medians): void {
  const rows: Array<[string, (f: Medians) => number, number]> = [
    ['throughput (calls/s)', (f) => f.throughputPerS, 0],
    [`latency @${IN_FLIGHT} p50 (ms)`, (f) => f.underLoad.p50, 2],
    ['sequential p50 (ms)', (f) => f.sequential.p50, 3],
    ['sequential p99 (ms)', (f) => f.sequential.p99, 3],
    ['node CPU / call (µs)', (f) => f.nodeCpuUsPerCall, 0],
  ];
  console.log(`\nthe same call through an MCP server over stdio (bench/mcp-echo-server.mjs), same rounds`);
  const header = ['', 'own tool', 'MCP stdio', 'MCP/own'];
  const lines = rows.map(([label, pick, digits]) => [
    label,
    pick(own).toFixed(digits),
    pick(mcp).toFixed(digits),
    (pick(mcp) / pick(own)).toFixed(2),
  ]);
  printColumns(header, lines);
}

function printCommands(label: string, delta: RedisDelta, calls: number): void {
  const top = delta.calls
    .slice(0, TOP_COMMANDS)
    .map(([name, n]) => `${name} ${(n / calls).toFixed(1)}`)
    .join(', ');
  console.log(`  ${label.padEnd(10)} ${top}`);
}

/** A target on one figure: its name, how to read it from a round, and its limit. */
type FigureTarget = readonly [
  name: string,
  pick: (f: RoundFigures) => number,
  op: Target['op'],
  limit: number,
];

const PER_CALL = {
  redisCpu: ['redis CPU per call', (f) => f.redisCpuUsPerCall],
  nodeCpu: ['node CPU per call', (f) => f.nodeCpuUsPerCall],
  commands: ['redis commands per call', (f) => f.redisCommandsPerCall],
  throughput: [`throughput @${IN_FLIGHT}`, (f) => f.throughputPerS],
  sequentialP50: ['sequential p50', (f) => f.sequential.p50],
} as const satisfies Record<string, readonly [string, (f: RoundFigures) => number]>;

/**
 * The issue's targets for one tool call, as ratios of the platform to the bare BullMQ job: each the median
 * of the rounds' own ratios (`roundRatio`).
 */
const OVER_JOB: readonly FigureTarget[] = [
  [...PER_CALL.redisCpu, '<=', 1.3],
  [...PER_CALL.nodeCpu, '<=', 1.6],
  [...PER_CALL.commands, '<=', 1.15],
  [...PER_CALL.throughput, '>=', 0.75],
  [...PER_CALL.sequentialP50, '<=', 1.4],
];

/**
 * The issue's targets for the platform against its own design floor (`startDesignFloor`): what the
 * platform's checks and records may add to the least its design pays.
 */
const OVER_DESIGN_FLOOR: readonly FigureTarget[] = [
  [...PER_CALL.throughput, '>=', 0.97],
  [...PER_CALL.nodeCpu, '<=', 1.05],
  [...PER_CALL.redisCpu, '<=', 1.05],
  [...PER_CALL.sequentialP50, '<=', 1.1],
];

/** Targets on the ratios of system `a` to system `b`, each the median of the rounds' own ratios. */
function ratioTargets(targets: readonly FigureTarget[], a: RoundFigures[], b: RoundFigures[]): Target[] {
  return targets.map(([name, pick, op, limit]) => target(name, roundRatio(a, b, pick), op, limit));
}

/**
 * The platform against the least its own design pays (`startDesignFloor`: the job, a check-and-start round
 * trip, a record-and-reply round trip, the caller's blocking read), and that floor against the bare job:
 * where a target on the bare job is below what the design allows, the second column says so.
 */
function printDesignFloor(job: Medians, design: Medians, platform: Medians): void {
  const rows: Array<[string, (f: Medians) => number, number]> = [
    ['throughput (calls/s)', (f) => f.throughputPerS, 0],
    ['sequential p50 (ms)', (f) => f.sequential.p50, 3],
    ['node CPU / call (µs)', (f) => f.nodeCpuUsPerCall, 0],
    ['redis CPU / call (µs)', (f) => f.redisCpuUsPerCall, 0],
    ['redis commands / call', (f) => f.redisCommandsPerCall, 1],
  ];
  console.log(
    '\nthe design floor: the BullMQ job + one round trip checking the call against its ledger and recording ' +
      'its start + one recording the result and pushing the reply + the caller reading it (bench/systems.ts)',
  );
  printColumns(
    ['', 'design floor', 'design/job', 'platform/design'],
    rows.map(([label, pick, digits]) => [
      label,
      pick(design).toFixed(digits),
      (pick(design) / pick(job)).toFixed(2),
      (pick(platform) / pick(design)).toFixed(2),
    ]),
  );
}

async function main(): Promise<void> {
  const calls = envInt('BENCH_CALLS', 5000, 10);
  const rounds = envInt('BENCH_ROUNDS', 5, 1);
  const warmupRounds = envInt('BENCH_WARMUP_ROUNDS', 1, 0);
  const plan = {
    calls,
    warmup: Math.max(1, Math.round(calls / 10)),
    seqCalls: Math.max(1, Math.round(calls / 5)),
    seqWarmup: Math.max(1, Math.round(calls / 50)),
  };
  const payload = 'x'.repeat(PAYLOAD_CHARS);
  const concurrency = constants.DEFAULT_EXECUTOR_CONCURRENCY;
  // Redis's CPU and commands are this benchmark's alone on a redis-server of its own; on a shared one
  // (BENCH_REDIS=shared) every other client's work counts too.
  const privateRedis = process.env.BENCH_REDIS === 'shared' ? undefined : await startPrivateRedis();
  const redisUrl = privateRedis?.url ?? process.env.REDIS_URL ?? constants.DEFAULT_REDIS_URL;
  const admin = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  const tmpDir = await mkdtemp(path.join(os.tmpdir(), 'agent-reach-bench-'));
  const systems: BenchSystem[] = [];
  const started = performance.now();
  try {
    const environment = await benchEnvironment((section) => admin.info(section));
    const raw = await startRawBullmq({ redisUrl, payload, concurrency });
    systems.push(raw);
    const job = await startJobFloor({ redisUrl, payload, concurrency });
    systems.push(job);
    const platform = await startPlatform({ redisUrl, payload, concurrency, tmpDir });
    systems.push(platform);
    const design = await startDesignFloor({ redisUrl, payload, concurrency });
    systems.push(design);
    const withMcp = process.env.BENCH_MCP !== '0';
    const mcp = withMcp
      ? await startPlatform({ redisUrl, payload, concurrency, tmpDir, mcp: true })
      : undefined;
    if (mcp) systems.push(mcp);
    const named: Array<readonly ['raw' | 'job' | 'platform' | 'design' | 'mcp', BenchSystem]> = [
      ['raw', raw],
      ['job', job],
      ['platform', platform],
      ['design', design],
      ...(mcp ? [['mcp', mcp] as const] : []),
    ];
    console.log(
      `tool-call bench: ${calls} calls @ ${IN_FLIGHT} in flight (warm-up ${plan.warmup}), ` +
        `${plan.seqCalls} sequential (warm-up ${plan.seqWarmup}), ${rounds} rounds after ${warmupRounds} ` +
        `unmeasured, ` +
        `worker concurrency ${concurrency}, arguments ${JSON.stringify({ payload }).length} B`,
    );
    console.log(
      `node ${process.version}, redis ${environment.redis} ` +
        `(${privateRedis ? 'a redis-server of its own, no persistence' : `shared, at ${redisUrl}`}), ` +
        `${os.cpus().length} CPUs, ${os.loadavg()[0]?.toFixed(2)} load`,
    );
    const figures = {
      raw: [] as RoundFigures[],
      job: [] as RoundFigures[],
      platform: [] as RoundFigures[],
      design: [] as RoundFigures[],
      mcp: [] as RoundFigures[],
    };
    // One unmeasured round of each system first: the platform runs several times the code of the
    // baselines, and its first round, while V8 still compiles that code, came out at 0.47–0.81 of its
    // later ones (throughput), where the baselines' first rounds did not stand out.
    for (let i = 0; i < warmupRounds; i += 1) {
      for (const [, system] of named) await measureRound(system, admin, plan);
    }
    for (let round = 1; round <= rounds; round += 1) {
      // Each round starts with the next system, so no system always runs after the same one.
      for (let i = 0; i < named.length; i += 1) {
        const [name, system] = named[(i + round - 1) % named.length] ?? named[0] ?? ['raw', raw];
        const f = await measureRound(system, admin, plan);
        figures[name].push(f);
        console.log(
          `  round ${round} ${system.label.padEnd(10)} ${f.throughputPerS.toFixed(0).padStart(6)} calls/s   ` +
            `sequential p50 ${f.sequential.p50.toFixed(3)} ms   p99 ${f.sequential.p99.toFixed(3)} ms   ` +
            `redis CPU ${f.redisCpuUsPerCall.toFixed(0)} µs/call`,
        );
      }
    }
    const med = {
      raw: medianFigures(figures.raw),
      job: medianFigures(figures.job),
      platform: medianFigures(figures.platform),
      design: medianFigures(figures.design),
      mcp: withMcp ? medianFigures(figures.mcp) : undefined,
    };
    const ratios = {
      throughput: med.platform.throughputPerS / med.raw.throughputPerS,
      sequentialP50: med.platform.sequential.p50 / med.raw.sequential.p50,
      sequentialP99: med.platform.sequential.p99 / med.raw.sequential.p99,
      underLoadP50: med.platform.underLoad.p50 / med.raw.underLoad.p50,
      redisCpu: med.platform.redisCpuUsPerCall / med.raw.redisCpuUsPerCall,
      jobRedisCpu: med.job.redisCpuUsPerCall / med.raw.redisCpuUsPerCall,
      platformOverJobRedisCpu: med.platform.redisCpuUsPerCall / med.job.redisCpuUsPerCall,
      ...(med.mcp
        ? {
            mcpThroughput: med.mcp.throughputPerS / med.platform.throughputPerS,
            mcpSequentialP50: med.mcp.sequential.p50 / med.platform.sequential.p50,
            mcpUnderLoadP50: med.mcp.underLoad.p50 / med.platform.underLoad.p50,
          }
        : {}),
    };
    console.log(`\nmedian of ${rounds} rounds`);
    printTable(med.raw, med.job, med.platform);
    console.log(
      'raw BullMQ: Queue.add + Worker + QueueEvents.waitUntilFinished; BullMQ job: Queue.add + Worker, ' +
        'completion seen in process (the floor of one BullMQ job per call); node CPU: this process ' +
        '(callers and worker/executor, all threads) under load; redis CPU: the server under load; ' +
        'commands: per sequential call, Lua-internal calls included',
    );
    console.log(
      `\nthroughput platform/raw ${ratios.throughput.toFixed(2)} (want >= 1.00), ` +
        `sequential p50 platform/raw ${ratios.sequentialP50.toFixed(2)} (want <= 1.00)`,
    );
    console.log(
      `redis CPU per call: platform/raw ${ratios.redisCpu.toFixed(2)}, BullMQ job/raw ` +
        `${ratios.jobRedisCpu.toFixed(2)} (no design with one BullMQ job per call goes below that), ` +
        `platform/BullMQ job ${ratios.platformOverJobRedisCpu.toFixed(2)}`,
    );
    if (med.mcp) {
      printMcp(med.platform, med.mcp);
      console.log(
        `MCP stdio/own tool: throughput ${(ratios.mcpThroughput ?? 0).toFixed(2)}, ` +
          `sequential p50 ${(ratios.mcpSequentialP50 ?? 0).toFixed(2)}, ` +
          `latency @${IN_FLIGHT} p50 ${(ratios.mcpUnderLoadP50 ?? 0).toFixed(2)}`,
      );
    }
    printDesignFloor(med.job, med.design, med.platform);
    const targets = ratioTargets(OVER_JOB, figures.platform, figures.job);
    console.log("\ntargets (platform / BullMQ job: the median of the rounds' own ratios)");
    for (const t of targets) console.log(`  ${formatTarget(t)}`);
    const floor = ratioTargets(OVER_JOB, figures.design, figures.job);
    console.log(
      `  the design floor, same statistic: ${floor.map((t) => `${t.name} ${t.value.toFixed(2)}×`).join(', ')}`,
    );
    const overFloor = ratioTargets(OVER_DESIGN_FLOOR, figures.platform, figures.design);
    console.log("\ntargets (platform / design floor: the median of the rounds' own ratios)");
    for (const t of overFloor) console.log(`  ${formatTarget(t)}`);
    console.log(`\nredis commands per sequential call (last round; script-internal calls included)`);
    for (const [name, system] of named) {
      const last = figures[name].at(-1);
      if (last) printCommands(system.label, last.redisCommands, plan.seqCalls);
    }

    const resultsDir = fileURLToPath(new URL('./results/', import.meta.url));
    await mkdir(resultsDir, { recursive: true });
    const jsonPath = path.join(resultsDir, 'tool-call.json');
    const perCall = (d: RedisDelta | undefined) =>
      Object.fromEntries((d?.calls ?? []).map(([name, n]) => [name, n / plan.seqCalls]));
    const withoutCommands = (rs: RoundFigures[]) => rs.map(({ redisCommands: _, ...f }) => f);
    const report = {
      date: new Date().toISOString(),
      environment,
      redis: privateRedis ? 'private' : 'shared',
      settings: {
        ...plan,
        rounds,
        inFlight: IN_FLIGHT,
        workerConcurrency: concurrency,
        payloadChars: PAYLOAD_CHARS,
      },
      median: med,
      ratios,
      targets,
      designFloorTargets: floor,
      platformOverDesignFloor: overFloor,
      rounds: {
        raw: withoutCommands(figures.raw),
        job: withoutCommands(figures.job),
        platform: withoutCommands(figures.platform),
        design: withoutCommands(figures.design),
        mcp: withoutCommands(figures.mcp),
      },
      redisCommandsPerSequentialCall: {
        raw: perCall(figures.raw.at(-1)?.redisCommands),
        job: perCall(figures.job.at(-1)?.redisCommands),
        platform: perCall(figures.platform.at(-1)?.redisCommands),
        design: perCall(figures.design.at(-1)?.redisCommands),
        mcp: perCall(figures.mcp.at(-1)?.redisCommands),
      },
      durationS: (performance.now() - started) / 1000,
    };
    await writeFile(jsonPath, `${JSON.stringify(report, null, 2)}\n`);
    console.log(`\nwrote ${path.relative(process.cwd(), jsonPath)} (${report.durationS.toFixed(0)} s)`);
  } finally {
    for (const system of systems.reverse()) await system.close();
    await admin.quit();
    await privateRedis?.stop();
    await rm(tmpDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
