import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { api } from './api.js';
import { Code, duration, time } from './format.js';
import './playground.css';

const percent = (v) => (Number.isFinite(v) ? `${Number((100 * v).toFixed(1))} %` : '—');
const number = (digits) => (v) => (Number.isFinite(v) ? String(Number(v.toFixed(digits))) : '—');
const money = (v) => (Number.isFinite(v) ? String(Number(v.toPrecision(6))) : '—');
const signed = (fmt) => (v) =>
  Number.isFinite(v) ? `${v > 0 ? '+' : v < 0 ? '−' : '±'}${fmt(Math.abs(v))}` : '—';

/** The report's metrics (docs/evals.md), in the order the CLI prints them, each with its format. */
const METRICS = [
  ['reach_success', 'Reach success', percent],
  ['tool_selection_accuracy', 'Tool-selection accuracy', percent],
  ['first_try_valid_args', 'First-try valid arguments', percent],
  ['self_healed_args', 'Self-healed arguments', percent],
  ['unknown_tool_calls', 'Unknown-tool calls', number(2)],
  ['forbidden_calls', 'Forbidden calls', number(2)],
  ['task_completion', 'Task completion', percent],
  ['steps_mean', 'Steps (mean)', number(2)],
  ['tokens_total', 'Tokens (total)', number(0)],
  ['cost_total', 'Cost (total)', money],
  ['latency_p50_ms', 'Latency p50', duration],
  ['latency_p95_ms', 'Latency p95', duration],
];
const MORE_IS_BETTER = new Set([
  'reach_success',
  'tool_selection_accuracy',
  'first_try_valid_args',
  'self_healed_args',
  'task_completion',
]);

