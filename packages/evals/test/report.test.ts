import type { EvalAttempt, EvalReport, EvalVariantResult } from '@agent-reach/protocol';
import { describe, expect, it } from 'vitest';
import {
  comparisons,
  formatJunit,
  formatMarkdown,
  formatTable,
  gateFailures,
  intervalsNote,
  pairedBootstrap,
  parseGate,
  percentile,
  rateIntervalMethod,
  variantMetrics,
  wilson,
  wilsonDifference,
  EvalInputError,
} from '../src/index.js';

function attempt(
  passed: boolean,
  o: Partial<EvalAttempt> & { runId?: string; calls?: [number, number] } = {},
): EvalAttempt {
  const [valid, all] = o.calls ?? [1, 1];
  return {
    run_id: o.runId ?? `run-${Math.random().toString(36).slice(2, 8)}`,
    passed,
    failures: passed ? [] : [{ check: 'answer_contains', message: 'the answer does not contain "x"' }],
    steps: o.steps ?? 2,
    tokens: o.tokens ?? 100,
    cost: 0,
    latency_ms: o.latency_ms ?? 100,
    facts: {
      status: passed ? 'succeeded' : 'failed',
      tools: ['query_weather'],
      tools_selected: passed,
      validatable_calls: all,
      valid_first_try: valid,
      invalid_args: all - valid,
      self_healed: 0,
      unknown_tool_calls: passed ? 0 : 1,
      forbidden_calls: 0,
    },
  };
}

function variant(name: string, passes: boolean[], calls?: [number, number]): EvalVariantResult {
  const cases = passes.map((p, i) => ({
    id: `case-${i}`,
    attempts: [attempt(p, { runId: `${name}-${i}`, ...(calls ? { calls } : {}) })],
  }));
  return { name, overrides: {}, metrics: variantMetrics(cases), cases };
}

/** The variant with each case run `times` times, every attempt of a case alike (`--repeat`). */
function repeated(v: EvalVariantResult, times: number): EvalVariantResult {
  const cases = v.cases.map((c) => ({
    id: c.id,
    attempts: Array.from({ length: times }, (_, r) => ({ ...c.attempts[0]!, run_id: `${c.id}-${r}` })),
  }));
  return { ...v, metrics: variantMetrics(cases), cases };
}

function report(variants: EvalVariantResult[]): EvalReport {
  return {
    id: 'ev_test',
    dataset: { name: 'cities', cases: variants[0]?.cases.length ?? 0 },
    started_at: '2026-01-01T00:00:00.000Z',
    finished_at: '2026-01-01T00:01:00.000Z',
    repeat: variants[0]?.cases[0]?.attempts.length ?? 1,
    concurrency: 4,
    variants,
    comparisons: comparisons(variants),
  };
}

describe('statistics', () => {
  it('gives the Wilson interval of a proportion (textbook values) and [0, 1] without trials', () => {
    const [low, high] = wilson(8, 10);
    expect(low).toBeCloseTo(0.4902, 3);
    expect(high).toBeCloseTo(0.9433, 3);
    expect(wilson(0, 0)).toEqual([0, 1]);
  });

  it("gives Newcombe's interval of a difference of proportions (his worked example 56/70 − 48/80)", () => {
    const d = wilsonDifference(48, 80, 56, 70);
    expect(d.diff).toBeCloseTo(0.2, 6);
    expect(d.low).toBeCloseTo(0.0524, 3);
    expect(d.high).toBeCloseTo(0.3339, 3);
  });

  it('leaves out a bootstrap resample whose statistic is NaN, and gives null when every one is', () => {
    const units = [1, 2, 3, 4];
    expect(pairedBootstrap(units, (s) => Math.max(...s)).high).toBe(4);
    // Every draw holding a 4 is left out: what is left never reaches 4.
    expect(pairedBootstrap(units, (s) => (s.includes(4) ? Number.NaN : Math.max(...s))).high).toBe(3);
    expect(pairedBootstrap(units, () => Number.NaN)).toEqual({ low: null, high: null });
  });

  it('takes nearest-rank percentiles', () => {
    expect(percentile([5, 1, 4, 2, 3], 50)).toBe(3);
    expect(percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 95)).toBe(10);
    expect(percentile([], 50)).toBe(0);
  });
});

