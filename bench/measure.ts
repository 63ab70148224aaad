import os from 'node:os';
/** Latency figures of one phase, in milliseconds. */
export interface LatencySummary {
  p50: number;
  p90: number;
  p99: number;
  mean: number;
  max: number;
}

/** A closed loop's outcome: wall time for all calls and each call's latency. */
export interface LoopOutcome {
  elapsedMs: number;
  latenciesMs: Float64Array;
}

/** Nearest-rank percentiles over the samples (which it sorts in place). */
export function summarize(samples: Float64Array): LatencySummary {
  samples.sort();
  const n = samples.length;
  const at = (q: number) => samples[Math.min(n - 1, Math.max(0, Math.ceil(q * n) - 1))] ?? Number.NaN;
  let sum = 0;
  for (const v of samples) sum += v;
  return { p50: at(0.5), p90: at(0.9), p99: at(0.99), mean: sum / n, max: at(1) };
}

/** Median of a few rounds' figures (mean of the middle two for an even count). */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  const hi = sorted[mid] ?? Number.NaN;
  return sorted.length % 2 === 1 ? hi : ((sorted[mid - 1] ?? hi) + hi) / 2;
}

/**
 * Runs `total` calls from `inFlight` concurrent callers, each starting its next call as soon as its previous
 * one returns, so exactly `inFlight` calls are outstanding until the tail.
 */
export async function closedLoop(
  call: () => Promise<void>,
  total: number,
  inFlight: number,
): Promise<LoopOutcome> {
  const latenciesMs = new Float64Array(total);
  let next = 0;
  const caller = async () => {
    while (next < total) {
      const i = next++;
      const t0 = performance.now();
      await call();
      latenciesMs[i] = performance.now() - t0;
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: Math.min(inFlight, total) }, caller));
  return { elapsedMs: performance.now() - started, latenciesMs };
}

/** Runs `total` calls one at a time. */
export async function sequential(call: () => Promise<void>, total: number): Promise<LoopOutcome> {
  return closedLoop(call, total, 1);
}

/** Where a benchmark ran: recorded with its figures, since absolute numbers mean little elsewhere. */
export async function benchEnvironment(info: (section: string) => Promise<string>) {
  const redis = /^redis_version:(\S+)/m.exec(await info('server'))?.[1] ?? 'unknown';
  return { node: process.version, redis, cpus: os.cpus().length, loadAvg1m: os.loadavg()[0] };
}
