/**
 * Scale-out benchmark: executors and schedulers as separate processes (their own `main.ts`, as deployed)
 * on a Redis of the benchmark's own, so that Redis's CPU and command counters are the benchmark's alone.
 *
 * Part 1, executors: an I/O-bound tool (it waits BENCH_SCALE_SLEEP_MS, 50 ms by default) served by 1, 2
 * and 4 executor processes of EXECUTOR_CONCURRENCY 4 each, loaded by a closed loop of dispatches from this
 * process with enough calls in flight to keep every executor busy. Throughput at N executors is printed
 * as a ratio to N × the 1-executor figure (linear scaling). The defaults keep the whole benchmark's CPU
 * under one core at 4 executors (each call costs its processes about 2 ms of CPU on a small shared
 * machine), so what scales or does not is the queue, not the CPU; the table prints the cores it used.
 * Then Redis's cost while the 4 executors idle, and its cost per call when calls come densely (a no-op
 * tool, 2 executors of 50 slots, 128 in flight, as `pnpm bench` loads them): Redis's CPU per command
 * falls as more commands arrive per wake-up, so this is the figure for a busy shard.
 *
 * Part 2, schedulers: runs of the agent-loop benchmark's task (plan, three tool turns, final answer)
 * against llm-sim in a process of its own answering every request after BENCH_SCALE_LLM_LATENCY_MS
 * (100 ms by default), through 1 and 2 scheduler processes of SCHEDULER_CONCURRENCY 4 each, with two
 * executor processes (concurrency 50) so tools are not the bottleneck. Runs are added with `RunControl`
 * as any client adds them, by a closed loop here; completion is read from the run queue's events.
 *
 * Levels are measured up then down (1, 2, 4, 4, 2, 1 executors; 1, 2, 2, 1 schedulers), so a drift of
 * the machine's load touches every level alike; each level's figure is the median of its phases. Per
 * phase: throughput, Redis CPU (INFO cpu) and commands (INFO commandstats) per call or run, the CPU of
 * the platform processes (/proc), and how busy Redis was. After part 2, the Redis memory a finished run
 * keeps for the retention period (MEMORY USAGE of its keys). Finally the capacity model those figures
 * give (see the README's "Capacity model").
 *
 *   pnpm bench:scale
 *     BENCH_SCALE_EXECUTORS (default 1,2,4), BENCH_SCALE_SLEEP_MS (50), BENCH_SCALE_CONCURRENCY (4),
 *     BENCH_SCALE_CALLS (default 400: calls per phase and executor), BENCH_SCALE_SCHEDULERS (1,2),
 *     BENCH_SCALE_SCHEDULER_CONCURRENCY (4), BENCH_SCALE_RUNS (default 80: runs per phase and scheduler),
 *     BENCH_SCALE_LLM_LATENCY_MS (100), BENCH_SCALE_DENSE_CALLS (2000: calls per dense phase), BENCH_SCALE_HEADROOM (0.5: the share of one Redis core the
 *     capacity model plans to use), BENCH_SCALE_REDIS (private: a redis-server of its own on a free port,
 *     the default; shared: REDIS_URL, where other clients' work counts too)
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { QueueEvents } from 'bullmq';
import { Redis } from 'ioredis';
import { RunControl } from '@agent-reach/scheduler';
import { Dispatcher, ToolCatalog } from '@agent-reach/scheduler/internal';
import { createKeys, newRunId, type Keys } from '@agent-reach/protocol';
import { callLedgerEntry, constants, createLogger, createRedis, waitReady } from '@agent-reach/shared';
import { startSimHost, type SimHost } from './agent-loop/sim-host.js';
import { AGENT as LOOP_AGENT, AGENTS_YAML, SCENARIO, taskInput, TOOL_STEPS } from './agent-loop/task.js';
import { benchEnvironment, closedLoop, median } from './measure.js';
import { deleteByPrefix, diffRedis, sampleRedis, type RedisDelta } from './redis-stats.js';
import {
  startPlatformChild,
  startPrivateRedis,
  type PlatformChild,
  type PrivateRedis,
} from './scale-out/processes.js';
import { SLEEP_TOOL } from './scale-out/tools.js';
import { TOOL as NOOP_TOOL } from './agent-loop/task.js';
import { envInt } from './env.js';
import { fmt, printTable } from './agent-loop/figures.js';

const SCALE_AGENT = 'bench_scale_agent';
/** Calls of one seeded run before the ids roll over to a new run (as in bench/systems.ts). */
const CALLS_PER_RUN = 20;
const PAYLOAD = 'x'.repeat(300);
const TOP_COMMANDS = 10;
const TOOL_MODULE = fileURLToPath(new URL('./scale-out/tools.ts', import.meta.url));
const EXECUTOR_MAIN = 'packages/executor/src/main.ts';
const SCHEDULER_MAIN = 'packages/scheduler/src/main.ts';
/** Run-loop executors: enough slots that a no-op tool never waits for one. */
const RUN_EXECUTORS = 2;
const RUN_EXECUTOR_CONCURRENCY = 50;
/** The dense phase: no-op calls to executors with many slots (as bench/tool-call.bench.ts loads them). */
const DENSE_EXECUTORS = 2;
const DENSE_CONCURRENCY = 50;
const DENSE_IN_FLIGHT = 128;
const DENSE_ROUNDS = 3;
/** How long the idle fleet's own Redis traffic is measured. */
const IDLE_MS = 3000;

