import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { api } from './api.js';
import { time } from './format.js';

const pct = (n, d) => (d === 0 ? '—' : `${((100 * n) / d).toFixed(n === 0 || n === d ? 0 : 1)} %`);

/** Whether an executor can run the tool now; for an MCP tool, its server's state and error. */
function served(t) {
  const server = t.mcp_server;
  if (t.served) return 'yes';
  if (server && server.state !== 'up')
    return html`<span class=${`badge ${server.state === 'down' ? 'status-failed' : 'warn'}`} title=${server.error ?? ''}>server ${server.name} ${server.state}${server.since ? ` since ${time(server.since)}` : ''}</span>${server.error ? html`<div class="muted">${server.error}</div>` : null}`;
  return html`<span class="badge status-failed">no executor</span>`;
}

function ToolRow({ t, s }) {
  return html`<tr data-tool=${t.name}>
    <td><span class="tool">${t.name}</span>${t.requires_confirmation ? html` <span class="badge warn" title="a person approves each call">approval</span>` : null}</td>
    <td>${served(t)}</td>
    <td>${t.group ?? '—'}</td>
    <td><span class=${`badge breaker-${t.breaker.state}`}>${t.breaker.state.replace('_', ' ')}</span>${t.breaker.open_until ? html`<span class="muted"> until ${time(t.breaker.open_until)}</span>` : null}</td>
    <td>${s?.calls ?? 0}</td>
    <td>${s?.errors ?? 0}</td>
    <td>${pct(s?.errors ?? 0, (s?.calls ?? 0) - (s?.rejected ?? 0))}</td>
    <td>${s?.rejected ?? 0}</td>
    <td>${Object.entries(s?.error_kinds ?? {}).map(([k, n]) => html`<span class="chip">${k} ${n}</span>`)}</td>
  </tr>`;
}

/** Agents and the tools they reach: served or not, the fleet's breaker state, recent error rates. */
export function AgentsPage({ agents, reloadAgents }) {
  const [stats, setStats] = useState(undefined);
  useEffect(() => {
    reloadAgents();
    api.toolStats().then(setStats, () => setStats({ runs: 0, tools: [] }));
  }, []);
  const byTool = new Map((stats?.tools ?? []).map((t) => [t.tool, t]));
  return html`<section>
    <h1>Agents and tools</h1>
    <p class="muted">Error rates over the last ${stats?.runs ?? '…'} runs you can see (a call a person rejected is a decision, not a failure: counted apart, left out of the rate); breaker states as the fleet shares them now.</p>
    ${agents.map(
      (a) => html`<div class="agent">
        <h2>${a.name}</h2>
        ${a.description ? html`<p class="muted">${a.description}</p>` : null}
        <div class="table-wrap" tabindex="0" role="region" aria-label=${`Tools of ${a.name}`}><table>
          <thead><tr><th>Tool</th><th>Served</th><th>Group</th><th>Breaker</th><th>Calls</th><th>Errors</th><th>Error rate</th><th title="calls a person rejected: decisions, not failures">Rejected</th><th>Error kinds</th></tr></thead>
          <tbody>${a.tools.map((t) => html`<${ToolRow} t=${t} s=${byTool.get(t.name)} />`)}</tbody>
        </table></div>
      </div>`,
    )}
  </section>`;
}
