import { html } from 'htm/preact';
import { api, followEvents } from './api.js';
import { Code, Kind, Status, duration, time } from './format.js';
import { Approvals } from './approvals.js';
import { useFollowed } from './use-followed.js';

/** One tool call: a line that opens to its arguments and the result exactly as the model saw it. */
function ToolCall({ e }) {
  const kind = e.kind ?? (e.ok ? 'ok' : 'error');
  const retries = e.attempts > 1 ? `, ${e.attempts - 1} retr${e.attempts === 2 ? 'y' : 'ies'}` : '';
  const breaker = e.error?.kind === 'circuit_open';
  return html`<details class="call" data-call=${e.tool_call_id}>
    <summary>
      <span class="tool">${e.tool}</span> <${Kind} kind=${kind} answered=${e.answered} />
      ${breaker ? html` <span class="badge breaker">breaker open</span>` : null}
      <span class="muted"> ${duration(e.duration_ms)}, ${e.attempts} attempt${e.attempts === 1 ? '' : 's'}${retries}</span>
      ${e.executor_id ? html`<span class="muted mono"> on ${e.executor_id}</span>` : null}
      ${e.truncated ? html` <span class="badge warn">truncated</span>` : null}
    </summary>
    <div class="call-body">
      <${Code} label="Arguments (as the model sent them)" value=${e.arguments} />
      ${
        e.result !== undefined
          ? html`<${Code} label="Result (as the model saw it)" value=${e.result} />`
          : e.error
            ? html`<${Code} label="Error" value=${e.error} />`
            : null
      }
    </div>
  </details>`;
}

function Summary({ label, value }) {
  return value
    ? html`<details class="summary"><summary>${label}</summary><${Code} label="" value=${value} /></details>`
    : null;
}

/** One event of the timeline. */
function Event({ e, start }) {
  const at = html`<span class="at">+${duration(Math.max(0, e.at - start))}</span>`;
  const row = (cls, body) => html`<li class=${`ev ${cls}`}>${at}<div class="ev-body">${body}</div></li>`;
  switch (e.type) {
    case 'run_started':
      return row(
        'start',
        html`<b>Run started</b> <span class="muted">agent ${e.agent}, model ${e.model}</span>`,
      );
    case 'topic':
      return row(
        'guard',
        html`<b>Off topic</b> <span class="badge warn">${e.action}</span> <span class="muted">score ${e.score}${e.best ? ` (best: ${e.best})` : ''}; topics: ${e.topics.join(', ')}</span>`,
      );
    case 'context':
      return row(
        'calls',
        html`<b>Context</b> ${e.providers.map((p) => html`<span class="tool">${p.tool}</span> <span class="muted">${p.ok ? `${p.chars} chars attached` : `failed${p.required ? ' (required)' : ', skipped'}`}</span> `)}`,
      );
    case 'plan':
      return row(
        'plan',
        html`<b>Plan</b> ${
          e.steps.length
            ? html`<ol>${e.steps.map((s) => html`<li>${s.title}${s.tool ? html` <span class="muted">(${s.tool})</span>` : null}</li>`)}</ol>`
            : html`<span class="muted">none${e.error ? ` (${e.error})` : ''}</span>`
        }`,
      );
    case 'llm_request':
      return row(
        'turn',
        html`<div><b>Model turn ${e.turn}</b> <span class="muted">${e.model} · ${duration(e.latency_ms)} · ${e.prompt_tokens} in / ${e.completion_tokens} out tokens · ${e.finish_reason}${e.tool_calls ? ` · ${e.tool_calls} tool call${e.tool_calls === 1 ? '' : 's'}` : ''}</span></div>
        ${e.reasoning ? html`<details class="reasoning"><summary>Reasoning</summary><p>${e.reasoning}</p></details>` : null}
        ${e.message?.content ? html`<p class="said">${e.message.content}</p>` : null}`,
      );
    case 'llm_error':
      return row(
        'bad',
        html`<b>Model turn ${e.turn} failed</b> <span class="muted">${duration(e.latency_ms)}</span> ${e.message}`,
      );
    case 'tool_dispatched':
      return row('calls', html`<span class="muted">Calls: ${e.calls.map((c) => c.tool).join(', ')}</span>`);
    case 'tool_result':
      return row('result', html`<${ToolCall} e=${e} />`);
    case 'step_done':
      return row('step', html`<span class="muted">Step done: ${e.step.title}</span>`);
    case 'approval_requested':
      return row(
        'decision',
        html`<b>Approval requested</b> for <span class="tool">${e.tool}</span> <span class="mono muted">${e.arguments}</span>`,
      );
    case 'approval_decided':
      return row(
        'decision',
        html`<b>${e.decision === 'approved' ? 'Approved' : 'Rejected'}</b> <span class="tool">${e.tool}</span>${e.by ? ` by ${e.by}` : ''}${e.reason ? `: ${e.reason}` : ''}`,
      );
    case 'guard':
      return row(
        'guard',
        html`<b>Guard ${e.guard}</b> <span class="badge warn">${e.action}</span> ${e.report}`,
      );
    case 'compaction':
      return row(
        'compaction',
        html`<div><b>Compaction</b> <span class="muted">${e.before_tokens} → ${e.after_tokens} tokens · ${e.folded_messages} messages, ${e.folded_turns} turns folded${e.folded_digest ? ` · sha256 ${e.folded_digest.slice(0, 12)}…` : ''}</span></div>
        <${Summary} label="Summary before" value=${e.summary_before} />
        <${Summary} label="Summary after" value=${e.summary} />`,
      );
    case 'run_finished':
      return row(
        'end',
        html`<b>Run finished:</b> <${Status} status=${e.outcome.status} /> <span class="muted">${e.outcome.reason}</span>`,
      );
    default:
      return row('other', html`<span class="muted">${e.type}</span>`);
  }
}