function envList(name: string, fallback: number[]): number[] {
  const raw = process.env[name];
  if (!raw) return fallback;
  const values = raw.split(',').map(Number);
  if (values.some((v) => !Number.isInteger(v) || v < 1)) throw new Error(`${name}: positive integers`);
  return [...new Set(values)].sort((a, b) => a - b);
}

/** What one measured phase gave; `units` are tool calls (part 1) or runs (part 2). */
interface Phase {
  level: number;
  units: number;
  elapsedMs: number;
  perS: number;
  redisCpuUsPerUnit: number;
  redisCommandsPerUnit: number;
  /** Share of the phase's wall time Redis spent on CPU (one core = 1). */
  redisBusy: number;
  /** CPU of the platform processes (executors, schedulers) per unit, in µs. */
  platformCpuUsPerUnit: number;
  /** CPU of this load-generating process per unit, in µs. */
  loadCpuUsPerUnit: number;
  loadAvg1m: number;
  redis: RedisDelta;
  /** Part 2: model requests per run, and llm-sim's busy share. */
  modelRequestsPerUnit?: number;
  simBusy?: number;
  simCpuUsPerUnit?: number;
  /** Part 2: the scheduler processes' share of `platformCpuUsPerUnit`. */
  schedulerCpuUsPerUnit?: number;
}

/** Runs `work` (which does `units` calls or runs) and measures it. */
async function measure(
  level: number,
  units: number,
  admin: Redis,
  children: readonly PlatformChild[],
  work: () => Promise<void>,
): Promise<Phase> {
  const cpuOf = async () => (await Promise.all(children.map((c) => c.cpuUs()))).reduce((a, b) => a + b, 0);
  const [redisBefore, childBefore] = await Promise.all([sampleRedis(admin), cpuOf()]);
  const selfBefore = process.cpuUsage();
  const started = performance.now();
  await work();
  const elapsedMs = performance.now() - started;
  const self = process.cpuUsage(selfBefore);
  const [redisAfter, childAfter] = await Promise.all([sampleRedis(admin), cpuOf()]);
  const redis = diffRedis(redisBefore, redisAfter);
  return {
    level,
    units,
    elapsedMs,
    perS: units / (elapsedMs / 1000),
    redisCpuUsPerUnit: redis.cpuUs / units,
    redisCommandsPerUnit: redis.total / units,
    redisBusy: redis.cpuUs / (elapsedMs * 1000),
    platformCpuUsPerUnit: (childAfter - childBefore) / units,
    loadCpuUsPerUnit: (self.user + self.system) / units,
    loadAvg1m: os.loadavg()[0] ?? Number.NaN,
    redis,
  };
}

/** The order levels are measured in: up, then down (1, 2, 4, 4, 2, 1). */
function upAndDown(levels: number[]): number[] {
  return [...levels, ...[...levels].reverse()];
}

/** Median per level of each figure. */
function byLevel(phases: Phase[]) {
  const levels = [...new Set(phases.map((p) => p.level))].sort((a, b) => a - b);
  return levels.map((level) => {
    const ps = phases.filter((p) => p.level === level);
    const m = (pick: (p: Phase) => number) => median(ps.map(pick));
    return {
      level,
      phases: ps.length,
      perS: m((p) => p.perS),
      perSEach: ps.map((p) => p.perS),
      redisCpuUsPerUnit: m((p) => p.redisCpuUsPerUnit),
      redisCommandsPerUnit: m((p) => p.redisCommandsPerUnit),
      redisBusy: m((p) => p.redisBusy),
      platformCpuUsPerUnit: m((p) => p.platformCpuUsPerUnit),
      loadCpuUsPerUnit: m((p) => p.loadCpuUsPerUnit),
      loadAvg1m: m((p) => p.loadAvg1m),
      modelRequestsPerUnit: m((p) => p.modelRequestsPerUnit ?? Number.NaN),
      simBusy: m((p) => p.simBusy ?? Number.NaN),
      schedulerCpuUsPerUnit: m((p) => p.schedulerCpuUsPerUnit ?? Number.NaN),
      /** Cores the benchmark's processes (platform, load generator, Redis, llm-sim) used together. */
      cores: m(
        (p) =>
          (p.perS *
            (p.platformCpuUsPerUnit + p.loadCpuUsPerUnit + p.redisCpuUsPerUnit + (p.simCpuUsPerUnit ?? 0))) /
          1e6,
      ),
    };
  });
}

type LevelFigures = ReturnType<typeof byLevel>[number];

