import type { Redis } from 'ioredis';
import { median, summarize, type LatencySummary } from '../measure.js';
import { diffRedis, sampleRedis, type RedisDelta, type RedisSample } from '../redis-stats.js';
import type { StepSample } from './probe.js';
import { TOOL_STEPS } from './task.js';

/** Means of a step's parts, in ms; they add up to the mean step wall time. */
export interface StepBreakdown {
  pre: number;
  llmSim: number;
  /** Client-side LLM time beyond the simulator's: openai SDK, fetch, HTTP over loopback. */
  llmHttp: number;
  post: number;
  dispatch: number;
  tool: number;
}

/** What one measured phase (one configuration at one in-flight count) gave. */
export interface PhaseFigures {
  runs: number;
  runsPerS: number;
  runMs: LatencySummary;
  stepWallMs: LatencySummary;
  llmClientMs: LatencySummary;
  llmSimMs: LatencySummary;
  /** Per step: wall − simulator handling − tool. */
  overheadMs: LatencySummary;
  /** Per step: wall − client-side LLM latency − tool (the openai SDK and HTTP not counted as overhead). */
  overheadExClientMs: LatencySummary;
  breakdownMs: StepBreakdown;
  /** Medians of the same parts (these do not add up). */
  partsP50Ms: StepBreakdown;
  /** Steps whose simulator time could not be matched by request id (then the client time is used). */
  unmatchedSim: number;
  redisCommandsPerStep: number;
  redisBytesInPerStep: number;
  redisCpuUsPerRun: number;
  /** CPU of this process (loop, runner, dispatcher, executor; the simulator too when inline) per run. */
  nodeCpuUsPerRun: number;
  /** CPU of the simulator's process per run (NaN when inline). */
  simCpuUsPerRun: number;
  /** Share of the phase this process's event loop was busy, and the simulator's (0..1). */
  mainBusy: number;
  simBusy: number;
  /** Median bytes Redis holds per finished run's record (NaN when the configuration keeps none). */
  recordBytesPerRun: number;
  redisCommands: RedisDelta;
}

export interface RedisSampleWithBytes extends RedisSample {
  bytesIn: number;
}

/** Redis's counters plus `total_net_input_bytes` (everything clients sent it: commands and their data). */
export async function sampleRedisBytes(redis: Redis): Promise<RedisSampleWithBytes> {
  const [sample, stats] = await Promise.all([sampleRedis(redis), redis.info('stats')]);
  return { ...sample, bytesIn: Number(/^total_net_input_bytes:(\d+)/m.exec(stats)?.[1] ?? Number.NaN) };
}