const evalLink = (id) => `#/evals/${encodeURIComponent(id)}`;
const RunLinks = ({ ids }) =>
  ids.length
    ? ids.map((id) => html`<a class="mono run-link" href=${`#/runs/${encodeURIComponent(id)}`}>${id}</a> `)
    : html`<span class="muted">—</span>`;

/** Stored eval reports, newest first: dataset, when, and each variant's reach success. */
function EvalList() {
  const [list, setList] = useState(undefined);
  const [error, setError] = useState('');
  useEffect(() => {
    api.evals().then(setList, (e) => setError(e.message));
  }, []);
  if (error) return html`<p class="error" role="alert">${error}</p>`;
  if (!list) return html`<p class="muted">Loading…</p>`;
  return html`<section class="evals">
    <h1>Evals</h1>
    <p class="muted">Reports of <code>agent-reach eval</code>, stored by the API (unless <code>--no-upload</code>) as long as runs are kept.</p>
    ${
      list.evals.length === 0
        ? html`<p class="muted">No eval report yet.</p>`
        : html`<div class="table-wrap" tabindex="0" role="region" aria-label="Eval reports"><table class="evals-list">
          <thead><tr><th>Eval</th><th>Dataset</th><th>Started</th><th>Finished</th><th>Reach success by variant</th></tr></thead>
          <tbody>${list.evals.map(
            (e) => html`<tr data-eval=${e.id}>
              <td><a class="mono" href=${evalLink(e.id)}>${e.id}</a></td>
              <td>${e.dataset}</td>
              <td>${time(Date.parse(e.started_at))}</td>
              <td>${time(Date.parse(e.finished_at))}</td>
              <td>${e.variants.map((v) => html`<span class="chip">${v.name} ${percent(v.reach_success)}</span> `)}</td>
            </tr>`,
          )}</tbody>
        </table></div>`
    }
  </section>`;
}

/** The metrics of every variant side by side: a row a metric, a column a variant. */
function SideBySide({ report }) {
  return html`<div class="table-wrap" tabindex="0" role="region" aria-label="Variants side by side"><table class="variants">
    <thead><tr><th>Metric</th>${report.variants.map((v) => html`<th scope="col">${v.name}</th>`)}</tr></thead>
    <tbody>${METRICS.map(
      ([key, label, fmt]) => html`<tr data-metric=${key}>
        <th scope="row">${label}</th>
        ${report.variants.map((v) => html`<td>${fmt(v.metrics[key])}${v.metrics.counts?.[key] ? html` <span class="muted small-text">(${v.metrics.counts[key][0]}/${v.metrics.counts[key][1]})</span>` : null}</td>`)}
      </tr>`,
    )}</tbody>
  </table></div>`;
}

/** What each comparison says of a metric: the difference and its 95 % interval, good or bad. */
function Differences({ report, metric, fmt }) {
  return report.comparisons.map((c) => {
    const m = c.metrics[metric];
    if (!m) return null;
    const interval =
      m.low === null || m.high === null ? '' : ` [${signed(fmt)(m.low)}, ${signed(fmt)(m.high)}]`;
    const sure = m.low !== null && m.high !== null && (m.low > 0 || m.high < 0);
    const better = MORE_IS_BETTER.has(metric) ? m.diff > 0 : m.diff < 0;
    const cls = !sure || m.diff === 0 ? '' : better ? 'better' : 'worse';
    return html`<p class=${`diff small-text ${cls}`}>${c.variant} vs ${c.baseline}: ${signed(fmt)(m.diff)}${interval ? html`<span class="muted">${interval} (95 %)</span>` : null}</p>`;
  });
}

/**
 * One metric's chart: a bar for each variant with its value, on a scale from 0 (rates: to 100 %), sized for
 * a small card so its text stays readable; the differences with their intervals under it.
 */
function MetricChart({ report, metric, label, fmt }) {
  const W = 320;
  const L = 96;
  const H = 22;
  const room = 64;
  const values = report.variants.map((v) => v.metrics[metric]);
  const max = MORE_IS_BETTER.has(metric) ? 1 : Math.max(1e-9, ...values.filter(Number.isFinite));
  const text = `${label}: ${report.variants.map((v, i) => `${v.name} ${fmt(values[i])}`).join('; ')}`;
  return html`<figure class="chart metric-chart" data-chart=${metric}>
    <figcaption>${label}</figcaption>
    <svg viewBox=${`0 0 ${W} ${report.variants.length * H + 4}`} role="img" aria-label=${text}>
      ${report.variants.map((v, i) => {
        const w = ((W - L - room) * Math.max(0, values[i] ?? 0)) / max;
        const y = 2 + i * H;
        return html`<g>
          <text x=${L - 6} y=${y + H - 7} text-anchor="end" class="bar-label">${v.name.length > 12 ? `${v.name.slice(0, 11)}…` : v.name}</text>
          <rect class=${`bar variant-${i % 4}`} x=${L} y=${y + 3} width=${Math.max(values[i] ? 1 : 0, w)} height=${H - 6}><title>${v.name}: ${fmt(values[i])}</title></rect>
          <text x=${L + w + 4} y=${y + H - 7} class="bar-value">${fmt(values[i])}</text>
        </g>`;
      })}
    </svg>
    <${Differences} report=${report} metric=${metric} fmt=${fmt} />
  </figure>`;
}

/** A chart per metric. */
const MetricCharts = ({ report }) =>
  html`<div class="metric-charts">${METRICS.map(([key, label, fmt]) => html`<${MetricChart} report=${report} metric=${key} label=${label} fmt=${fmt} />`)}</div>`;

/** The cases whose outcome changed between a baseline and a variant, each with the runs of both. */
function Flipped({ c }) {
  return html`<div class="comparison" data-variant=${c.variant}>
    <h3>${c.variant} vs ${c.baseline}: ${c.flipped.length} flipped case${c.flipped.length === 1 ? '' : 's'}</h3>
    ${
      c.flipped.length
        ? html`<div class="table-wrap" tabindex="0" role="region" aria-label=${`Cases flipped from ${c.baseline} to ${c.variant}`}><table class="flipped">
          <thead><tr><th>Case</th><th>Outcome</th><th>Runs of ${c.baseline}</th><th>Runs of ${c.variant}</th></tr></thead>
          <tbody>${c.flipped.map(
            (f) => html`<tr data-case=${f.case}>
              <td class="mono">${f.case}</td>
              <td><span class=${`badge ${f.to === 'pass' ? 'status-succeeded' : 'status-failed'}`}>${f.from} → ${f.to}</span></td>
              <td><${RunLinks} ids=${f.baseline_runs} /></td>
              <td><${RunLinks} ids=${f.variant_runs} /></td>
            </tr>`,
          )}</tbody>
        </table></div>`
        : html`<p class="muted">No case changed outcome.</p>`
    }
  </div>`;
}

/** Every case by variant: attempts passed, each attempt's run, and why a failed one failed. */
function Cases({ report }) {
  const ids = [...new Set(report.variants.flatMap((v) => v.cases.map((c) => c.id)))];
  return html`<div class="table-wrap" tabindex="0" role="region" aria-label="Cases by variant"><table class="eval-cases">
    <thead><tr><th>Case</th>${report.variants.map((v) => html`<th scope="col">${v.name}</th>`)}</tr></thead>
    <tbody>${ids.map(
      (id) => html`<tr data-case=${id}>
        <th scope="row" class="mono">${id}</th>
        ${report.variants.map((v) => {
          const attempts = v.cases.find((c) => c.id === id)?.attempts ?? [];
          const passed = attempts.filter((a) => a.passed).length;
          // A case passes on a majority of its attempts (docs/evals.md).
          const verdict = attempts.length > 0 && 2 * passed > attempts.length;
          return html`<td>
            <span class=${`badge ${verdict ? 'status-succeeded' : 'status-failed'}`}>${verdict ? 'pass' : 'fail'}: ${passed}/${attempts.length} attempts</span>
            ${attempts.map(
              (
                a,
              ) => html`<div class="attempt small-text">${a.run_id ? html`<a class="mono run-link" href=${`#/runs/${encodeURIComponent(a.run_id)}`}>${a.run_id}</a>` : null}
                ${a.failures.map((f) => html`<div class="error-line"><span class="mono">${f.check}</span>: ${f.message}</div>`)}</div>`,
            )}
          </td>`;
        })}
      </tr>`,
    )}</tbody>
  </table></div>`;
}

/** One eval: its variants side by side, a chart per metric, the flipped cases linked to their runs. */
function EvalReport({ id }) {
  const [report, setReport] = useState(undefined);
  const [error, setError] = useState('');
  useEffect(() => {
    setReport(undefined);
    api.evalReport(id).then(setReport, (e) => setError(e.message));
  }, [id]);
  if (error) return html`<p class="error" role="alert">${error}</p>`;
  if (!report) return html`<p class="muted">Loading…</p>`;
  return html`<section class="eval">
    <p><a href="#/evals">All evals</a></p>
    <h1>Eval <span class="mono">${report.id}</span></h1>
    <dl class="facts">
      <dt>Dataset</dt><dd>${report.dataset.name} <span class="muted">(${report.dataset.cases} cases)</span></dd>
      <dt>Ran</dt><dd>${time(Date.parse(report.started_at))} → ${time(Date.parse(report.finished_at))}</dd>
      <dt>Repeat</dt><dd>${report.repeat} <span class="muted">× each case, ${report.concurrency} at a time</span></dd>
    </dl>
    <h2>Variants side by side</h2>
    <${SideBySide} report=${report} />
    ${report.variants.map((v) => (Object.keys(v.overrides).length ? html`<details class="summary"><summary>Overrides of ${v.name}</summary><${Code} label=${`Overrides of ${v.name}`} value=${v.overrides} /></details>` : null))}
    <h2>Metrics</h2>
    <${MetricCharts} report=${report} />
    <h2>Flipped cases</h2>
    ${report.comparisons.length ? report.comparisons.map((c) => html`<${Flipped} c=${c} />`) : html`<p class="muted">One variant: nothing to compare.</p>`}
    <h2>Cases</h2>
    <${Cases} report=${report} />
  </section>`;
}

/** The Evals page: the list, or one eval when the address names it (`#/evals/<id>`). */
export const EvalsPage = ({ evalId }) =>
  evalId ? html`<${EvalReport} id=${evalId} />` : html`<${EvalList} />`;