describe('variant metrics and comparisons', () => {
  it('computes rates with their counts and totals over attempts', () => {
    const v = variant('a', [true, true, false, true], [3, 4]);
    expect(v.metrics).toMatchObject({
      cases: 4,
      attempts: 4,
      reach_success: 0.75,
      tool_selection_accuracy: 0.75,
      first_try_valid_args: 0.75,
      unknown_tool_calls: 1,
      task_completion: 0.75,
      steps_mean: 2,
      tokens_total: 400,
      counts: { reach_success: [3, 4], first_try_valid_args: [12, 16], self_healed_args: [0, 4] },
    });
  });

  it('compares a variant with the baseline: the difference, its interval and the flipped cases with their runs', () => {
    const r = report([
      variant('baseline', [true, false, false, true]),
      variant('aliases', [true, true, false, false]),
    ]);
    const c = r.comparisons[0]!;
    expect(c.metrics.reach_success).toMatchObject({ baseline: 0.5, variant: 0.5, diff: 0 });
    expect(c.metrics.reach_success!.low).toBeLessThan(0);
    expect(c.metrics.reach_success!.high).toBeGreaterThan(0);
    expect(c.flipped).toEqual([
      {
        case: 'case-1',
        from: 'fail',
        to: 'pass',
        baseline_runs: ['baseline-1'],
        variant_runs: ['aliases-1'],
      },
      {
        case: 'case-3',
        from: 'pass',
        to: 'fail',
        baseline_runs: ['baseline-3'],
        variant_runs: ['aliases-3'],
      },
    ]);
  });

  it("resamples cases for a rate's interval when each case ran more than once: wider than Newcombe's over the attempts counted as independent", () => {
    const passes = (k: number) => Array.from({ length: 10 }, (_, i) => i < k);
    const once = [variant('baseline', passes(5)), variant('aliases', passes(8))];
    const thrice = once.map((v) => repeated(v, 3));
    expect(rateIntervalMethod(once)).toBe('newcombe');
    expect(rateIntervalMethod(thrice)).toBe('case_bootstrap');
    // Every case ran once: Newcombe over the 10 attempts, as before.
    expect(comparisons(once)[0]!.metrics.reach_success).toMatchObject(wilsonDifference(5, 10, 8, 10));
    const clustered = comparisons(thrice)[0]!.metrics.reach_success!;
    expect(clustered.diff).toBeCloseTo(0.3, 12);
    // Three alike attempts of a case tell no more than one: the interval is that of the 10 cases' rates,
    // not Newcombe's over 30 attempts counted as independent, which is narrower.
    const byCase = pairedBootstrap(
      passes(10).map((_, i) => i),
      (s) => s.filter((i) => i < 8).length / s.length - s.filter((i) => i < 5).length / s.length,
    );
    expect({ low: clustered.low, high: clustered.high }).toEqual(byCase);
    const independent = wilsonDifference(15, 30, 24, 30);
    expect(clustered.high! - clustered.low!).toBeGreaterThan(independent.high! - independent.low!);
  });

  it('gives a non-rate metric a bootstrap interval that holds the difference', () => {
    const b = variant('baseline', Array(20).fill(true));
    const v = variant('slow', Array(20).fill(true));
    v.cases.forEach((c, i) => (c.attempts[0]!.steps = 2 + (i % 3)));
    v.metrics = variantMetrics(v.cases);
    const m = comparisons([b, v])[0]!.metrics.steps_mean!;
    expect(m.diff).toBeCloseTo(0.95, 6);
    expect(m.low!).toBeLessThanOrEqual(m.diff);
    expect(m.high!).toBeGreaterThanOrEqual(m.diff);
    expect(m.low!).toBeGreaterThan(0);
  });
});