/** Rows of a level table: throughput, its ratio to linear scaling from the first level, and the costs. */
function levelRows(
  figures: LevelFigures[],
  unit: string,
  ideal?: (level: number) => number,
): { header: string[]; rows: string[][]; ratios: Record<number, number> } {
  const base = figures[0] as LevelFigures;
  const ratios: Record<number, number> = {};
  for (const f of figures) ratios[f.level] = f.perS / ((base.perS * f.level) / base.level);
  const header = ['', ...figures.map((f) => String(f.level))];
  const row = (label: string, pick: (f: LevelFigures) => string) => [label, ...figures.map(pick)];
  const rows = [
    row(`${unit}/s (median)`, (f) => fmt(f.perS, 1)),
    row(`${unit}/s each phase`, (f) => f.perSEach.map((v) => fmt(v, 0)).join(' / ')),
    row('ratio to linear', (f) => fmt(ratios[f.level] as number, 2)),
    ...(ideal ? [row('ratio to the slots’ ideal', (f) => fmt(f.perS / ideal(f.level), 2))] : []),
    row(`redis CPU / ${unit} (µs)`, (f) => fmt(f.redisCpuUsPerUnit, 1)),
    row(`redis commands / ${unit}`, (f) => fmt(f.redisCommandsPerUnit, 1)),
    row('redis busy (% of a core)', (f) => fmt(f.redisBusy * 100, 1)),
    row(`platform processes CPU / ${unit} (µs)`, (f) => fmt(f.platformCpuUsPerUnit, 0)),
    row(`load generator CPU / ${unit} (µs)`, (f) => fmt(f.loadCpuUsPerUnit, 0)),
    ...(figures.some((f) => Number.isFinite(f.modelRequestsPerUnit))
      ? [
          row('scheduler processes CPU / run (µs)', (f) => fmt(f.schedulerCpuUsPerUnit, 0)),
          row('model requests / run', (f) => fmt(f.modelRequestsPerUnit, 2)),
          row('llm-sim busy (%)', (f) => fmt(f.simBusy * 100, 1)),
        ]
      : []),
    row('CPU used by the benchmark (cores)', (f) => fmt(f.cores, 2)),
    row('load average (1 min)', (f) => fmt(f.loadAvg1m, 2)),
  ];
  return { header, rows, ratios };
}

function topCommands(delta: RedisDelta, units: number): string {
  return delta.calls
    .slice(0, TOP_COMMANDS)
    .map(([name, n]) => `${name} ${(n / units).toFixed(1)}`)
    .join(', ');
}

async function startExecutors(
  count: number,
  env: Record<string, string>,
  first: number,
): Promise<PlatformChild[]> {
  return Promise.all(
    Array.from({ length: count }, (_, i) =>
      startPlatformChild(`executor ${first + i}`, EXECUTOR_MAIN, {
        ...env,
        EXECUTOR_METRICS_PORT: '0',
        TOOL_MODULES: TOOL_MODULE,
      }),
    ),
  );
}

