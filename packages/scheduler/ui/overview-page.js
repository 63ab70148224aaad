import { html } from 'htm/preact';
import { api } from './api.js';
import { duration } from './format.js';
import { usePolled } from './use-polled.js';

const LIVE_MS = 5000;
const OUTCOMES = [
  'succeeded',
  'not_converged',
  'failed',
  'cancelled',
  'running',
  'awaiting_approval',
  'queued',
];

/** Runs per minute, stacked by outcome, as an SVG bar chart with its numbers on hover. */
function RunsPerMinute({ minutes }) {
  const W = 600;
  const H = 140;
  const max = Math.max(1, ...minutes.map((m) => Object.values(m.counts).reduce((a, b) => a + b, 0)));
  const bw = W / minutes.length;
  const seen = OUTCOMES.filter((o) => minutes.some((m) => m.counts[o]));
  const total = minutes.reduce((n, m) => n + Object.values(m.counts).reduce((a, b) => a + b, 0), 0);
  const label = `Runs per minute over the last ${minutes.length} minutes: ${total} runs${seen.length ? `, ${seen.map((o) => `${minutes.reduce((n, m) => n + (m.counts[o] ?? 0), 0)} ${o.replace('_', ' ')}`).join(', ')}` : ''}; at most ${max} in a minute.`;
  return html`<figure class="chart" data-chart="runs-per-minute">
    <figcaption>Runs per minute by outcome <span class="muted">(last ${minutes.length} min)</span></figcaption>
    <svg viewBox=${`0 0 ${W} ${H + 18}`} role="img" aria-label=${label} preserveAspectRatio="none">
      <line class="axis" x1="0" y1=${H} x2=${W} y2=${H} />
      ${minutes.map((m, i) => {
        let y = H;
        return OUTCOMES.filter((o) => m.counts[o]).map((o) => {
          const h = (H * m.counts[o]) / max;
          y -= h;
          return html`<rect class=${`fill-${o}`} x=${i * bw + 1} y=${y} width=${Math.max(1, bw - 2)} height=${h}><title>${new Date(m.at).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' })}: ${m.counts[o]} ${o.replace('_', ' ')}</title></rect>`;
        });
      })}
      <text x="0" y=${H + 14} class="tick">${new Date(minutes[0].at).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' })}</text>
      <text x=${W} y=${H + 14} class="tick" text-anchor="end">now</text>
      <text x="2" y="12" class="tick">${max}</text>
    </svg>
    <div class="legend">${seen.map((o) => html`<span class="key"><span class=${`swatch fill-${o}`}></span>${o.replace('_', ' ')}</span>`)}</div>
  </figure>`;
}

/** Horizontal bars with a label and a value each; `fmt` writes the value. */
function Bars({ title, rows, fmt, cls = '', name }) {
  const max = Math.max(1e-9, ...rows.flatMap((r) => r.values.map((v) => v.value ?? 0)));
  const H = 18;
  const W = 600;
  const L = 170;
  const valueText = (v) => `${v.name ? `${v.name} ` : ''}${fmt(v.value)}`;
  // Room after the longest bar for the longest value ("p95 1 min 12 s"), at about 7 px a character of
  // the 11 px value font: no value is cut at the chart's edge.
  const room = Math.max(
    70,
    8 + 7 * Math.max(0, ...rows.flatMap((r) => r.values.map((v) => valueText(v).length))),
  );
  const height = rows.length * (H * rows[0]?.values.length + 6) + 4;
  let y = 2;
  return html`<figure class="chart" data-chart=${name}>
    <figcaption>${title}</figcaption>
    ${
      rows.length === 0
        ? html`<p class="muted">No data yet.</p>`
        : html`<svg viewBox=${`0 0 ${W} ${height}`} role="img" aria-label=${`${title}: ${rows.map((r) => `${r.label} ${r.values.map((v) => `${v.name ? `${v.name} ` : ''}${fmt(v.value)}`).join(', ')}`).join('; ')}`}>
          ${rows.map((r) => {
            const top = y;
            y += H * r.values.length + 6;
            return html`<g>
              <text x=${L - 6} y=${top + H - 5} text-anchor="end" class="bar-label">${r.label.length > 24 ? `${r.label.slice(0, 23)}…` : r.label}</text>
              ${r.values.map((v, k) => {
                const w = ((W - L - room) * (v.value ?? 0)) / max;
                return html`<g><rect class=${`bar ${cls} ${v.cls ?? ''}`} x=${L} y=${top + k * H + 2} width=${Math.max(v.value ? 1 : 0, w)} height=${H - 4}><title>${r.label} ${v.name ?? ''}: ${fmt(v.value)}</title></rect><text x=${L + w + 4} y=${top + k * H + H - 5} class="bar-value">${valueText(v)}</text></g>`;
              })}
            </g>`;
          })}
        </svg>`
    }
  </figure>`;
}

const stateLabel = (state) => String(state).replace('_', ' ');

/** One list of name and state badge per row; `extra` adds what follows the badge. */
function StateList({ label, rows }) {
  return html`<ul class="breakers" aria-label=${label}>
    ${rows.map(
      (r) =>
        html`<li data-name=${r.name}><span class="tool">${r.name}</span> <span class=${`badge breaker-${r.cls}`}>${r.state}</span>${r.extra ? html` <span class="muted">${r.extra}</span>` : null}</li>`,
    )}
  </ul>`;
}

/**
 * What an MCP server row says beside its badge: executors, tools, restarts, since when it is down, tools
 * refused for a changed digest, its error, and a configuration change it refused (fields an executor
 * does not report are left out).
 */
function serverExtra(s) {
  const parts = [
    `up on ${s.up} of ${s.executors} executor${s.executors === 1 ? '' : 's'}`,
    `${s.tools} tools`,
  ];
  if (typeof s.restarts === 'number') parts.push(`${s.restarts} restarts`);
  if (typeof s.since === 'number' && !s.up)
    parts.push(`down since ${new Date(s.since).toLocaleTimeString()}`);
  if (typeof s.digestsRefused === 'number' && s.digestsRefused > 0)
    parts.push(`${s.digestsRefused} tools refused for a changed digest`);
  if (s.error) parts.push(String(s.error));
  if (s.changeRefused && typeof s.changeRefused === 'object')
    parts.push(`change of version ${s.changeRefused.version} refused: ${s.changeRefused.error}`);
  return parts.join(' · ');
}

/**
 * Tool breakers of the fleet, model provider breakers of this scheduler and the MCP servers the executors
 * report. "Every breaker is closed" only when no tool's and no provider's breaker is open or half-open.
 */
function Breakers({ data }) {
  const providers = data.provider_breakers ?? [];
  const servers = data.mcp_servers ?? [];
  const tripped = [...data.breakers, ...providers].filter((b) => b.state !== 'closed').length;
  // Over the executors that mount it: up on all, on some, or on none (then "starting" when the newest
  // report says it is being started, else down).
  const serverState = (s) =>
    s.up === s.executors ? 'up' : s.up > 0 ? 'partly up' : s.state === 'starting' ? 'starting' : 'down';
  const serverClass = (s) =>
    s.up === s.executors ? 'closed' : s.up > 0 || s.state === 'starting' ? 'half_open' : 'open';
  return html`<figure class="chart" data-chart="breakers">
    <figcaption>Breakers and MCP servers</figcaption>
    ${tripped === 0 ? html`<p class="muted">Every breaker is closed: no tool and no model provider has failed enough to trip one.</p>` : null}
    ${data.breakers.length ? html`<h2>Tools</h2><${StateList} label="Tool breakers" rows=${data.breakers.map((b) => ({ name: b.tool, state: stateLabel(b.state), cls: b.state }))} />` : null}
    ${providers.length ? html`<h2>Model providers</h2><${StateList} label="Model provider breakers" rows=${providers.map((p) => ({ name: p.provider, state: stateLabel(p.state), cls: p.state }))} />` : null}
    ${servers.length ? html`<h2>MCP servers</h2><${StateList} label="MCP servers" rows=${servers.map((s) => ({ name: s.name, state: serverState(s), cls: serverClass(s), extra: serverExtra(s) }))} />` : null}
  </figure>`;
}

const rate = (n, d) => (d ? n / d : 0);
const percent = (x) => `${(100 * x).toFixed(x === 0 || x === 1 ? 0 : 1)} %`;
const ms = (v) => (v === undefined ? '—' : duration(v));

/** The overview: runs per minute, latencies, error rates, breakers and queues, from the platform's data. */
export function OverviewPage() {
  const { data, error } = usePolled(api.overview, LIVE_MS);
  if (error && !data) return html`<p class="error">${error}</p>`;
  if (!data) return html`<p class="muted">Loading…</p>`;
  const latency = [
    {
      label: 'runs',
      values: [
        { name: 'p50', value: data.run_latency.p50_ms },
        { name: 'p95', value: data.run_latency.p95_ms, cls: 'p95' },
      ],
    },
    {
      label: 'tool calls',
      values: [
        { name: 'p50', value: data.tool_latency.p50_ms },
        { name: 'p95', value: data.tool_latency.p95_ms, cls: 'p95' },
      ],
    },
    ...data.tools
      .filter((t) => t.count)
      .map((t) => ({
        label: t.tool,
        values: [
          { name: 'p50', value: t.p50_ms },
          { name: 'p95', value: t.p95_ms, cls: 'p95' },
        ],
      })),
  ];
  return html`<section class="overview">
    <h1>Overview <span class="live" title="refreshed every 5 s">live</span></h1>
    <p class="muted">From the last ${data.runs} runs you can see, the fleet's breakers, model providers, MCP servers and the queues now. A person's rejection is a decision, not an error: it is counted apart.</p>
    ${error ? html`<p class="error">${error}</p>` : null}
    <div class="charts">
      <${RunsPerMinute} minutes=${data.minutes} />
      <${Bars} name="latency" title="Latency p50 / p95 (finished runs, dispatched tool calls)" rows=${latency} fmt=${ms} />
      <${Bars}
        name="tool-errors"
        title="Error rate per tool"
        cls="bad"
        rows=${data.tools.map((t) => ({ label: t.tool, values: [{ value: rate(t.errors, t.calls) }] }))}
        fmt=${percent}
      />
      <${Bars}
        name="agent-errors"
        title="Per agent: runs that did not succeed, tool calls that failed"
        cls="bad"
        rows=${data.agents.map((a) => ({
          label: a.agent,
          values: [
            { name: 'runs', value: rate(a.failed, a.runs) },
            { name: 'calls', value: rate(a.errors, a.calls), cls: 'calls' },
          ],
        }))}
        fmt=${percent}
      />
      <${Breakers} data=${data} />
      <${Bars}
        name="queues"
        title="Queue depths now"
        rows=${data.queues.map((q) => ({
          label: q.group ? `tools: ${q.group}` : 'runs',
          values: [
            { name: 'waiting', value: q.waiting },
            { name: 'active', value: q.active, cls: 'active' },
            { name: 'delayed', value: q.delayed, cls: 'delayed' },
          ],
        }))}
        fmt=${(v) => String(v ?? 0)}
      />
    </div>
  </section>`;
}
