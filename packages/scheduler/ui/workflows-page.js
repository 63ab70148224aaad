import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { api, followWorkflowEvents } from './api.js';
import { Status, duration, time } from './format.js';
import { useFollowed } from './use-followed.js';

const LIVE_MS = 2000;
const PREVIEW_CHARS = 140;
const REFRESH_ON = new Set([
  'node_started',
  'node_finished',
  'watchdog_fired',
  'cancel_requested',
  'workflow_finished',
]);

const workflowHref = (id) => `#/workflows/${encodeURIComponent(id)}`;
const preview = (text) => (text.length > PREVIEW_CHARS ? `${text.slice(0, PREVIEW_CHARS)}…` : text);

/** Workflows newest first, this key's only when it is limited to some agents, kept live. */
export function WorkflowsPage() {
  const [list, setList] = useState(undefined);
  const [error, setError] = useState('');
  useEffect(() => {
    let stop = false;
    const load = () =>
      api.workflows({ limit: '50' }).then(
        (l) => {
          if (stop) return;
          setList(l);
          setError('');
        },
        (e) => {
          if (!stop) setError(e.message);
        },
      );
    void load();
    const timer = setInterval(load, LIVE_MS);
    return () => {
      stop = true;
      clearInterval(timer);
    };
  }, []);
  return html`<section>
    <h1>Workflows <span class="live" title="refreshed every 2 s">live</span></h1>
    ${error ? html`<p class="error">${error}</p>` : null}
    <table class="runs workflows">
      <thead><tr><th>Workflow</th><th>Name</th><th>Status</th><th>Created</th><th>Reason</th></tr></thead>
      <tbody>
        ${(list?.workflows ?? []).map(
          (w) => html`<tr>
            <td><a href=${workflowHref(w.workflow_id)} class="mono">${w.workflow_id}</a></td>
            <td>${w.workflow}</td>
            <td><${Status} status=${w.status} />${w.cancel_requested && w.status === 'running' ? html` <span class="badge warn">cancelling</span>` : null}</td>
            <td>${time(w.created_at)}</td>
            <td>${w.reason ?? ''}</td>
          </tr>`,
        )}
      </tbody>
    </table>
    ${list && list.workflows.length === 0 ? html`<p class="muted">No workflows.</p>` : null}
  </section>`;
}

/** Each node's depth: 0 without dependencies, else one more than its deepest dependency. */
function depths(nodes) {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const memo = new Map();
  const depth = (id, seen) => {
    if (memo.has(id)) return memo.get(id);
    const node = byId.get(id);
    // A cycle or an unknown id cannot come from a loaded workflows file; guard against looping anyway.
    if (!node || seen.has(id)) return 0;
    seen.add(id);
    const d = node.depends_on.length ? 1 + Math.max(...node.depends_on.map((x) => depth(x, seen))) : 0;
    memo.set(id, d);
    return d;
  };
  return new Map(nodes.map((n) => [n.id, depth(n.id, new Set())]));
}

function NodeRow({ n, depth }) {
  return html`<tr data-node=${n.id}>
    <td class="mono">${depth}</td>
    <td class="mono"><b>${n.id}</b></td>
    <td>${n.agent}</td>
    <td class="mono">${n.depends_on.join(', ') || '—'}</td>
    <td><${Status} status=${n.status} />${n.low_confidence ? html` <span class="badge warn" title=${n.reason ?? ''}>low confidence</span>` : null}${n.low_confidence_inputs.length ? html` <span class="badge warn" title="inputs that were low-confidence defaults">inputs: ${n.low_confidence_inputs.join(', ')}</span>` : null}</td>
    <td>${n.run_id ? html`<a class="mono" href=${`#/runs/${encodeURIComponent(n.run_id)}`}>${n.run_id}</a>` : html`<span class="muted">not started</span>`}</td>
    <td class="muted waited">${n.waited_ms !== undefined ? `waited ${duration(n.waited_ms)}` : ''}</td>
    <td class="output" title=${n.output ?? ''}>${n.output !== undefined ? preview(n.output) : ''}${n.reason ? html` <span class="muted">(${n.reason})</span>` : null}</td>
  </tr>`;
}

