import {
  RATE_METRIC_NAMES,
  VARIANT_METRIC_NAMES,
  type EvalAttempt,
  type EvalCaseResult,
  type EvalComparison,
  type EvalVariantResult,
  type FlippedCase,
  type MetricComparison,
  type VariantMetricName,
  type VariantMetrics,
} from '@agent-reach/protocol';
import { pairedBootstrap, percentile, wilsonDifference } from './stats.js';
import { attemptComplete } from './task-completion.js';

type Rate = [k: number, n: number];

/** Numerator and denominator of each rate metric over attempts (docs/evals.md defines each). */
export function rateCounts(attempts: readonly EvalAttempt[]): Record<string, Rate> {
  const sum = (f: (a: EvalAttempt) => number) => attempts.reduce((s, a) => s + f(a), 0);
  const withTools = attempts.filter((a) => a.facts?.tools_selected !== undefined);
  return {
    reach_success: [attempts.filter((a) => a.passed).length, attempts.length],
    tool_selection_accuracy: [withTools.filter((a) => a.facts?.tools_selected).length, withTools.length],
    first_try_valid_args: [
      sum((a) => a.facts?.valid_first_try ?? 0),
      sum((a) => a.facts?.validatable_calls ?? 0),
    ],
    self_healed_args: [sum((a) => a.facts?.self_healed ?? 0), sum((a) => a.facts?.invalid_args ?? 0)],
    task_completion: [attempts.filter((a) => attemptComplete(a.facts)).length, attempts.length],
  };
}

/** A rate with nothing to measure: validity and accuracy are whole (nothing went wrong), healing is nil. */
const EMPTY_RATE: Record<string, number> = {
  reach_success: 0,
  tool_selection_accuracy: 1,
  first_try_valid_args: 1,
  self_healed_args: 0,
  task_completion: 0,
};

/** The metrics of a variant's attempts. */
export function variantMetrics(cases: readonly EvalCaseResult[]): VariantMetrics {
  const attempts = cases.flatMap((c) => c.attempts);
  const counts = rateCounts(attempts);
  const rate = (m: string) => {
    const [k, n] = counts[m] ?? [0, 0];
    return n === 0 ? (EMPTY_RATE[m] ?? 0) : k / n;
  };
  const sum = (f: (a: EvalAttempt) => number) => attempts.reduce((s, a) => s + f(a), 0);
  const latencies = attempts.map((a) => a.latency_ms);
  return {
    cases: cases.length,
    attempts: attempts.length,
    reach_success: rate('reach_success'),
    tool_selection_accuracy: rate('tool_selection_accuracy'),
    first_try_valid_args: rate('first_try_valid_args'),
    self_healed_args: rate('self_healed_args'),
    unknown_tool_calls: sum((a) => a.facts?.unknown_tool_calls ?? 0),
    forbidden_calls: sum((a) => a.facts?.forbidden_calls ?? 0),
    task_completion: rate('task_completion'),
    steps_mean: attempts.length ? sum((a) => a.steps) / attempts.length : 0,
    tokens_total: sum((a) => a.tokens),
    cost_total: sum((a) => a.cost),
    latency_p50_ms: percentile(latencies, 50),
    latency_p95_ms: percentile(latencies, 95),
    counts,
  };
}

/**
 * How the differences of rates get their intervals. When every case ran once, Newcombe's score interval
 * over the attempts, each an independent draw (`newcombe`). When a case ran more than once (`--repeat`),
 * its attempts share the case and are not independent: counted as such they give an interval narrower
 * than the truth, so cases are resampled instead, with all their attempts (`case_bootstrap`: the paired
 * bootstrap the other metrics use).
 */
export function rateIntervalMethod(variants: readonly EvalVariantResult[]): 'newcombe' | 'case_bootstrap' {
  return variants.some((v) => v.cases.some((c) => c.attempts.length > 1)) ? 'case_bootstrap' : 'newcombe';
}

/** A case as both sides ran it. */
type Paired = { b: EvalCaseResult; v: EvalCaseResult };

/** A rate over one side's attempts of a sample of paired cases; NaN when it has nothing to measure. */
function rateOf(sample: readonly Paired[], side: keyof Paired, metric: string): number {
  const [k, n] = rateCounts(sample.flatMap((p) => p[side].attempts))[metric] ?? [0, 0];
  return n === 0 ? Number.NaN : k / n;
}

/** Whether a case passed: more than half of its attempts did. */
export function casePassed(c: EvalCaseResult): boolean {
  return c.attempts.filter((a) => a.passed).length * 2 > c.attempts.length;
}

/** Metrics where lower is better (a rise is a regression). */
export const LOWER_IS_BETTER: ReadonlySet<VariantMetricName> = new Set([
  'unknown_tool_calls',
  'forbidden_calls',
  'steps_mean',
  'tokens_total',
  'cost_total',
  'latency_p50_ms',
  'latency_p95_ms',
]);

const COMPARED = VARIANT_METRIC_NAMES;
const RATES: ReadonlySet<string> = new Set(RATE_METRIC_NAMES);

/** A variant compared with the baseline: each metric's difference with its 95 % interval, flipped cases. */
export function compare(baseline: EvalVariantResult, variant: EvalVariantResult): EvalComparison {
  const metrics: Record<string, MetricComparison> = {};
  const bCounts = baseline.metrics.counts ?? {};
  const vCounts = variant.metrics.counts ?? {};
  const byId = new Map(baseline.cases.map((c) => [c.id, c]));
  const paired = variant.cases.flatMap((c) => {
    const b = byId.get(c.id);
    return b ? [{ b, v: c }] : [];
  });
  const clustered = rateIntervalMethod([baseline, variant]) === 'case_bootstrap';
  for (const m of COMPARED) {
    const b = baseline.metrics[m];
    const v = variant.metrics[m];
    if (RATES.has(m)) {
      const [k1, n1] = bCounts[m] ?? [0, 0];
      const [k2, n2] = vCounts[m] ?? [0, 0];
      const d =
        n1 === 0 || n2 === 0 || !clustered
          ? wilsonDifference(k1, n1, k2, n2)
          : pairedBootstrap(paired, (sample) => rateOf(sample, 'v', m) - rateOf(sample, 'b', m));
      metrics[m] = { baseline: b, variant: v, diff: v - b, low: d.low, high: d.high };
    } else {
      const ci = pairedBootstrap(
        paired,
        (sample) => variantMetrics(sample.map((p) => p.v))[m] - variantMetrics(sample.map((p) => p.b))[m],
      );
      metrics[m] = { baseline: b, variant: v, diff: v - b, ...ci };
    }
  }
  return { baseline: baseline.name, variant: variant.name, metrics, flipped: flipped(paired) };
}

function flipped(paired: Paired[]): FlippedCase[] {
  const runs = (c: EvalCaseResult) => c.attempts.map((a) => a.run_id).filter(Boolean);
  return paired.flatMap(({ b, v }) => {
    const from = casePassed(b);
    const to = casePassed(v);
    if (from === to) return [];
    return [
      {
        case: b.id,
        from: from ? ('pass' as const) : ('fail' as const),
        to: to ? ('pass' as const) : ('fail' as const),
        baseline_runs: runs(b),
        variant_runs: runs(v),
      },
    ];
  });
}

/** Every variant after the first compared with the first. */
export function comparisons(variants: readonly EvalVariantResult[]): EvalComparison[] {
  const [baseline, ...rest] = variants;
  return baseline ? rest.map((v) => compare(baseline, v)) : [];
}