/** The task stack as it evolved: planned steps, and when each was ticked off. */
function TaskStack({ events }) {
  const steps = [];
  for (const e of events) {
    if (e.type === 'plan')
      for (const s of e.steps) steps.push({ title: s.title, tool: s.tool, doneAt: undefined });
    if (e.type === 'step_done') {
      const s = steps.find((x) => x.title === e.step.title && !x.doneAt);
      if (s) s.doneAt = e.at;
    }
  }
  if (steps.length === 0) return html`<p class="muted">No plan.</p>`;
  return html`<ol class="stack">${steps.map((s) => html`<li class=${s.doneAt ? 'done' : ''}>${s.doneAt ? '✓ ' : '○ '}${s.title}${s.tool ? html` <span class="muted">(${s.tool})</span>` : null}</li>`)}</ol>`;
}

const REFRESH_ON = new Set([
  'approval_requested',
  'approval_decided',
  'run_finished',
  'tool_result',
  'llm_request',
]);

/** One run: its outcome, pending approvals, task stack and a live timeline of everything it did. */
export function RunPage({ runId }) {
  const { record: run, events, error, reload } = useFollowed(runId, api.run, followEvents, REFRESH_ON);

  if (error && !run) return html`<p class="error">${error}</p>`;
  if (!run) return html`<p class="muted">Loading…</p>`;
  const start = events[0]?.at ?? run.created_at;
  const pending = run.pending_approvals.map((a) => ({ ...a, run_id: run.run_id, agent: run.agent }));
  return html`<section class="run">
    <h1><span class="mono">${run.run_id}</span> <${Status} status=${run.status} /></h1>
    <dl class="facts">
      <dt>Agent</dt><dd>${run.agent}</dd>
      <dt>Created</dt><dd>${time(run.created_at)}</dd>
      <dt>Trace</dt><dd class="mono">${run.trace_id ?? '—'}</dd>
      <dt>Turns</dt><dd>${run.iterations}</dd>
      <dt>Tokens</dt><dd>${run.usage.prompt_tokens} in / ${run.usage.completion_tokens} out</dd>
      ${run.reason ? html`<dt>Reason</dt><dd>${run.reason}</dd>` : null}
      ${run.metadata ? html`<dt>Metadata</dt><dd>${Object.entries(run.metadata).map(([k, v]) => html`<span class="chip">${k}=${v}</span>`)}</dd>` : null}
    </dl>
    ${run.input ? html`<div class="box"><div class="code-label">Input</div><p>${run.input}</p></div>` : null}
    ${run.answer ? html`<div class="box answer"><div class="code-label">Answer</div><p>${run.answer}</p></div>` : null}
    ${run.report ? html`<div class="box warn"><div class="code-label">Report</div><p>${run.report}</p></div>` : null}
    ${pending.length ? html`<h2>Waiting for a decision</h2><${Approvals} items=${pending} onDecided=${reload} />` : null}
    <div class="columns">
      <div class="timeline-col">
        <h2>Timeline</h2>
        <ol class="timeline">${events.map((e) => html`<${Event} key=${e.id} e=${e} start=${start} />`)}</ol>
      </div>
      <aside>
        <h2>Task stack</h2>
        <${TaskStack} events=${events} />
      </aside>
    </div>
  </section>`;
}