/** A workflow's events worth a line: watchdog firings, cancellation, the end. */
function WorkflowEvent({ e, start }) {
  const at = html`<span class="at">+${duration(Math.max(0, e.at - start))}</span>`;
  const row = (cls, body) => html`<li class=${`ev ${cls}`}>${at}<div class="ev-body">${body}</div></li>`;
  switch (e.type) {
    case 'watchdog_fired':
      return row(
        'guard',
        html`<b>Watchdog fired</b> on node <span class="mono">${e.node}</span> after ${duration(e.timeout_ms)}: <span class="badge warn">${e.action === 'abort' ? 'abort' : 'default injected'}</span>`,
      );
    case 'cancel_requested':
      return row('decision', html`<b>Cancellation requested</b>`);
    case 'workflow_finished':
      return row(
        'end',
        html`<b>Workflow finished:</b> <${Status} status=${e.outcome.status} /> <span class="muted">${e.outcome.reason}</span>`,
      );
    default:
      return null;
  }
}

/** One workflow: its nodes by depth with their runs, watchdog firings, the abort report, Cancel. */
export function WorkflowPage({ workflowId }) {
  const {
    record: wf,
    events,
    error,
    setError,
    reload,
  } = useFollowed(workflowId, api.workflow, followWorkflowEvents, REFRESH_ON);

  if (error && !wf) return html`<p class="error">${error}</p>`;
  if (!wf) return html`<p class="muted">Loading…</p>`;
  const cancel = () =>
    api.cancelWorkflow(wf.workflow_id).then(
      () => reload(),
      (e) => setError(e.message),
    );
  const depthOf = depths(wf.nodes);
  const nodes = [...wf.nodes].sort((x, y) => depthOf.get(x.id) - depthOf.get(y.id));
  const notable = events.filter(
    (e) => e.type !== 'node_started' && e.type !== 'node_finished' && e.type !== 'workflow_started',
  );
  const start = events[0]?.at ?? wf.created_at;
  return html`<section class="workflow">
    <h1><span class="mono">${wf.workflow_id}</span> <${Status} status=${wf.status} />${wf.status === 'running' && !wf.cancel_requested ? html` <button class="secondary" onClick=${cancel}>Cancel</button>` : null}</h1>
    ${error ? html`<p class="error">${error}</p>` : null}
    <dl class="facts">
      <dt>Workflow</dt><dd>${wf.workflow}</dd>
      <dt>Created</dt><dd>${time(wf.created_at)}</dd>
      <dt>Trace</dt><dd class="mono">${wf.trace_id ?? '—'}</dd>
      ${wf.config_version !== undefined ? html`<dt>Config version</dt><dd>${wf.config_version}</dd>` : null}
      <dt>Finished</dt><dd>${time(wf.finished_at)}</dd>
      ${wf.reason ? html`<dt>Reason</dt><dd>${wf.reason}</dd>` : null}
      ${wf.cancel_requested ? html`<dt>Cancel</dt><dd>requested</dd>` : null}
      ${wf.metadata ? html`<dt>Metadata</dt><dd>${Object.entries(wf.metadata).map(([k, v]) => html`<span class="chip">${k}=${v}</span>`)}</dd>` : null}
    </dl>
    <div class="box"><div class="code-label">Input</div><p>${wf.input}</p></div>
    ${wf.output !== undefined ? html`<div class="box answer"><div class="code-label">Output${wf.low_confidence ? ' (low confidence)' : ''}</div><p>${wf.output}</p></div>` : null}
    ${wf.error ? html`<div class="box warn"><div class="code-label">Error</div><p>${wf.error}</p></div>` : null}
    ${wf.report ? html`<div class="box warn"><div class="code-label">Abort report: ${wf.report.timed_out} timed out after ${duration(wf.report.timeout_ms)}</div><p>${wf.report.text}</p></div>` : null}
    <h2>Nodes</h2>
    <table class="runs nodes">
      <thead><tr><th>Depth</th><th>Node</th><th>Agent</th><th>Depends on</th><th>State</th><th>Run</th><th>Waited</th><th>Output</th></tr></thead>
      <tbody>${nodes.map((n) => html`<${NodeRow} key=${n.id} n=${n} depth=${depthOf.get(n.id)} />`)}</tbody>
    </table>
    <h2>Events</h2>
    ${notable.length ? html`<ol class="timeline">${notable.map((e) => html`<${WorkflowEvent} key=${e.id} e=${e} start=${start} />`)}</ol>` : html`<p class="muted">No watchdog firings or cancellation${wf.status === 'running' ? ' yet' : ''}.</p>`}
  </section>`;
}