/** Part 1: calls of the I/O-bound tool at 1, 2, 4 executors. */
async function executorScaling(opts: {
  redisUrl: string;
  admin: Redis;
  agentsFile: string;
  outputsDir: string;
  levels: number[];
  sleepMs: number;
  concurrency: number;
  callsPerExecutor: number;
  denseCalls: number;
}) {
  const prefix = `bench-scale-x-${randomUUID().slice(0, 8)}`;
  const keys = createKeys(prefix);
  const env = {
    REDIS_URL: opts.redisUrl,
    AR_KEY_PREFIX: prefix,
    AGENTS_FILE: opts.agentsFile,
    OUTPUTS_DIR: opts.outputsDir,
    EXECUTOR_CONCURRENCY: String(opts.concurrency),
    BENCH_SLEEP_MS: String(opts.sleepMs),
  };
  const maxLevel = Math.max(...opts.levels);
  // Enough calls in flight to keep every slot of the largest fleet busy, with as many waiting.
  const inFlight = 2 * opts.concurrency * maxLevel;
  const executors: PlatformChild[] = [];
  const producer = createRedis(opts.redisUrl, 'producer');
  let dispatcher: Dispatcher | undefined;
  try {
    await waitReady(producer, opts.redisUrl);
    executors.push(...(await startExecutors(1, env, 1)));
    const catalog = await new ToolCatalog(producer, keys).refresh();
    const d = new Dispatcher({
      connection: producer,
      keys,
      catalog,
      logger: createLogger('bench', { level: 'silent' }),
    });
    dispatcher = d;
    const args = JSON.stringify({ payload: PAYLOAD });
    const ledgerEntry = Object.fromEntries(
      [SLEEP_TOOL, NOOP_TOOL].map((name) => [
        name,
        callLedgerEntry({ agent: SCALE_AGENT, name, arguments: args }),
      ]),
    );
    const runBase = `run-${randomUUID().slice(0, 8)}`;
    let seq = 0;
    const callTool = async (tool: string) => {
      const n = seq++;
      const runId = `${runBase}-${Math.floor(n / CALLS_PER_RUN)}`;
      const toolCallId = `call_${n}`;
      // What the run's checkpoint records before a model turn is published (the run, then each call in
      // its ledger), written ahead of the publication on the same connection, as bench/systems.ts does;
      // executors that verify jobs against the run's record find it.
      if (n % CALLS_PER_RUN === 0) {
        producer.hset(keys.runMeta(runId), { runId, agent: SCALE_AGENT, status: 'running' }).catch(() => 0);
      }
      producer.hset(keys.runCalls(runId), toolCallId, ledgerEntry[tool] as string).catch(() => 0);
      const [result] = await d.dispatch(
        { runId, traceId: runId, agent: SCALE_AGENT },
        [{ toolCallId, name: tool, arguments: args }],
        { fresh: true },
      );
      if (!result?.ok) throw new Error(`call ${toolCallId} returned ${JSON.stringify(result)}`);
    };
    const call = () => callTool(SLEEP_TOOL);
    // Warm-up: JIT, connections and the executor's first jobs, outside any measurement.
    await closedLoop(call, Math.max(inFlight, Math.round(opts.callsPerExecutor / 4)), inFlight);
    const phases: Phase[] = [];
    let idle: { redisBusy: number; platformCores: number; executors: number } | undefined;
    for (const level of upAndDown(opts.levels)) {
      if (executors.length < level) {
        executors.push(...(await startExecutors(level - executors.length, env, executors.length + 1)));
        // Let the new workers connect and fetch before the clock starts.
        await closedLoop(call, inFlight, inFlight);
      }
      if (level === maxLevel && !idle) {
        // What the fleet costs Redis while no call comes: blocking fetches, lock and stall checks.
        const quiet = await measure(level, 1, opts.admin, executors, () => sleep(IDLE_MS));
        idle = {
          executors: level,
          redisBusy: quiet.redisBusy,
          platformCores: quiet.platformCpuUsPerUnit / (quiet.elapsedMs * 1000),
        };
      }
      while (executors.length > level) await executors.pop()?.stop();
      const units = opts.callsPerExecutor * level;
      const phase = await measure(level, units, opts.admin, executors, async () => {
        await closedLoop(call, units, inFlight);
      });
      phases.push(phase);
      console.log(
        `  executors ${level}: ${fmt(phase.perS, 0).padStart(5)} calls/s, redis CPU ${fmt(phase.redisCpuUsPerUnit, 1)} µs ` +
          `and ${fmt(phase.redisCommandsPerUnit, 1)} commands per call, redis busy ${fmt(phase.redisBusy * 100, 1)} %, load ${fmt(phase.loadAvg1m, 2)}`,
      );
    }
    // Redis's cost per call when calls come densely, as they do to a busy shard: a no-op tool, executors
    // with many slots, many calls in flight; Redis then handles more commands per wake-up.
    await Promise.all(executors.splice(0).map((e) => e.stop()));
    executors.push(
      ...(await startExecutors(
        DENSE_EXECUTORS,
        { ...env, EXECUTOR_CONCURRENCY: String(DENSE_CONCURRENCY) },
        1,
      )),
    );
    const dense = () => callTool(NOOP_TOOL);
    await closedLoop(dense, opts.denseCalls, DENSE_IN_FLIGHT);
    const densePhases: Phase[] = [];
    for (let i = 0; i < DENSE_ROUNDS; i += 1) {
      densePhases.push(
        await measure(DENSE_EXECUTORS, opts.denseCalls, opts.admin, executors, async () => {
          await closedLoop(dense, opts.denseCalls, DENSE_IN_FLIGHT);
        }),
      );
    }
    const [denseFigures] = byLevel(densePhases);
    console.log(
      `  dense no-op calls (${DENSE_EXECUTORS} executors of ${DENSE_CONCURRENCY}, ${DENSE_IN_FLIGHT} in flight): ` +
        `${fmt(denseFigures?.perS ?? Number.NaN, 0)} calls/s, redis CPU ${fmt(denseFigures?.redisCpuUsPerUnit ?? Number.NaN, 1)} µs ` +
        `and ${fmt(denseFigures?.redisCommandsPerUnit ?? Number.NaN, 1)} commands per call, redis busy ` +
        `${fmt((denseFigures?.redisBusy ?? Number.NaN) * 100, 1)} % (median of ${DENSE_ROUNDS})`,
    );
    return { phases, idle, dense: denseFigures as LevelFigures, densePhases, inFlight };
  } finally {
    await dispatcher?.close();
    await Promise.all(executors.map((e) => e.stop()));
    await deleteByPrefix(producer, prefix);
    await producer.quit();
  }
}

/** A finished run's Redis footprint, per key, in bytes (MEMORY USAGE, every element counted). */
async function finishedRunBytes(redis: Redis, keys: Keys, runIds: string[]) {
  const parts = {
    state: (id: string) => keys.runState(id),
    messages: (id: string) => keys.runMessages(id),
    events: (id: string) => keys.runEvents(id),
    meta: (id: string) => keys.runMeta(id),
    results: (id: string) => keys.results(id),
    ledger: (id: string) => keys.runCalls(id),
    'run job': (id: string) => `${keys.queuePrefix(keys.runsQueue)}:${keys.runsQueue}:${id}`,
  };
  const perKey: Record<string, number> = {};
  for (const [label, key] of Object.entries(parts)) {
    const sizes = await Promise.all(
      runIds.map(async (id) => Number((await redis.call('MEMORY', 'USAGE', key(id), 'SAMPLES', '0')) ?? 0)),
    );
    perKey[label] = sizes.reduce((a, b) => a + b, 0) / runIds.length;
  }
  const ttlS = await redis.ttl(keys.runState(runIds[0] as string));
  const total = Object.values(perKey).reduce((a, b) => a + b, 0);
  return { perKey, total, ttlS };
}

