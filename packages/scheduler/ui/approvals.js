import { html } from 'htm/preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from './api.js';
import { Code, When } from './format.js';

/**
 * The confirmation step of a decision: what is about to happen, a reason recorded with it, and Confirm
 * or Back. Focus goes to the reason; Escape goes back; Enter in the reason (without Shift) confirms.
 */
function Confirm({ a, decision, busy, onConfirm, onBack }) {
  const [reason, setReason] = useState('');
  const field = useRef(null);
  useEffect(() => field.current?.focus(), []);
  const id = `reason-${a.tool_call_id}`;
  const submit = (e) => {
    e.preventDefault();
    onConfirm(reason.trim());
  };
  const keys = (e) => {
    if (e.key === 'Escape') onBack();
    if (e.key === 'Enter' && !e.shiftKey && e.target.tagName === 'TEXTAREA') submit(e);
  };
  const verb = decision === 'approve' ? 'Approve' : 'Reject';
  const what = a.grant
    ? decision === 'approve'
      ? `It runs with the arguments shown, and ${a.tool} is granted to the rest of this run.`
      : `The model is told a person refused to grant ${a.tool}; it will not run in this run.`
    : decision === 'approve'
      ? 'It will run with the arguments shown.'
      : 'The model is told a person refused it.';
  return html`<form class=${`confirm confirm-${decision}`} onSubmit=${submit} onKeyDown=${keys} aria-label=${`${verb} ${a.tool}`}>
    <p><b>${verb}</b> ${a.grant ? 'the grant asked by' : ''} this call of <span class="tool">${a.tool}</span>? ${what}</p>
    <label for=${id}>Reason <span class="muted">(recorded with the decision${decision === 'reject' ? ' and told to the model' : ''})</span></label>
    <textarea id=${id} ref=${field} rows="2" maxlength="500" value=${reason} onInput=${(e) => setReason(e.currentTarget.value)}></textarea>
    <div class="decide">
      <button type="submit" class=${decision === 'reject' ? 'danger' : ''} disabled=${busy}>Confirm ${decision}</button>
      <button type="button" class="secondary" onClick=${onBack}>Back</button>
    </div>
  </form>`;
}

/**
 * Calls waiting for a person, each with Approve and Reject, each asking for confirmation and a reason
 * (the API refuses a key that may not decide).
 */
export function Approvals({ items, onDecided, showRun = false }) {
  const [busy, setBusy] = useState('');
  const [error, setError] = useState('');
  const [asking, setAsking] = useState(undefined);
  const decide = async (a, decision, reason) => {
    setBusy(a.tool_call_id);
    setError('');
    try {
      await api.decide(a.run_id, a.tool_call_id, decision, reason);
      setAsking(undefined);
      onDecided?.();
    } catch (e) {
      setError(e.message);
    } finally {
      setBusy('');
    }
  };
  const back = (a, decision) => {
    setAsking(undefined);
    // Focus returns to the button that opened the step.
    setTimeout(() =>
      document.querySelector(`[data-call="${window.CSS.escape(a.tool_call_id)}"] .open-${decision}`)?.focus(),
    );
  };
  return html`<ul class="approvals" aria-label="Calls waiting for a decision">
    ${error ? html`<li class="error" role="alert">${error}</li>` : null}
    ${items.map((a) => {
      const open = asking?.id === a.tool_call_id ? asking.decision : undefined;
      return html`<li class="approval" key=${a.tool_call_id} data-call=${a.tool_call_id}>
        <div class="approval-what">
          <span class="tool">${a.tool}</span>${a.grant ? html` <span class="badge warn grant" title="approving grants the tool to the rest of the run">asks for a grant</span>` : null}${showRun ? html` in <a class="mono" href=${`#/runs/${encodeURIComponent(a.run_id)}`}>${a.run_id}</a> <span class="muted">(${a.agent})</span>` : null}<span class="muted"> requested <${When} ms=${a.requested_at} /></span>
          ${a.input ? html`<div class="muted input-preview">${a.input}</div>` : null}
          <${Code} label="Arguments" value=${a.arguments} />
        </div>
        ${
          open
            ? html`<${Confirm} a=${a} decision=${open} busy=${busy === a.tool_call_id} onConfirm=${(reason) => decide(a, open, reason)} onBack=${() => back(a, open)} />`
            : html`<div class="decide">
                <button class="open-approve" aria-label=${`Approve ${a.tool}`} disabled=${busy === a.tool_call_id} onClick=${() => setAsking({ id: a.tool_call_id, decision: 'approve' })}>Approve</button>
                <button class="danger open-reject" aria-label=${`Reject ${a.tool}`} disabled=${busy === a.tool_call_id} onClick=${() => setAsking({ id: a.tool_call_id, decision: 'reject' })}>Reject</button>
              </div>`
        }
      </li>`;
    })}
  </ul>`;
}
