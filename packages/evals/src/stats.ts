import { BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, Z_95 } from './constants.js';

/** The 95 % Wilson score interval of a proportion k/n; [0, 1] for n = 0. */
export function wilson(k: number, n: number, z = Z_95): [number, number] {
  if (n === 0) return [0, 1];
  const p = k / n;
  const z2 = z * z;
  const centre = (p + z2 / (2 * n)) / (1 + z2 / n);
  const half = (z / (1 + z2 / n)) * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n));
  return [Math.max(0, centre - half), Math.min(1, centre + half)];
}

/**
 * The 95 % interval of the difference of two proportions k2/n2 − k1/n1 by Newcombe's hybrid score method
 * (his method 10), built from the two Wilson intervals; null when either side has no trial.
 */
export function wilsonDifference(
  k1: number,
  n1: number,
  k2: number,
  n2: number,
): { diff: number; low: number | null; high: number | null } {
  if (n1 === 0 || n2 === 0) return { diff: 0, low: null, high: null };
  const p1 = k1 / n1;
  const p2 = k2 / n2;
  const [l1, u1] = wilson(k1, n1);
  const [l2, u2] = wilson(k2, n2);
  const diff = p2 - p1;
  return {
    diff,
    low: diff - Math.sqrt((p2 - l2) ** 2 + (u1 - p1) ** 2),
    high: diff + Math.sqrt((u2 - p2) ** 2 + (p1 - l1) ** 2),
  };
}

/** The nearest-rank percentile (q in 0..100) of values; 0 for none. */
export function percentile(values: readonly number[], q: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((q / 100) * sorted.length));
  return sorted[rank - 1] ?? 0;
}

/** mulberry32: a small seeded generator, so that intervals are the same for the same report. */
function generator(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The 95 % percentile-bootstrap interval of a statistic of paired units (cases): units are resampled
 * with replacement, the same draw for both sides; null for no unit. A resample whose statistic is not a
 * number (NaN: a rate with nothing to measure in that draw) is left out; null when every one is.
 */
export function pairedBootstrap<U>(
  units: readonly U[],
  statistic: (sample: readonly U[]) => number,
  resamples = BOOTSTRAP_RESAMPLES,
  seed = BOOTSTRAP_SEED,
): { low: number | null; high: number | null } {
  if (units.length === 0) return { low: null, high: null };
  const random = generator(seed);
  const stats: number[] = [];
  for (let r = 0; r < resamples; r++) {
    const sample = units.map(() => units[Math.floor(random() * units.length)] as U);
    const value = statistic(sample);
    if (Number.isFinite(value)) stats.push(value);
  }
  if (stats.length === 0) return { low: null, high: null };
  stats.sort((a, b) => a - b);
  return { low: percentile(stats, 2.5), high: percentile(stats, 97.5) };
}
