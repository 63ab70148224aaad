/**
 * One round of the tool-call benchmarks: a closed loop of calls under load, then calls one at a time, with
 * the CPU of this process and of Redis and the commands Redis ran. Shared by the tool-call and tracing
 * benchmarks.
 */
import type { Redis } from 'ioredis';
import { closedLoop, median, sequential, summarize, type LatencySummary } from './measure.js';
import { diffRedis, sampleRedis, type RedisDelta } from './redis-stats.js';
import type { BenchSystem } from './systems.js';

/** Calls outstanding in the closed loop. */
export const IN_FLIGHT = 64;

export interface RoundFigures {
  throughputPerS: number;
  underLoad: LatencySummary;
  sequential: LatencySummary;
  /** CPU of this Node process (both sides of the system live in it) per call under load, in µs. */
  nodeCpuUsPerCall: number;
  /** Redis server CPU per call under load, in µs. */
  redisCpuUsPerCall: number;
  /** Commands Redis executed per sequential call, script-internal calls included. */
  redisCommandsPerCall: number;
  redisCommands: RedisDelta;
}

export async function measureRound(
  system: BenchSystem,
  admin: Redis,
  plan: { calls: number; warmup: number; seqCalls: number; seqWarmup: number },
): Promise<RoundFigures> {
  const call = () => system.call();
  await closedLoop(call, plan.warmup, IN_FLIGHT);
  const redisBefore = await sampleRedis(admin);
  const cpuBefore = process.cpuUsage();
  const load = await closedLoop(call, plan.calls, IN_FLIGHT);
  const cpu = process.cpuUsage(cpuBefore);
  const loadRedis = diffRedis(redisBefore, await sampleRedis(admin));

  await sequential(call, plan.seqWarmup);
  const seqBefore = await sampleRedis(admin);
  const seq = await sequential(call, plan.seqCalls);
  const seqRedis = diffRedis(seqBefore, await sampleRedis(admin));
  return {
    throughputPerS: plan.calls / (load.elapsedMs / 1000),
    underLoad: summarize(load.latenciesMs),
    sequential: summarize(seq.latenciesMs),
    nodeCpuUsPerCall: (cpu.user + cpu.system) / plan.calls,
    redisCpuUsPerCall: loadRedis.cpuUs / plan.calls,
    redisCommandsPerCall: seqRedis.total / plan.seqCalls,
    redisCommands: seqRedis,
  };
}

/** The median of each figure over rounds. */
export function medianFigures(rounds: RoundFigures[]) {
  const m = (pick: (r: RoundFigures) => number) => median(rounds.map(pick));
  const lat = (pick: (r: RoundFigures) => LatencySummary): LatencySummary => ({
    p50: m((r) => pick(r).p50),
    p90: m((r) => pick(r).p90),
    p99: m((r) => pick(r).p99),
    mean: m((r) => pick(r).mean),
    max: m((r) => pick(r).max),
  });
  return {
    throughputPerS: m((r) => r.throughputPerS),
    underLoad: lat((r) => r.underLoad),
    sequential: lat((r) => r.sequential),
    nodeCpuUsPerCall: m((r) => r.nodeCpuUsPerCall),
    redisCpuUsPerCall: m((r) => r.redisCpuUsPerCall),
    redisCommandsPerCall: m((r) => r.redisCommandsPerCall),
  };
}

export type Medians = ReturnType<typeof medianFigures>;