async function usedMemory(redis: Redis): Promise<number> {
  return Number(/^used_memory:(\d+)/m.exec(await redis.info('memory'))?.[1] ?? Number.NaN);
}

/** Part 2: runs through 1 and 2 schedulers against a model of fixed latency. */
async function schedulerScaling(opts: {
  redisUrl: string;
  admin: Redis;
  agentsFile: string;
  outputsDir: string;
  levels: number[];
  concurrency: number;
  runsPerScheduler: number;
  latencyMs: number;
}) {
  const prefix = `bench-scale-r-${randomUUID().slice(0, 8)}`;
  const keys = createKeys(prefix);
  const base = {
    REDIS_URL: opts.redisUrl,
    AR_KEY_PREFIX: prefix,
    AGENTS_FILE: opts.agentsFile,
    OUTPUTS_DIR: opts.outputsDir,
  };
  const maxLevel = Math.max(...opts.levels);
  const inFlight = 2 * opts.concurrency * maxLevel;
  const children: PlatformChild[] = [];
  const schedulers: PlatformChild[] = [];
  let sim: SimHost | undefined;
  const producer = createRedis(opts.redisUrl, 'producer');
  const eventsConn = new Redis(opts.redisUrl, { maxRetriesPerRequest: null });
  let control: RunControl | undefined;
  let events: QueueEvents | undefined;
  try {
    await waitReady(producer, opts.redisUrl);
    const s = await startSimHost('process', opts.latencyMs);
    sim = s;
    children.push(
      ...(await startExecutors(
        RUN_EXECUTORS,
        { ...base, EXECUTOR_CONCURRENCY: String(RUN_EXECUTOR_CONCURRENCY) },
        1,
      )),
    );
    const schedulerEnv = {
      ...base,
      OPENAI_API_KEY: 'bench',
      OPENAI_BASE_URL: s.url,
      OPENAI_MODEL: SCENARIO,
      SCHEDULER_CONCURRENCY: String(opts.concurrency),
      SCHEDULER_METRICS_PORT: '0',
    };
    const startScheduler = async () => {
      const child = await startPlatformChild(
        `scheduler ${schedulers.length + 1}`,
        SCHEDULER_MAIN,
        schedulerEnv,
      );
      schedulers.push(child);
    };
    await startScheduler();
    const c = new RunControl(producer, keys);
    control = c;
    const ev = new QueueEvents(keys.runsQueue, {
      connection: eventsConn,
      prefix: keys.queuePrefix(keys.runsQueue),
    });
    events = ev;
    const pending = new Map<string, { resolve: () => void; reject: (err: Error) => void }>();
    const settle = (jobId: string, err?: Error) => {
      const waiter = pending.get(jobId);
      if (!waiter) return;
      pending.delete(jobId);
      if (err) waiter.reject(err);
      else waiter.resolve();
    };
    ev.on('completed', ({ jobId, returnvalue }) => {
      const value = (typeof returnvalue === 'string' ? JSON.parse(returnvalue) : returnvalue) as {
        status?: string;
      } | null;
      settle(
        jobId,
        value?.status === 'succeeded' ? undefined : new Error(`run ${jobId} ended ${JSON.stringify(value)}`),
      );
    });
    ev.on('failed', ({ jobId, failedReason }) =>
      settle(jobId, new Error(`run ${jobId} failed: ${failedReason}`)),
    );
    await ev.waitUntilReady();
    const finished: string[] = [];
    let seq = 0;
    const runOnce = async () => {
      const runId = newRunId();
      const done = new Promise<void>((resolve, reject) => pending.set(runId, { resolve, reject }));
      await c.start({ runId, agent: LOOP_AGENT, input: taskInput(++seq) });
      await done;
      finished.push(runId);
    };
    await closedLoop(runOnce, Math.max(inFlight, Math.round(opts.runsPerScheduler / 4)), inFlight);
    await s.take();
    const memBefore = await usedMemory(opts.admin);
    const runsBefore = finished.length;
    const phases: Phase[] = [];
    for (const level of upAndDown(opts.levels)) {
      if (schedulers.length < level) {
        while (schedulers.length < level) await startScheduler();
        await closedLoop(runOnce, inFlight, inFlight);
        await s.take();
      }
      while (schedulers.length > level) await schedulers.pop()?.stop();
      const units = opts.runsPerScheduler * level;
      const schedulerCpu = async () =>
        (await Promise.all(schedulers.map((child) => child.cpuUs()))).reduce((x, y) => x + y, 0);
      const schedulerCpuBefore = await schedulerCpu();
      const phase = await measure(level, units, opts.admin, [...children, ...schedulers], async () => {
        await closedLoop(runOnce, units, inFlight);
      });
      phase.schedulerCpuUsPerUnit = ((await schedulerCpu()) - schedulerCpuBefore) / units;
      const taken = await s.take();
      phase.modelRequestsPerUnit = taken.handledMs.size / units;
      phase.simBusy = taken.busy;
      phase.simCpuUsPerUnit = taken.cpuUs / units;
      phases.push(phase);
      console.log(
        `  schedulers ${level}: ${fmt(phase.perS, 1).padStart(6)} runs/s, redis CPU ${fmt(phase.redisCpuUsPerUnit, 0)} µs ` +
          `and ${fmt(phase.redisCommandsPerUnit, 1)} commands per run, redis busy ${fmt(phase.redisBusy * 100, 1)} %, ` +
          `llm-sim busy ${fmt(taken.busy * 100, 0)} %, load ${fmt(phase.loadAvg1m, 2)}`,
      );
    }
    // What finished runs keep: their keys (until RUN_RETENTION_S) and the retained run job.
    const memAfter = await usedMemory(opts.admin);
    const sample = finished.slice(-20);
    const footprint = await finishedRunBytes(opts.admin, keys, sample);
    const usedMemoryPerRun = (memAfter - memBefore) / (finished.length - runsBefore);
    return { phases, footprint, usedMemoryPerRun, inFlight };
  } finally {
    await events?.close();
    await control?.close();
    await Promise.all(schedulers.map((child) => child.stop()));
    await Promise.all(children.map((child) => child.stop()));
    await sim?.close();
    await deleteByPrefix(producer, prefix);
    await producer.quit();
    await eventsConn.quit().catch(() => undefined);
  }
}

