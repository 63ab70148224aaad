import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { api } from './api.js';
// The one list of statuses, from the wire contract's source (bundled: no runtime dependency).
import { RUN_STATUSES } from '../../protocol/src/run-status.ts';
import { Reason, Status, When, duration, isFinal, runDuration, useNow } from './format.js';

const EMPTY = {
  agent: '',
  status: '',
  metadata: '',
  trace_id: '',
  tool: '',
  error_kind: '',
  since: '',
  until: '',
};
const LIVE_MS = 2000;
/** The columns of the runs list, each with its share of the width (styles.css: `.runs.list .col-…`). */
const RUN_COLUMNS = [
  'run',
  'agent',
  'status',
  'input',
  'created',
  'duration',
  'turns',
  'calls',
  'reason',
  'metadata',
];

/** The query of a filter form: empty fields left out, times as epoch ms. */
function queryOf(filters, cursor) {
  const q = { limit: '25' };
  for (const [k, v] of Object.entries(filters)) {
    if (!v.trim()) continue;
    q[k] = k === 'since' || k === 'until' ? String(new Date(v).getTime()) : v.trim();
  }
  if (cursor) q.cursor = cursor;
  return q;
}

/** A run that ended well although some of its calls failed or were refused. */
const troubled = (r) => r.status === 'succeeded' && (r.errors ?? 0) > 0;

/** Calls, errors and retries of a run, when its listing has them (older records do not). */
function Counts({ r }) {
  if (r.calls === undefined) return html`<span class="muted">—</span>`;
  return html`<span class="counts" aria-label=${`${r.calls} calls, ${r.errors} errors, ${r.retries} retries`}>
    <span title="tool calls">${r.calls}</span>${' / '}<span class=${r.errors ? 'error' : 'muted'} title="calls that failed or were refused">${r.errors} err</span>${' / '}<span class=${r.retries ? 'warn-text' : 'muted'} title="retries the executors made">${r.retries} retr</span>
  </span>`;
}

function RunRow({ r, now }) {
  return html`<tr class=${troubled(r) ? 'troubled' : ''}>
    <td class="run-id"><a href=${`#/runs/${encodeURIComponent(r.run_id)}`} class="mono" title=${r.run_id}>${r.run_id}</a></td>
    <td>${r.agent}</td>
    <td class="status-cell"><${Status} status=${r.status} />${troubled(r) ? html` <span class="badge warn mark" role="img" aria-label=${`succeeded with ${r.errors} failed or refused call${r.errors === 1 ? '' : 's'}`} title=${`${r.errors} call${r.errors === 1 ? '' : 's'} failed or refused`}>⚠ ${r.errors}</span>` : null}</td>
    <td class="input-preview" title=${r.input_preview ?? ''}>${r.input_preview ?? ''}</td>
    <td><${When} ms=${r.created_at} now=${now} /></td>
    <td class="duration">${duration(runDuration(r, now))}${isFinal(r.status) ? null : html`<span class="muted"> …</span>`}</td>
    <td>${r.iterations}</td>
    <td><${Counts} r=${r} /></td>
    <td><${Reason} code=${r.reason} /></td>
    <td class="meta">${Object.entries(r.metadata ?? {}).map(([k, v]) => html`<span class="chip">${k}=${v}</span>`)}</td>
  </tr>`;
}

/** Runs newest first: filters, cursor pages (fast at any depth), the first page kept live. */
export function RunsPage({ agents }) {
  const [form, setForm] = useState(EMPTY);
  const [filters, setFilters] = useState(EMPTY);
  const [cursors, setCursors] = useState([undefined]);
  const [page, setPage] = useState(undefined);
  const [error, setError] = useState('');
  const cursor = cursors[cursors.length - 1];

  useEffect(() => {
    let stop = false;
    const load = () =>
      api
        .runs(queryOf(filters, cursor))
        .then((p) => {
          if (stop) return;
          setPage(p);
          setError('');
        })
        .catch((e) => {
          if (!stop) setError(e.message);
        });
    void load();
    // Only the first page follows new runs; older pages stay where the reader put them.
    const timer = cursor ? undefined : setInterval(load, LIVE_MS);
    return () => {
      stop = true;
      clearInterval(timer);
    };
  }, [filters, cursor]);

  const set = (name) => (e) => setForm({ ...form, [name]: e.currentTarget.value });
  const field = (name, label, placeholder = '') =>
    html`<label>${label}<input name=${name} value=${form[name]} placeholder=${placeholder} onInput=${set(name)} /></label>`;
  const apply = (e) => {
    e.preventDefault();
    setFilters(form);
    setCursors([undefined]);
  };
  const clear = () => {
    setForm(EMPTY);
    setFilters(EMPTY);
    setCursors([undefined]);
  };

  const runs = page?.runs ?? [];
  const now = useNow(runs.some((r) => !isFinal(r.status)));
  return html`
    <section>
      <h1>Runs ${cursor ? null : html`<span class="live" title="refreshed every 2 s">live</span>`}</h1>
      <form class="filters" onSubmit=${apply}>
        <label>Agent<select name="agent" value=${form.agent} onChange=${set('agent')}>
          <option value="">any</option>${agents.map((a) => html`<option value=${a.name}>${a.name}</option>`)}
        </select></label>
        <label>Status<select name="status" value=${form.status} onChange=${set('status')}>
          <option value="">any</option>${RUN_STATUSES.map((s) => html`<option value=${s}>${s}</option>`)}
        </select></label>
        ${field('metadata', 'Metadata', 'user_id=42')}
        ${field('trace_id', 'Trace id')}
        ${field('tool', 'Tool called')}
        ${field('error_kind', 'Error kind', 'timeout')}
        <label>Since<input type="datetime-local" name="since" value=${form.since} onInput=${set('since')} /></label>
        <label>Until<input type="datetime-local" name="until" value=${form.until} onInput=${set('until')} /></label>
        <div class="filter-actions">
          <button type="submit">Filter</button>
          <button type="button" class="secondary" onClick=${clear}>Clear</button>
        </div>
      </form>
      ${error ? html`<p class="error">${error}</p>` : null}
      <div class="table-wrap" tabindex="0" role="region" aria-label="Runs">
      <table class="runs list">
        <caption class="sr-only">Runs, newest first</caption>
        <colgroup>${RUN_COLUMNS.map((c) => html`<col class=${`col-${c}`} />`)}</colgroup>
        <thead><tr><th scope="col">Run</th><th scope="col">Agent</th><th scope="col">Status</th><th scope="col">Input</th><th scope="col">Created</th><th scope="col">Duration</th><th scope="col">Turns</th><th scope="col" title="tool calls / errors / retries">Calls</th><th scope="col">Reason</th><th scope="col">Metadata</th></tr></thead>
        <tbody>
          ${runs.map((r) => html`<${RunRow} key=${r.run_id} r=${r} now=${now} />`)}
        </tbody>
      </table>
      </div>
      ${page && page.runs.length === 0 ? html`<p class="muted">No runs ${page.next_cursor ? 'in this slice of the index: try Older' : 'match'}.</p>` : null}
      <div class="pager">
        <button class="secondary" disabled=${cursors.length < 2} onClick=${() => setCursors(cursors.slice(0, -1))}>← Newer</button>
        <button class="secondary" disabled=${!page?.next_cursor} onClick=${() => setCursors([...cursors, page.next_cursor])}>Older →</button>
      </div>
    </section>`;
}