export function phaseFigures(input: {
  runs: number;
  elapsedMs: number;
  runLatenciesMs: Float64Array;
  steps: StepSample[];
  redisBefore: RedisSampleWithBytes;
  redisAfter: RedisSampleWithBytes;
  nodeCpuUs: number;
  simCpuUs: number;
  mainBusy: number;
  simBusy: number;
  recordBytesPerRun: number;
}): PhaseFigures {
  const { runs, steps } = input;
  const n = steps.length;
  const column = (pick: (s: StepSample) => number) => Float64Array.from(steps, pick);
  const simMs = (s: StepSample) => (Number.isNaN(s.llmSimMs) ? s.llmClientMs : s.llmSimMs);
  const mean = (pick: (s: StepSample) => number) => steps.reduce((sum, s) => sum + pick(s), 0) / n;
  const p50 = (pick: (s: StepSample) => number) => summarize(column(pick)).p50;
  const parts = (of: (pick: (s: StepSample) => number) => number): StepBreakdown => ({
    pre: of((s) => s.preMs),
    llmSim: of(simMs),
    llmHttp: of((s) => s.llmClientMs - simMs(s)),
    post: of((s) => s.postMs),
    dispatch: of((s) => s.dispatchMs),
    tool: of((s) => s.toolMs),
  });
  const redis = diffRedis(input.redisBefore, input.redisAfter);
  const toolSteps = runs * TOOL_STEPS;
  return {
    runs,
    runsPerS: runs / (input.elapsedMs / 1000),
    runMs: summarize(input.runLatenciesMs),
    stepWallMs: summarize(column((s) => s.wallMs)),
    llmClientMs: summarize(column((s) => s.llmClientMs)),
    llmSimMs: summarize(column(simMs)),
    overheadMs: summarize(column((s) => s.wallMs - simMs(s) - s.toolMs)),
    overheadExClientMs: summarize(column((s) => s.wallMs - s.llmClientMs - s.toolMs)),
    breakdownMs: parts(mean),
    partsP50Ms: parts(p50),
    unmatchedSim: steps.filter((s) => Number.isNaN(s.llmSimMs)).length,
    redisCommandsPerStep: redis.total / toolSteps,
    redisBytesInPerStep: (input.redisAfter.bytesIn - input.redisBefore.bytesIn) / toolSteps,
    redisCpuUsPerRun: redis.cpuUs / runs,
    nodeCpuUsPerRun: input.nodeCpuUs / runs,
    simCpuUsPerRun: input.simCpuUs / runs,
    mainBusy: input.mainBusy,
    simBusy: input.simBusy,
    recordBytesPerRun: input.recordBytesPerRun,
    redisCommands: redis,
  };
}

/** The median over rounds of every figure (of each percentile separately). */
export function medianFigures(rounds: PhaseFigures[]) {
  const m = (pick: (r: PhaseFigures) => number) => median(rounds.map(pick));
  const lat = (pick: (r: PhaseFigures) => LatencySummary): LatencySummary => ({
    p50: m((r) => pick(r).p50),
    p90: m((r) => pick(r).p90),
    p99: m((r) => pick(r).p99),
    mean: m((r) => pick(r).mean),
    max: m((r) => pick(r).max),
  });
  const parts = (pick: (r: PhaseFigures) => StepBreakdown): StepBreakdown => ({
    pre: m((r) => pick(r).pre),
    llmSim: m((r) => pick(r).llmSim),
    llmHttp: m((r) => pick(r).llmHttp),
    post: m((r) => pick(r).post),
    dispatch: m((r) => pick(r).dispatch),
    tool: m((r) => pick(r).tool),
  });
  return {
    runsPerS: m((r) => r.runsPerS),
    runMs: lat((r) => r.runMs),
    stepWallMs: lat((r) => r.stepWallMs),
    llmClientMs: lat((r) => r.llmClientMs),
    llmSimMs: lat((r) => r.llmSimMs),
    overheadMs: lat((r) => r.overheadMs),
    overheadExClientMs: lat((r) => r.overheadExClientMs),
    breakdownMs: parts((r) => r.breakdownMs),
    partsP50Ms: parts((r) => r.partsP50Ms),
    unmatchedSim: m((r) => r.unmatchedSim),
    redisCommandsPerStep: m((r) => r.redisCommandsPerStep),
    redisBytesInPerStep: m((r) => r.redisBytesInPerStep),
    redisCpuUsPerRun: m((r) => r.redisCpuUsPerRun),
    nodeCpuUsPerRun: m((r) => r.nodeCpuUsPerRun),
    simCpuUsPerRun: m((r) => r.simCpuUsPerRun),
    mainBusy: m((r) => r.mainBusy),
    simBusy: m((r) => r.simBusy),
    recordBytesPerRun: m((r) => r.recordBytesPerRun),
  };
}

export type Medians = ReturnType<typeof medianFigures>;

/** Prints rows of figures under column headers, numbers right-aligned. */
export function printTable(header: string[], rows: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const render = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('   ');
  console.log(render(header));
  console.log(render(widths.map((w) => '-'.repeat(w))));
  for (const row of rows) console.log(render(row));
}

export function fmt(v: number, digits: number): string {
  if (!Number.isFinite(v)) return '–';
  return v.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}
