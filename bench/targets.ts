import { median } from './measure.js';

/** A benchmark target: a measured figure (usually a ratio) against its limit, met or not. */
export interface Target {
  name: string;
  value: number;
  op: '<=' | '>=';
  limit: number;
  unit: string;
  met: boolean;
  /** For a ratio of two systems: the ratio of their medians over rounds, printed beside `value`. */
  ofMedians?: number;
}

export function target(
  name: string,
  value: number | RoundRatio,
  op: Target['op'],
  limit: number,
  unit = '×',
): Target {
  const v = typeof value === 'number' ? value : value.paired;
  const met = op === '<=' ? v <= limit : v >= limit;
  return {
    name,
    value: v,
    op,
    limit,
    unit,
    met,
    ...(typeof value === 'number' ? {} : { ofMedians: value.ofMedians }),
  };
}

export function formatTarget(t: Target): string {
  const digits = t.unit === '×' ? 2 : 1;
  const v = `${t.value.toFixed(digits)}${t.unit === '×' ? '×' : ` ${t.unit}`}`;
  const limit = `${t.limit}${t.unit === '×' ? '×' : ` ${t.unit}`}`;
  const ofMedians = t.ofMedians === undefined ? '' : `  [ratio of medians ${t.ofMedians.toFixed(digits)}×]`;
  return `${t.name.padEnd(42)} ${v.padStart(10)}  (want ${t.op} ${limit})  ${t.met ? 'met' : 'not met'}${ofMedians}`;
}

/** A figure of system A over the same figure of system B, from rounds in which both ran. */
export interface RoundRatio {
  /** The median of each round's own ratio A/B. */
  paired: number;
  /** The median of A's rounds over the median of B's. */
  ofMedians: number;
}

/**
 * Compares two systems measured round by round (`a[i]` and `b[i]` in the same round, seconds apart). The
 * target figure is the median of the rounds' own ratios: the load of a shared machine drifts between
 * rounds, and it moves both systems of one round alike, so it cancels out of their ratio, where the ratio
 * of two medians can pair a quiet round of one system with a loaded round of the other.
 */
export function roundRatio<T>(a: readonly T[], b: readonly T[], pick: (f: T) => number): RoundRatio {
  const n = Math.min(a.length, b.length);
  const ratios: number[] = [];
  for (let i = 0; i < n; i += 1) ratios.push(pick(a[i] as T) / pick(b[i] as T));
  return { paired: median(ratios), ofMedians: median(a.map(pick)) / median(b.map(pick)) };
}