describe('gates', () => {
  const r = report([
    variant('baseline', [true, true, true, true]),
    variant('candidate', [true, false, false, true]),
  ]);

  it('fails --fail-under for each variant under the value, and passes when all are above', () => {
    expect(gateFailures(r, [parseGate('fail-under', 'reach_success=80%')])).toEqual([
      'reach_success of candidate is 50.0%, under 80.0%',
    ]);
    expect(gateFailures(r, [parseGate('fail-under', 'baseline:reach_success=0.8')])).toEqual([]);
  });

  it('fails --max-regression on a drop of a rate and a rise of a count', () => {
    expect(
      gateFailures(r, [
        parseGate('max-regression', 'reach_success=0.1'),
        parseGate('max-regression', 'unknown_tool_calls=1'),
      ]),
    ).toEqual([
      'reach_success of candidate regressed by 50.0% from baseline (100.0% → 50.0%), more than 10.0%',
      'unknown_tool_calls of candidate regressed by 2 from baseline (0 → 2), more than 1',
    ]);
    expect(gateFailures(r, [parseGate('max-regression', 'reach_success=0.5')])).toEqual([]);
  });

  it('refuses a gate it cannot read, naming the metric or the form expected', () => {
    expect(() => parseGate('fail-under', 'reach=0.8')).toThrow(/unknown metric "reach"/);
    expect(() => parseGate('fail-under', 'reach_success>0.8')).toThrow(/expected \[VARIANT:\]METRIC=VALUE/);
    expect(() => parseGate('fail-under', 'steps_mean=50%')).toThrow(EvalInputError);
    expect(() => gateFailures(r, [parseGate('fail-under', 'nope:reach_success=1')])).toThrow(
      /no variant "nope"/,
    );
  });
});

describe('report formats', () => {
  const r = report([variant('baseline', [true, false]), variant('aliases', [true, true])]);

  it('prints a table with each variant, the difference and its interval, failing and flipped cases', () => {
    const text = formatTable(r);
    expect(text).toMatch(/^metric\s+baseline\s+aliases\s+aliases − baseline \[95% CI\]$/m);
    expect(text).toMatch(
      /^reach_success\s+50\.0% \(1\/2\)\s+100\.0% \(2\/2\)\s+\+50\.0% \[-?[\d.]+%, \+[\d.]+%\]$/m,
    );
    expect(text).toContain(
      'failing cases of baseline:\n  case-1  baseline-1  answer_contains: the answer does not contain "x"',
    );
    expect(text).toContain(
      'flipped cases, baseline → aliases:\n  case-1  fail → pass  runs baseline-1 → aliases-1',
    );
  });

  it('says under the table which intervals the comparisons carry: Newcombe for rates of cases run once, the case bootstrap with --repeat', () => {
    const once =
      "95% intervals: rates by Newcombe's score method over attempts (each case ran once), the other metrics by a paired bootstrap over cases (2000 resamples)";
    const thrice =
      '95% intervals: every metric by a paired bootstrap over cases (2000 resamples), rates included: the attempts of one case are not independent';
    expect(intervalsNote(r)).toBe(once);
    expect(formatTable(r)).toContain(`\n${once}\n`);
    expect(formatMarkdown(r)).toContain(`\n\n${once}\n`);
    const repeatedReport = report(r.variants.map((v) => repeated(v, 3)));
    expect(formatTable(repeatedReport)).toContain(`\n${thrice}\n`);
    expect(formatMarkdown(repeatedReport)).toContain(`\n\n${thrice}\n`);
    expect(intervalsNote(report([r.variants[0]!]))).toBeUndefined();
  });

  it('writes Markdown tables', () => {
    const text = formatMarkdown(r);
    expect(text).toContain('| metric | baseline | aliases | aliases − baseline (95% CI) |');
    expect(text).toContain('| case-1 | fail | pass | baseline-1 | aliases-1 |');
  });

  it('writes JUnit XML: a suite per variant, a failure per failing attempt, text escaped', () => {
    r.variants[0]!.cases[1]!.attempts[0]!.failures = [
      { check: 'answer_contains', message: 'no "<b>" & more' },
    ];
    const xml = formatJunit(r);
    expect(xml).toContain('<testsuites name="eval ev_test" tests="4" failures="1">');
    expect(xml).toContain('<testsuite name="cities.baseline" tests="2" failures="1"');
    expect(xml).toContain(
      '<failure message="answer_contains: no &quot;&lt;b&gt;&quot; &amp; more" type="answer_contains">',
    );
  });
});

describe('report text on a terminal', () => {
  it('shows control characters of run text escaped in the table and Markdown, exact in JSON', () => {
    const r = report([variant('baseline', [false])]);
    r.variants[0]!.cases[0]!.attempts[0]!.failures = [
      { check: 'judge', message: 'score 0 below 0.5: \u001b[2Jgone\u202e' },
    ];
    expect(formatTable(r)).toContain('judge: score 0 below 0.5: \\x1b[2Jgone\\u202e');
    expect(formatTable(r)).not.toContain('\u001b');
    expect(formatMarkdown(r)).toContain('\\x1b[2Jgone\\u202e');
  });
});
