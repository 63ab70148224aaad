import {
  RATE_METRIC_NAMES,
  VARIANT_METRIC_NAMES,
  type EvalReport,
  type VariantMetricName,
} from '@agent-reach/protocol';
import { EvalInputError } from './errors.js';
import { formatValue } from './format-text.js';
import { LOWER_IS_BETTER } from './metrics.js';

/** A CI gate: `[VARIANT:]METRIC=VALUE` of `--fail-under` or `--max-regression`. */
export interface Gate {
  kind: 'fail-under' | 'max-regression';
  /** Only this variant; every variant (or every comparison) when absent. */
  variant?: string;
  metric: VariantMetricName;
  value: number;
}

const METRICS: ReadonlySet<string> = new Set(VARIANT_METRIC_NAMES);
const RATES: ReadonlySet<string> = new Set(RATE_METRIC_NAMES);

/** A gate from its flag's text; rates may be written as 0.8 or 80%. */
export function parseGate(kind: Gate['kind'], text: string): Gate {
  const m = /^(?:([A-Za-z0-9_.-]{1,64}):)?([a-z0-9_]+)=(-?\d+(?:\.\d+)?)(%?)$/.exec(text);
  if (!m)
    throw new EvalInputError([
      `--${kind} ${text}: expected [VARIANT:]METRIC=VALUE, e.g. reach_success=0.8 or reach_success=80%`,
    ]);
  const [, variant, metric = '', number = '', percent] = m;
  if (!METRICS.has(metric))
    throw new EvalInputError([
      `--${kind} ${text}: unknown metric "${metric}"; one of ${VARIANT_METRIC_NAMES.join(', ')}`,
    ]);
  if (percent && !RATES.has(metric))
    throw new EvalInputError([`--${kind} ${text}: ${metric} is not a rate; give it without %`]);
  const value = Number(number) / (percent ? 100 : 1);
  return { kind, metric: metric as VariantMetricName, value, ...(variant ? { variant } : {}) };
}

/** What each gate found wrong with the report: one sentence per failure, empty when every gate holds. */
export function gateFailures(report: EvalReport, gates: readonly Gate[]): string[] {
  const failures: string[] = [];
  const names = new Set(report.variants.map((v) => v.name));
  for (const g of gates) {
    if (g.variant && !names.has(g.variant))
      throw new EvalInputError([
        `--${g.kind}: no variant "${g.variant}" in this eval (${[...names].join(', ')})`,
      ]);
    const show = (v: number) => formatValue(g.metric, v);
    if (g.kind === 'fail-under') {
      for (const v of report.variants) {
        if (g.variant && v.name !== g.variant) continue;
        const value = v.metrics[g.metric];
        if (value < g.value)
          failures.push(`${g.metric} of ${v.name} is ${show(value)}, under ${show(g.value)}`);
      }
      continue;
    }
    if (report.comparisons.length === 0)
      throw new EvalInputError([`--max-regression needs two variants or more (a baseline to regress from)`]);
    for (const c of report.comparisons) {
      if (g.variant && c.variant !== g.variant) continue;
      const m = c.metrics[g.metric];
      if (!m) continue;
      const regression = LOWER_IS_BETTER.has(g.metric) ? m.diff : -m.diff;
      if (regression > g.value)
        failures.push(
          `${g.metric} of ${c.variant} regressed by ${show(regression)} from ${c.baseline} (${show(m.baseline)} → ${show(m.variant)}), more than ${show(g.value)}`,
        );
    }
  }
  return failures;
}