/** Redis memory per parked run from `pnpm bench:parked`, when its results file exists. */
async function parkedRunBytes(): Promise<number | undefined> {
  try {
    const file = fileURLToPath(new URL('./results/parked-runs.json', import.meta.url));
    const parked = JSON.parse(await readFile(file, 'utf8')) as { redis_bytes_per_parked_run?: number };
    return parked.redis_bytes_per_parked_run;
  } catch {
    return undefined;
  }
}

async function main(): Promise<void> {
  const executorLevels = envList('BENCH_SCALE_EXECUTORS', [1, 2, 4]);
  const schedulerLevels = envList('BENCH_SCALE_SCHEDULERS', [1, 2]);
  const sleepMs = envInt('BENCH_SCALE_SLEEP_MS', 50, 1);
  const concurrency = envInt('BENCH_SCALE_CONCURRENCY', 4, 1);
  const callsPerExecutor = envInt('BENCH_SCALE_CALLS', 400, 10);
  const schedulerConcurrency = envInt('BENCH_SCALE_SCHEDULER_CONCURRENCY', 4, 1);
  const runsPerScheduler = envInt('BENCH_SCALE_RUNS', 80, 10);
  const denseCalls = envInt('BENCH_SCALE_DENSE_CALLS', 2000, 100);
  const latencyMs = envInt('BENCH_SCALE_LLM_LATENCY_MS', 100, 0);
  const headroom = Number(process.env.BENCH_SCALE_HEADROOM ?? 0.5);
  if (!(headroom > 0 && headroom <= 1)) throw new Error('BENCH_SCALE_HEADROOM must be in (0, 1]');
  const shared = process.env.BENCH_SCALE_REDIS === 'shared';

  const started = performance.now();
  const tmpDir = await mkdtemp(path.join(os.tmpdir(), 'agent-reach-bench-scale-'));
  let privateRedis: PrivateRedis | undefined;
  let admin: Redis | undefined;
  try {
    if (!shared) privateRedis = await startPrivateRedis();
    const redisUrl = privateRedis?.url ?? process.env.REDIS_URL ?? constants.DEFAULT_REDIS_URL;
    const a = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
    admin = a;
    const agentsFile = path.join(tmpDir, 'agents.yaml');
    await writeFile(
      agentsFile,
      `${AGENTS_YAML}  - name: ${SCALE_AGENT}\n    description: Scale-out benchmark agent.\n    tools: [${SLEEP_TOOL}, ${NOOP_TOOL}]\n`,
    );
    const outputsDir = path.join(tmpDir, 'outputs');
    const environment = await benchEnvironment((section) => a.info(section));
    console.log(
      `scale-out bench: node ${process.version}, redis ${environment.redis} ` +
        `(${privateRedis ? 'a redis-server of its own, no persistence' : `shared, at ${redisUrl}`}), ` +
        `${os.cpus().length} CPUs, load ${fmt(os.loadavg()[0] ?? Number.NaN, 2)} at start`,
    );

    const slotsIdeal = (level: number) => (level * concurrency * 1000) / sleepMs;
    console.log(
      `\n1. executors: tool waits ${sleepMs} ms, EXECUTOR_CONCURRENCY ${concurrency}, ` +
        `${2 * concurrency * Math.max(...executorLevels)} calls in flight, ${callsPerExecutor} calls per executor ` +
        `per phase, levels ${upAndDown(executorLevels).join(', ')}`,
    );
    const callPart = await executorScaling({
      redisUrl,
      admin: a,
      agentsFile,
      outputsDir,
      levels: executorLevels,
      sleepMs,
      concurrency,
      callsPerExecutor,
      denseCalls,
    });
    const callPhases = callPart.phases;
    const calls = byLevel(callPhases);
    const callTable = levelRows(calls, 'call', slotsIdeal);
    console.log(`\nexecutor processes (median of the up and down phases)`);
    printTable(callTable.header, callTable.rows);
    console.log(
      `ratio to linear = calls/s ÷ (N × calls/s at 1); slots' ideal = N × ${concurrency} ÷ ${sleepMs} ms`,
    );
    const topCall = callPhases.at(-1) as Phase;
    console.log(`redis commands per call (last phase): ${topCommands(topCall.redis, topCall.units)}`);

    console.log(
      `\n2. schedulers: plan + ${TOOL_STEPS} no-op tool turns + final answer, llm-sim latency ${latencyMs} ms per answer, ` +
        `SCHEDULER_CONCURRENCY ${schedulerConcurrency}, ${RUN_EXECUTORS} executors of ${RUN_EXECUTOR_CONCURRENCY}, ` +
        `${2 * schedulerConcurrency * Math.max(...schedulerLevels)} runs in flight, ${runsPerScheduler} runs per scheduler per phase, ` +
        `levels ${upAndDown(schedulerLevels).join(', ')}`,
    );
    const runPart = await schedulerScaling({
      redisUrl,
      admin: a,
      agentsFile,
      outputsDir,
      levels: schedulerLevels,
      concurrency: schedulerConcurrency,
      runsPerScheduler,
      latencyMs,
    });
    const runs = byLevel(runPart.phases);
    const runTable = levelRows(runs, 'run');
    console.log(`\nscheduler processes (median of the up and down phases)`);
    printTable(runTable.header, runTable.rows);
    const topRun = runPart.phases.at(-1) as Phase;
    console.log(`redis commands per run (last phase): ${topCommands(topRun.redis, topRun.units)}`);
    console.log(
      `\nfinished run, kept ${runPart.footprint.ttlS} s (RUN_RETENTION_S): ` +
        `${fmt(runPart.footprint.total, 0)} bytes in its keys (MEMORY USAGE, mean of 20 runs: ` +
        Object.entries(runPart.footprint.perKey)
          .map(([k, v]) => `${k} ${fmt(v, 0)}`)
          .join(', ') +
        `); used_memory grew ${fmt(runPart.usedMemoryPerRun, 0)} bytes per run over the measured phases`,
    );

    // The capacity model: one Redis runs commands on one thread, so a shard's budget is one core, of
    // which `headroom` is planned for. Redis's CPU per command falls as calls come more densely (more
    // commands per wake-up), so the dense phase's cost stands for a busy shard; the paced phases' cost
    // (a handful of calls per wake-up) is the pessimistic bound. A run's Redis CPU at that density is
    // estimated from its commands at the dense phase's CPU per command.
    const dense = callPart.dense;
    const pacedCalls = calls.at(-1) as LevelFigures;
    const topRuns = runs.at(-1) as LevelFigures;
    const usPerCommand = dense.redisCpuUsPerUnit / dense.redisCommandsPerUnit;
    const modelRequests = topRuns.modelRequestsPerUnit;
    const runCpuDense = topRuns.redisCommandsPerUnit * usPerCommand;
    const perShard = (cpuUs: number) => (headroom * 1e6) / cpuUs;
    const shards = (target: number, cpuUs: number) => Math.ceil(target / perShard(cpuUs));
    const parked = await parkedRunBytes();
    const finishedBytes = Math.max(runPart.footprint.total, runPart.usedMemoryPerRun);
    const retentionS =
      runPart.footprint.ttlS > 0 ? runPart.footprint.ttlS : constants.DEFAULT_RUN_RETENTION_S;
    const retainedGB = (callsPerS: number, seconds: number) =>
      ((callsPerS / TOOL_STEPS) * seconds * finishedBytes) / 1e9;
    const model = (label: string, cpuUsPerCall: number) => ({
      label,
      redisCpuUsPerCall: cpuUsPerCall,
      callsPerSPerShard: perShard(cpuUsPerCall),
      shardsFor10k: shards(10_000, cpuUsPerCall),
      shardsFor100k: shards(100_000, cpuUsPerCall),
    });
    const models = [
      model('bare calls, dense (measured)', dense.redisCpuUsPerUnit),
      model(`bare calls, paced (measured, ${pacedCalls.level} executors)`, pacedCalls.redisCpuUsPerUnit),
      model(`calls in runs, dense (estimated: commands × µs/command)`, runCpuDense / TOOL_STEPS),
      model(
        `calls in runs, paced (measured, ${topRuns.level} schedulers)`,
        topRuns.redisCpuUsPerUnit / TOOL_STEPS,
      ),
    ];
    const capacity = {
      headroom,
      toolCallsPerRun: TOOL_STEPS,
      modelRequestsPerRun: modelRequests,
      dense: {
        redisCpuUsPerCall: dense.redisCpuUsPerUnit,
        redisCommandsPerCall: dense.redisCommandsPerUnit,
        redisUsPerCommand: usPerCommand,
        callsPerS: dense.perS,
        redisBusy: dense.redisBusy,
      },
      paced: {
        redisCpuUsPerCall: pacedCalls.redisCpuUsPerUnit,
        redisCommandsPerCall: pacedCalls.redisCommandsPerUnit,
      },
      run: {
        redisCpuUsMeasured: topRuns.redisCpuUsPerUnit,
        redisCommands: topRuns.redisCommandsPerUnit,
        redisCommandsPerModelRequest: topRuns.redisCommandsPerUnit / modelRequests,
        redisCpuUsDenseEstimate: runCpuDense,
        redisCpuUsPerModelRequestDenseEstimate: runCpuDense / modelRequests,
      },
      idle: callPart.idle,
      models,
      finishedRunBytes: finishedBytes,
      parkedRunBytes: parked,
      retentionS,
      retainedGB: {
        at10kDefaultRetention: retainedGB(10_000, retentionS),
        at100kDefaultRetention: retainedGB(100_000, retentionS),
        at10kOneDay: retainedGB(10_000, 86_400),
        at10kOneHour: retainedGB(10_000, 3_600),
        at100kOneHour: retainedGB(100_000, 3_600),
      },
    };
    console.log(
      `\ncapacity model (headroom ${headroom}: a shard plans for ${headroom * 100} % of its one core; ` +
        `${fmt(usPerCommand, 2)} µs Redis CPU per command in the dense phase)`,
    );
    printTable(
      ['', 'Redis CPU µs / call', 'calls/s per shard', 'shards @10k/s', 'shards @100k/s'],
      models.map((m) => [
        m.label,
        fmt(m.redisCpuUsPerCall, 1),
        fmt(m.callsPerSPerShard, 0),
        String(m.shardsFor10k),
        String(m.shardsFor100k),
      ]),
    );
    console.log(
      `finished runs kept ${retentionS} s at ${fmt(finishedBytes, 0)} bytes each (${TOOL_STEPS} calls per run): ` +
        `${fmt(capacity.retainedGB.at10kDefaultRetention, 0)} GB at 10 000 calls/s, ` +
        `${fmt(capacity.retainedGB.at100kDefaultRetention, 0)} GB at 100 000; kept one hour: ` +
        `${fmt(capacity.retainedGB.at10kOneHour, 1)} GB and ${fmt(capacity.retainedGB.at100kOneHour, 1)} GB` +
        (parked === undefined ? '' : `; a parked run holds ${fmt(parked, 0)} bytes (pnpm bench:parked)`),
    );
    if (callPart.idle) {
      console.log(
        `idle fleet (${callPart.idle.executors} executors, no calls): Redis ${fmt(callPart.idle.redisBusy * 100, 2)} % ` +
          `of a core, the executors ${fmt(callPart.idle.platformCores * 100, 1)} %`,
      );
    }

    const ratios = {
      executors: callTable.ratios,
      schedulers: runTable.ratios,
    };
    const strip = (phases: Phase[]) => phases.map(({ redis: _, ...p }) => p);
    const report = {
      date: new Date().toISOString(),
      environment: {
        ...environment,
        redis: `${environment.redis}${privateRedis ? ' (private)' : ' (shared)'}`,
      },
      settings: {
        executorLevels,
        sleepMs,
        concurrency,
        callsPerExecutor,
        schedulerLevels,
        schedulerConcurrency,
        runsPerScheduler,
        latencyMs,
        runExecutors: RUN_EXECUTORS,
        runExecutorConcurrency: RUN_EXECUTOR_CONCURRENCY,
      },
      executors: calls,
      schedulers: runs,
      ratios,
      finishedRun: { ...runPart.footprint, usedMemoryPerRun: runPart.usedMemoryPerRun },
      capacity,
      phases: {
        executors: strip(callPhases),
        dense: strip(callPart.densePhases),
        schedulers: strip(runPart.phases),
      },
      redisCommandsPerCall: Object.fromEntries(topCall.redis.calls.map(([n, v]) => [n, v / topCall.units])),
      redisCommandsPerRun: Object.fromEntries(topRun.redis.calls.map(([n, v]) => [n, v / topRun.units])),
      durationS: (performance.now() - started) / 1000,
    };
    const resultsDir = fileURLToPath(new URL('./results/', import.meta.url));
    await mkdir(resultsDir, { recursive: true });
    const jsonPath = path.join(resultsDir, 'scale-out.json');
    await writeFile(jsonPath, `${JSON.stringify(report, null, 2)}\n`);
    const summary = {
      executors: Object.fromEntries(calls.map((f) => [f.level, Math.round(f.perS)])),
      executorRatios: Object.fromEntries(
        Object.entries(ratios.executors).map(([k, v]) => [k, +v.toFixed(3)]),
      ),
      schedulers: Object.fromEntries(runs.map((f) => [f.level, +f.perS.toFixed(1)])),
      schedulerRatios: Object.fromEntries(
        Object.entries(ratios.schedulers).map(([k, v]) => [k, +v.toFixed(3)]),
      ),
      redisCpuUsPerCallDense: +dense.redisCpuUsPerUnit.toFixed(1),
      redisCpuUsPerCallPaced: +pacedCalls.redisCpuUsPerUnit.toFixed(1),
      redisCommandsPerCall: +dense.redisCommandsPerUnit.toFixed(1),
      redisCpuUsPerRun: Math.round(topRuns.redisCpuUsPerUnit),
      redisCommandsPerRun: +topRuns.redisCommandsPerUnit.toFixed(1),
      finishedRunBytes: Math.round(finishedBytes),
      loadAvg1m: +(os.loadavg()[0] ?? 0).toFixed(2),
    };
    console.log(`\nsummary ${JSON.stringify(summary)}`);
    console.log(`wrote ${path.relative(process.cwd(), jsonPath)} (${fmt(report.durationS, 0)} s)`);
  } finally {
    await admin?.quit().catch(() => undefined);
    await privateRedis?.stop();
    await rm(tmpDir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(process.exitCode ?? 0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
