import { html } from 'htm/preact';
import { api, followWorkflowEvents } from './api.js';
import { Prose, Reason, Status, When, duration, time, useNow } from './format.js';
import { useFollowed } from './use-followed.js';
import { usePolled } from './use-polled.js';
import { AxisTrack } from './waterfall.js';
import { CallbackBox } from './callback-box.js';

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
  const { data: list, error } = usePolled(() => api.workflows({ limit: '50' }), LIVE_MS);
  return html`<section>
    <h1>Workflows <span class="live" title="refreshed every 2 s">live</span></h1>
    ${error ? html`<p class="error">${error}</p>` : null}
    <div class="table-wrap" tabindex="0" role="region" aria-label="Workflows"><table class="runs workflows">
      <thead><tr><th scope="col">Workflow</th><th scope="col">Name</th><th scope="col">Status</th><th scope="col">Created</th><th scope="col">Duration</th><th scope="col">Reason</th></tr></thead>
      <tbody>
        ${(list?.workflows ?? []).map(
          (w) => html`<tr>
            <td><a href=${workflowHref(w.workflow_id)} class="mono">${w.workflow_id}</a></td>
            <td>${w.workflow}</td>
            <td><${Status} status=${w.status} />${w.cancel_requested && w.status === 'running' ? html` <span class="badge warn">cancelling</span>` : null}</td>
            <td><${When} ms=${w.created_at} /></td>
            <td>${w.finished_at ? duration(w.finished_at - w.created_at) : html`<span class="muted">running</span>`}</td>
            <td><${Reason} code=${w.reason} /></td>
          </tr>`,
        )}
      </tbody>
    </table></div>
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

/** What the watchdog did to a node, from the workflow's events. */
function WatchdogMark({ fired }) {
  if (!fired) return null;
  const text =
    fired.action === 'abort'
      ? `watchdog aborted the workflow after ${duration(fired.timeout_ms)}${fired.run_id ? ' and cancelled its run' : ''}`
      : `watchdog injected the default after ${duration(fired.timeout_ms)}${fired.run_id ? ' and cancelled its run' : ''}`;
  return html` <span class="badge warn watchdog" title=${text}>${text}</span>`;
}

/**
 * When a node's run began and ended as the page draws it: a node still running ends now; one the
 * workflow left without a finish of its own (cancelled, aborted) ends when the workflow did.
 */
function nodeSpan(n, wf, now) {
  const began = n.started_at;
  const ended = n.finished_at ?? (n.status === 'running' ? now : (wf.finished_at ?? now));
  return { began, ended };
}

/** The Ran cell: what the node's bar shows, in words ("running" while it runs). */
function ranText(n, wf, now) {
  const { began, ended } = nodeSpan(n, wf, now);
  if (began === undefined) return '';
  if (n.finished_at === undefined && n.status === 'running') return 'running';
  return `ran ${duration(Math.max(0, ended - began))}`;
}

function NodeRow({ n, depth, fired, wf, now }) {
  return html`<tr data-node=${n.id}>
    <td class="mono">${depth}</td>
    <td class="mono"><b>${n.id}</b></td>
    <td>${n.agent}</td>
    <td class="mono">${n.depends_on.join(', ') || '—'}</td>
    <td><${Status} status=${n.status} /><${WatchdogMark} fired=${fired} />${n.low_confidence ? html` <span class="badge warn" title=${n.reason ?? ''}>low confidence</span>` : null}${n.low_confidence_inputs.length ? html` <span class="badge warn" title="inputs that were low-confidence defaults">inputs: ${n.low_confidence_inputs.join(', ')}</span>` : null}</td>
    <td>${n.run_id ? html`<a class="mono" href=${`#/runs/${encodeURIComponent(n.run_id)}`}>${n.run_id}</a>` : html`<span class="muted">not started</span>`}</td>
    <td class="muted waited">${n.waited_ms !== undefined ? `waited ${duration(n.waited_ms)}` : ''}</td>
    <td class="ran">${ranText(n, wf, now)}</td>
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

const pctOf = (x) => `${Math.max(0, Math.min(100, x)).toFixed(3)}%`;

/**
 * Each node on the workflow's time axis: the wait for its dependencies, then its run (to now while it
 * runs), and the moment the watchdog fired on it.
 */
function NodeTimeline({ wf, nodes, fired, now }) {
  const start = wf.created_at;
  const end = Math.max(
    wf.finished_at ?? now,
    ...nodes.map((n) => n.finished_at ?? n.started_at ?? start),
    ...[...fired.values()].map((e) => e.at),
  );
  const total = Math.max(1, end - start);
  const x = (t) => (100 * (t - start)) / total;
  return html`<div class="waterfall nodes-timeline" role="table" aria-labelledby="node-timeline-title">
    <div class="wf-row wf-axis" role="row">
      <div class="wf-label" role="columnheader">Node</div>
      <${AxisTrack} total=${total} />
    </div>
    ${nodes.map((n) => {
      const { began, ended } = nodeSpan(n, wf, now);
      const w = fired.get(n.id);
      const text = `${n.id}: ${began === undefined ? 'not started' : `waited ${duration(began - start)}, ran ${duration(ended - began)}`} (${n.status})${w ? `, watchdog fired at +${duration(w.at - start)} (${w.action})` : ''}`;
      return html`<div class="wf-row" role="row" data-node=${n.id} key=${n.id}>
        <div class="wf-label" role="rowheader"><span class="wf-name mono">${n.id}</span> <span class="muted">${began !== undefined ? duration(ended - began) : ''}</span></div>
        <div class="wf-track" role="cell" aria-label=${text} title=${text}>
          ${began !== undefined ? html`<span class="wf-bar waited" style=${{ left: pctOf(0), width: pctOf(x(began)) }}></span>` : null}
          ${began !== undefined ? html`<span class=${`wf-bar node-${n.status}`} style=${{ left: pctOf(x(began)), width: pctOf(Math.max(0.4, x(ended) - x(began))) }}></span>` : null}
          ${w ? html`<span class="wf-mark watchdog" style=${{ left: pctOf(x(w.at)) }}></span>` : null}
        </div>
      </div>`;
    })}
  </div>`;
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

  const now = useNow(wf !== undefined && wf.status === 'running');
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
  const fired = new Map(events.filter((e) => e.type === 'watchdog_fired').map((e) => [e.node, e]));
  return html`<section class="workflow">
    <h1><span class="mono">${wf.workflow_id}</span> <${Status} status=${wf.status} />${wf.status === 'running' && !wf.cancel_requested ? html` <button class="secondary" onClick=${cancel}>Cancel</button>` : null}</h1>
    ${error ? html`<p class="error">${error}</p>` : null}
    <dl class="facts">
      <dt>Workflow</dt><dd>${wf.workflow}</dd>
      <dt>Created</dt><dd>${time(wf.created_at)}</dd>
      <dt>Trace</dt><dd class="mono">${wf.trace_id ?? '—'}</dd>
      ${wf.config_version !== undefined ? html`<dt>Config version</dt><dd>${wf.config_version}</dd>` : null}
      <dt>Finished</dt><dd>${time(wf.finished_at)}</dd>
      ${wf.finished_at ? html`<dt>Duration</dt><dd>${duration(wf.finished_at - wf.created_at)}</dd>` : null}
      ${wf.reason ? html`<dt>Reason</dt><dd><${Reason} code=${wf.reason} /> <span class="mono muted">${wf.reason}</span></dd>` : null}
      ${wf.cancel_requested ? html`<dt>Cancel</dt><dd>requested</dd>` : null}
      ${wf.metadata ? html`<dt>Metadata</dt><dd>${Object.entries(wf.metadata).map(([k, v]) => html`<span class="chip">${k}=${v}</span>`)}</dd>` : null}
    </dl>
    <${CallbackBox} callback=${wf.callback} />
    <div class="box"><div class="code-label">Input</div><${Prose} text=${wf.input} /></div>
    ${wf.output !== undefined ? html`<div class="box answer"><div class="code-label">Output${wf.low_confidence ? ' (low confidence)' : ''}</div><${Prose} text=${wf.output} /></div>` : null}
    ${wf.error ? html`<div class="box warn"><div class="code-label">Error</div><div class="text">${wf.error}</div></div>` : null}
    ${wf.report ? html`<div class="box warn"><div class="code-label">Abort report: ${wf.report.timed_out} timed out after ${duration(wf.report.timeout_ms)}</div><div class="text">${wf.report.text}</div></div>` : null}
    <h2>Nodes</h2>
    <div class="table-wrap" tabindex="0" role="region" aria-label="Nodes"><table class="runs nodes">
      <thead><tr><th>Depth</th><th>Node</th><th>Agent</th><th>Depends on</th><th>State</th><th>Run</th><th>Waited</th><th>Ran</th><th>Output</th></tr></thead>
      <tbody>${nodes.map((n) => html`<${NodeRow} key=${n.id} n=${n} wf=${wf} now=${now} depth=${depthOf.get(n.id)} fired=${fired.get(n.id)} />`)}</tbody>
    </table></div>
    <h2 id="node-timeline-title">Node timeline</h2>
    <${NodeTimeline} wf=${wf} nodes=${nodes} fired=${fired} now=${now} />
    <h2>Events</h2>
    ${notable.length ? html`<ol class="timeline">${notable.map((e) => html`<${WorkflowEvent} key=${e.id} e=${e} start=${start} />`)}</ol>` : html`<p class="muted">No watchdog firings or cancellation${wf.status === 'running' ? ' yet' : ''}.</p>`}
  </section>`;
}
