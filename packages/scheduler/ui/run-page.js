import { html } from 'htm/preact';
import { api, followEvents } from './api.js';
import {
  Code,
  Kind,
  Prose,
  Reason,
  Status,
  When,
  duration,
  isFinal,
  keptText,
  kindText,
  runDuration,
  time,
  useNow,
} from './format.js';
import { Approvals } from './approvals.js';
import { CallbackBox } from './callback-box.js';
import { passedOverReason, routeLine } from './model-route.js';
import { useFollowed } from './use-followed.js';
import { Waterfall } from './waterfall.js';

/** One tool call: a line that opens to its arguments and the result exactly as the model saw it. */
function ToolCall({ e }) {
  const kind = e.kind ?? (e.ok ? 'ok' : 'error');
  const retries = e.attempts > 1 ? `, ${e.attempts - 1} retr${e.attempts === 2 ? 'y' : 'ies'}` : '';
  const breaker = e.error?.kind === 'circuit_open';
  const rejected = e.error?.decided_by !== undefined;
  return html`<details class="call" data-call=${e.tool_call_id}>
    <summary>
      <span class="tool">${e.tool}</span> <${Kind} kind=${kind} answered=${e.answered} />
      ${e.error ? html` <span class="badge error-kind" title=${`error kind: ${e.error.kind}`}>${rejected ? `rejected by ${e.error.decided_by}` : kindText(e.error.kind)}</span>` : null}
      ${breaker ? html` <span class="badge breaker">breaker open</span>` : null}
      <span class="muted"> ${duration(e.duration_ms)}, ${e.attempts} attempt${e.attempts === 1 ? '' : 's'}${retries}</span>
      ${e.executor_id ? html`<span class="muted mono"> on ${e.executor_id}</span>` : null}
      ${e.truncated ? html` <span class="badge warn">truncated</span>` : null}
      ${e.child_run_id ? html` <span class="muted">answered by</span> <${RunLink} id=${e.child_run_id} cls="child-run" />` : null}
      ${e.error?.message ? html`<div class="error-line">${e.error.message}</div>` : null}
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

/** A link to another run's page (a child or the parent of an agent called as a tool). */
function RunLink({ id, cls }) {
  return html`<a class=${`mono ${cls}`} href=${`#/runs/${encodeURIComponent(id)}`}>${id}</a>`;
}

/** The model that answered a routed turn, and each model passed over before it with its reason. */
function Route({ e }) {
  const line = routeLine(e);
  if (!line) return null;
  return html`<div class="route small-text">
    <span class="muted">${e.answered_by ? html`Answered by <span class="mono">${e.answered_by}</span>` : 'No model answered'}</span>
    ${
      e.fallback?.length
        ? html`<ul class="fallback">${e.fallback.map((f) => html`<li><span class="mono">${f.model}</span> <span class="badge error-kind">${passedOverReason(f)}</span>${f.message ? html` <span class="muted">${f.message}</span>` : null}</li>`)}</ul>`
        : null
    }
  </div>`;
}

function Summary({ label, value }) {
  return value
    ? html`<details class="summary"><summary>${label}</summary><${Code} label=${label} value=${value} /></details>`
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
        html`<div><b>Model turn ${e.turn}</b> <span class="muted">${e.model} · ${duration(e.latency_ms)} · ${e.prompt_tokens} in / ${e.completion_tokens} out tokens · ${e.finish_reason}${e.tool_calls ? ` · ${e.tool_calls} tool call${e.tool_calls === 1 ? '' : 's'}` : ''}${typeof e.cost === 'number' ? ` · cost ${money(e.cost)}` : ''}</span></div>
        <${Route} e=${e} />
        ${e.reasoning ? html`<details class="reasoning"><summary>Reasoning</summary><div class="text">${e.reasoning}</div></details>` : null}
        ${e.message?.content ? html`<div class="said"><${Prose} text=${e.message.content} /></div>` : null}`,
      );
    case 'llm_usage':
      // A model request made beside the turns: the plan's, a guardrail agent's verdict.
      return row(
        'turn',
        html`<div><b>${e.purpose === 'plan' ? 'Plan request' : `Guardrail ${e.guardrail ?? ''} request`}</b> <span class="muted">${e.model} · ${duration(e.latency_ms)} · ${e.prompt_tokens} in / ${e.completion_tokens} out tokens${typeof e.cost === 'number' ? ` · cost ${money(e.cost)}` : ''}</span></div>
        <${Route} e=${e} />`,
      );
    case 'llm_error':
      return row(
        'bad',
        html`<div><b>Model turn ${e.turn} failed</b> <span class="muted">${duration(e.latency_ms)}</span> ${e.message}</div>
        <${Route} e=${e} />`,
      );
    case 'tool_dispatched':
      return row('calls', html`<span class="muted">Calls: ${e.calls.map((c) => c.tool).join(', ')}</span>`);
    case 'tool_result':
      return row('result', html`<${ToolCall} e=${e} />`);
    case 'child_run_started':
      return row(
        'calls',
        html`<b>Child run</b> <span class="tool">${e.tool}</span> <span class="muted">agent ${e.agent}, depth ${e.depth}:</span> <${RunLink} id=${e.child_run_id} cls="child-run" />`,
      );
    case 'step_done':
      return row('step', html`<span class="muted">Step done: ${e.step.title}</span>`);
    case 'approval_requested':
      return row(
        'decision',
        html`<b>${e.grant ? 'Grant requested' : 'Approval requested'}</b> for <span class="tool">${e.tool}</span> <span class="mono muted">${e.arguments}</span>`,
      );
    case 'approval_decided':
      return row(
        'decision',
        html`<b>${e.decision === 'approved' ? (e.grant ? 'Granted' : 'Approved') : e.grant ? 'Grant refused' : 'Rejected'}</b> <span class="tool">${e.tool}</span>${e.by ? ` by ${e.by}` : ''}${e.reason ? `: ${e.reason}` : ''}`,
      );
    case 'guard':
      return row(
        'guard',
        html`<b>Guard ${e.guard}</b> <span class="badge warn">${e.action}</span> ${e.report}`,
      );
    case 'guardrail':
      return row(
        e.action === 'let_through' ? 'guard' : 'bad',
        html`<b>Guardrail ${e.guardrail}</b> <span class="badge warn">${e.verdict === 'error' ? 'check failed' : 'tripped'}</span> <span class="badge">${e.action.replace('_', ' ')}</span> <span class="muted">${e.stage}${e.tool ? ` of ${e.tool}` : ''} · ${e.check} · ${duration(e.duration_ms)}</span> <span class="guardrail-reason">${e.reason}</span>`,
      );
    case 'handoff':
      return row(
        'handoff',
        html`<b>Handoff</b> <span class="tool">${e.from}</span> → <span class="tool">${e.to}</span> <span class="muted">handoff ${e.handoffs} · kept ${keptText(e)} · ${e.messages_before} → ${e.messages_after} messages</span>`,
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
        html`<b>Run finished:</b> <${Status} status=${e.outcome.status} /> <span class="muted"><${Reason} code=${e.outcome.reason} /></span>`,
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

/**
 * A cost from the price table, as `agent-reach runs show` prints it (six significant digits). No currency
 * sign: the table's prices are in the operator's currency, whichever that is.
 */
const money = (c) => String(Number(c.toPrecision(6)));

/** The run's cost tile, only when its record carries a cost: the sum, and each priced model's share. */
function CostTile({ run }) {
  if (typeof run.cost !== 'number') return null;
  const priced = (run.model_usage ?? []).filter((u) => typeof u.cost === 'number');
  return html`<div class="tile cost" title="from the price table, in its currency">
    <div class="tile-label">Cost</div>
    <div class="tile-value">${money(run.cost)}</div>
    ${
      priced.length
        ? html`<ul class="by-model muted small-text">${priced.map((u) => html`<li><span class="mono">${u.model}</span>: ${money(u.cost)} <span>(${u.turns} turn${u.turns === 1 ? '' : 's'}, ${u.prompt_tokens} in / ${u.completion_tokens} out)</span></li>`)}</ul>`
        : null
    }
  </div>`;
}

/** The figures of a run at a glance: duration, calls and errors, tokens, cost. */
function Totals({ run, events, now }) {
  const results = events.filter((e) => e.type === 'tool_result');
  const failed = results.filter((e) => !e.ok);
  const retries = results.reduce((n, e) => n + Math.max(0, e.attempts - 1), 0);
  const tile = (label, value, cls = '') =>
    html`<div class=${`tile ${cls}`}><div class="tile-label">${label}</div><div class="tile-value">${value}</div></div>`;
  return html`<div class="totals" role="group" aria-label="Run totals">
    ${tile('Duration', html`${duration(runDuration(run, now))}${isFinal(run.status) ? '' : ' …'}`)}
    ${tile('Model turns', run.iterations)}
    ${tile('Tool calls', results.length)}
    ${tile('Errors', failed.length, failed.length ? 'bad' : '')}
    ${tile('Retries', retries, retries ? 'warn' : '')}
    ${tile('Tokens', html`${run.usage.total_tokens || run.usage.prompt_tokens + run.usage.completion_tokens}<span class="muted small-text"> (${run.usage.prompt_tokens} in / ${run.usage.completion_tokens} out)</span>`)}
    <${CostTile} run=${run} />
  </div>`;
}

/** Every failed or refused call, each with its kind, above the timeline. */
function Errors({ events }) {
  const failed = events.filter((e) => e.type === 'tool_result' && !e.ok);
  const model = events.filter((e) => e.type === 'llm_error');
  if (!failed.length && !model.length) return null;
  return html`<div class="box warn errors" role="region" aria-label="Errors">
    <div class="code-label">Errors (${failed.length + model.length})</div>
    <ul>
      ${failed.map((e) => html`<li><span class="tool">${e.tool}</span> <span class="badge error-kind" title=${`error kind: ${e.error?.kind ?? e.kind}`}>${e.error?.decided_by !== undefined ? `rejected by ${e.error.decided_by}` : kindText(e.error?.kind ?? e.kind ?? 'error')}</span> <span class="mono muted">${e.error?.kind ?? ''}</span> ${e.error?.message ?? ''}</li>`)}
      ${model.map((e) => html`<li><b>Model turn ${e.turn}</b> <span class="badge error-kind">model error${e.status ? ` ${e.status}` : ''}</span> ${e.message}</li>`)}
    </ul>
  </div>`;
}

/** One run: its outcome, totals, waterfall, pending approvals, task stack and a live timeline. */
export function RunPage({ runId }) {
  const { record: run, events, error, reload } = useFollowed(runId, api.run, followEvents, REFRESH_ON);
  const now = useNow(run !== undefined && !isFinal(run.status));

  if (error && !run) return html`<p class="error">${error}</p>`;
  if (!run) return html`<p class="muted">Loading…</p>`;
  const start = events[0]?.at ?? run.created_at;
  const pending = run.pending_approvals.map((a) => ({ ...a, run_id: run.run_id, agent: run.agent }));
  const troubled = run.status === 'succeeded' && events.some((e) => e.type === 'tool_result' && !e.ok);
  return html`<section class="run">
    <h1><span class="mono">${run.run_id}</span> <${Status} status=${run.status} />${troubled ? html` <span class="badge warn mark">with failed or refused calls</span>` : null}</h1>
    <dl class="facts">
      <dt>Agent</dt><dd>${run.agent}${run.in_charge ? html` <span class="muted">→ in charge now:</span> <span class="in-charge">${run.in_charge}</span>` : null}${run.handoffs ? html` <span class="muted">(${run.handoffs} handoff${run.handoffs === 1 ? '' : 's'})</span>` : null}</dd>
      <dt>Created</dt><dd><${When} ms=${run.created_at} now=${now} /> <span class="muted">${time(run.created_at)}</span></dd>
      ${isFinal(run.status) ? html`<dt>Ended</dt><dd><${When} ms=${run.updated_at} now=${now} /> <span class="muted">${time(run.updated_at)}</span></dd>` : null}
      <dt>Trace</dt><dd class="mono">${run.trace_id ?? '—'}</dd>
      ${run.reason ? html`<dt>Reason</dt><dd><${Reason} code=${run.reason} /> <span class="mono muted">${run.reason}</span></dd>` : null}
      ${run.workflow ? html`<dt>Workflow</dt><dd><a class="mono" href=${`#/workflows/${encodeURIComponent(run.workflow.workflow_id)}`}>${run.workflow.workflow_id}</a> <span class="muted">node</span> <span class="mono">${run.workflow.node}</span></dd>` : null}
      ${run.parent ? html`<dt>Parent</dt><dd><${RunLink} id=${run.parent.run_id} cls="parent-run" /> <span class="muted">called it as</span> <span class="tool">${run.parent.tool}</span> <span class="muted">(depth ${run.parent.depth})</span></dd>` : null}
      ${run.children?.length ? html`<dt>Child runs</dt><dd>${run.children.map((c) => html`<span class="chip">${c.agent} <${RunLink} id=${c.run_id} cls="child-run" /></span> `)}</dd>` : null}
      ${run.granted_by_approval?.length ? html`<dt>Granted</dt><dd>${run.granted_by_approval.map((g) => html`<span class="chip">${g.tool}${g.by ? ` by ${g.by}` : ''}</span> `)}</dd>` : null}
      ${run.variant ? html`<dt>Variant</dt><dd><span class="chip variant">${run.variant.name}</span> <span class="muted">overrides ${Object.keys(run.variant.overrides).join(', ') || 'nothing'}</span></dd>` : null}
      ${run.metadata ? html`<dt>Metadata</dt><dd>${Object.entries(run.metadata).map(([k, v]) => html`<span class="chip">${k}=${v}</span>`)}</dd>` : null}
    </dl>
    <${Totals} run=${run} events=${events} now=${now} />
    ${run.input ? html`<div class="box"><div class="code-label">Input</div><${Prose} text=${run.input} /></div>` : null}
    ${run.variant ? html`<div class="box variant"><${Code} value=${run.variant.overrides} label=${`Variant ${run.variant.name}: overrides of the agent for this run (JSON)`} /></div>` : null}
    ${run.answer ? html`<div class="box answer"><div class="code-label">Answer</div><${Prose} text=${run.answer} /></div>` : null}
    ${run.output !== undefined ? html`<div class="box answer output"><${Code} value=${run.output} label="Output (JSON)" /></div>` : null}
    ${run.report ? html`<div class="box warn"><div class="code-label">Report</div><${Prose} text=${run.report} /></div>` : null}
    <${Errors} events=${events} />
    <${CallbackBox} callback=${run.callback} />
    ${pending.length ? html`<h2>Waiting for a decision</h2><${Approvals} items=${pending} onDecided=${reload} />` : null}
    <h2 id="waterfall-title">Waterfall</h2>
    <${Waterfall} events=${events} start=${start} end=${isFinal(run.status) ? undefined : now} />
    <div class="columns">
      <div class="timeline-col">
        <h2>Timeline</h2>
        <ol class="timeline">${events.map((e) => html`<${Event} key=${e.id} e=${e} start=${start} />`)}</ol>
      </div>
      <aside aria-label="Task stack">
        <h2>Task stack</h2>
        <${TaskStack} events=${events} />
      </aside>
    </div>
  </section>`;
}
