import {
  RATE_METRIC_NAMES,
  VARIANT_METRIC_NAMES,
  type EvalReport,
  type MetricComparison,
  type VariantMetricName,
} from '@agent-reach/protocol';
import { BOOTSTRAP_RESAMPLES } from './constants.js';
import { casePassed, rateIntervalMethod } from './metrics.js';
import { inline } from './terminal.js';

const RATES: ReadonlySet<string> = new Set(RATE_METRIC_NAMES);

/** A metric's value as the reports print it: rates in per cent, counts whole, the rest to 2 places. */
export function formatValue(metric: string, v: number | null): string {
  if (v === null) return '—';
  if (RATES.has(metric)) return `${(v * 100).toFixed(1)}%`;
  if (metric === 'cost_total') return v.toFixed(4);
  return Number.isInteger(v) ? String(v) : v.toFixed(2);
}

function signed(metric: string, v: number | null): string {
  const text = formatValue(metric, v);
  return v !== null && v > 0 ? `+${text}` : text;
}

/** A difference with its interval: `+20.0% [+3.1%, +36.9%]`. */
export function formatDiff(metric: string, c: MetricComparison): string {
  const ci =
    c.low === null || c.high === null ? '' : ` [${signed(metric, c.low)}, ${signed(metric, c.high)}]`;
  return `${signed(metric, c.diff)}${ci}`;
}

/** Which 95 % intervals the report's comparisons carry (docs/evals.md#comparisons); none without one. */
export function intervalsNote(report: EvalReport): string | undefined {
  if (report.comparisons.length === 0) return undefined;
  const bootstrap = `a paired bootstrap over cases (${BOOTSTRAP_RESAMPLES} resamples)`;
  return rateIntervalMethod(report.variants) === 'case_bootstrap'
    ? `95% intervals: every metric by ${bootstrap}, rates included: the attempts of one case are not independent`
    : `95% intervals: rates by Newcombe's score method over attempts (each case ran once), the other metrics by ${bootstrap}`;
}

/** A rate with its counts where it has them: `80.0% (24/30)`. */
function cell(report: EvalReport, v: number, metric: VariantMetricName): string {
  const counts = report.variants[v]?.metrics.counts?.[metric];
  const value = formatValue(metric, report.variants[v]?.metrics[metric] ?? null);
  return counts ? `${value} (${counts[0]}/${counts[1]})` : value;
}

function table(rows: string[][]): string[] {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
  return rows.map((r) =>
    r
      .map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0)))
      .join('  ')
      .trimEnd(),
  );
}

/** The report as terminal text: metrics per variant side by side, comparisons, failing and flipped cases. */
export function formatTable(report: EvalReport): string {
  const out: string[] = [
    inline(
      `eval ${report.id}: dataset ${report.dataset.name}, ${report.dataset.cases} cases × ${report.repeat}, concurrency ${report.concurrency}`,
    ),
    '',
  ];
  const header = [
    'metric',
    ...report.variants.map((v) => v.name),
    ...report.comparisons.map((c) => `${c.variant} − ${c.baseline} [95% CI]`),
  ];
  const rows = VARIANT_METRIC_NAMES.map((m) => [
    m,
    ...report.variants.map((_, i) => cell(report, i, m)),
    ...report.comparisons.map((c) => (c.metrics[m] ? formatDiff(m, c.metrics[m]) : '')),
  ]);
  out.push(...table([header, ...rows]));
  const note = intervalsNote(report);
  if (note) out.push(note);
  for (const v of report.variants) {
    const failing = v.cases.filter((c) => !casePassed(c));
    if (failing.length === 0) continue;
    out.push('', inline(`failing cases of ${v.name}:`));
    for (const c of failing) {
      const last = c.attempts.find((a) => !a.passed);
      const why = last?.failures.map((f) => `${f.check}: ${f.message}`).join('; ') ?? '';
      out.push(inline(`  ${c.id}  ${last?.run_id ?? ''}  ${why}`.trimEnd()));
    }
  }
  for (const c of report.comparisons) {
    if (c.flipped.length === 0) continue;
    out.push('', inline(`flipped cases, ${c.baseline} → ${c.variant}:`));
    for (const f of c.flipped)
      out.push(
        inline(
          `  ${f.case}  ${f.from} → ${f.to}  runs ${f.baseline_runs.join(',') || '—'} → ${f.variant_runs.join(',') || '—'}`,
        ),
      );
  }
  return out.join('\n');
}

const md = (s: string) => inline(s.replace(/\|/g, '\\|').replace(/\n/g, ' '));

/** The report as Markdown (a CI job summary, a pull request comment). */
export function formatMarkdown(report: EvalReport): string {
  const out: string[] = [
    `# Eval ${md(report.id)}: ${md(report.dataset.name)}`,
    '',
    `${report.dataset.cases} cases × ${report.repeat} repeat(s), concurrency ${report.concurrency}, ${report.started_at} → ${report.finished_at}`,
    '',
  ];
  const header = [
    'metric',
    ...report.variants.map((v) => md(v.name)),
    ...report.comparisons.map((c) => `${md(c.variant)} − ${md(c.baseline)} (95% CI)`),
  ];
  out.push(
    `| ${header.join(' | ')} |`,
    `|${header.map((_, i) => (i === 0 ? ' --- ' : ' ---: ')).join('|')}|`,
  );
  for (const m of VARIANT_METRIC_NAMES)
    out.push(
      `| ${[
        m,
        ...report.variants.map((_, i) => cell(report, i, m)),
        ...report.comparisons.map((c) => (c.metrics[m] ? formatDiff(m, c.metrics[m]) : '')),
      ].join(' | ')} |`,
    );
  const note = intervalsNote(report);
  if (note) out.push('', note);
  for (const c of report.comparisons) {
    if (c.flipped.length === 0) continue;
    out.push(
      '',
      `## Flipped cases, ${md(c.baseline)} → ${md(c.variant)}`,
      '',
      '| case | from | to | baseline runs | variant runs |',
      '| --- | --- | --- | --- | --- |',
    );
    for (const f of c.flipped)
      out.push(
        `| ${md(f.case)} | ${f.from} | ${f.to} | ${f.baseline_runs.join(', ')} | ${f.variant_runs.join(', ')} |`,
      );
  }
  for (const v of report.variants) {
    const failing = v.cases.filter((c) => !casePassed(c));
    if (failing.length === 0) continue;
    out.push('', `## Failing cases of ${md(v.name)}`, '', '| case | run | failures |', '| --- | --- | --- |');
    for (const c of failing) {
      const a = c.attempts.find((x) => !x.passed);
      out.push(
        `| ${md(c.id)} | ${a?.run_id ?? ''} | ${md(a?.failures.map((f) => `${f.check}: ${f.message}`).join('; ') ?? '')} |`,
      );
    }
  }
  return `${out.join('\n')}\n`;
}
