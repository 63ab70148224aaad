import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { api } from './api.js';
import { pretty, time } from './format.js';

/** Calls waiting for a person, each with Approve and Reject (the API refuses a key that may not decide). */
export function Approvals({ items, onDecided, showRun = false }) {
  const [busy, setBusy] = useState('');
  const [error, setError] = useState('');
  const decide = async (a, decision) => {
    setBusy(a.tool_call_id);
    setError('');
    try {
      await api.decide(a.run_id, a.tool_call_id, decision);
      onDecided?.();
    } catch (e) {
      setError(e.message);
    } finally {
      setBusy('');
    }
  };
  return html`<div class="approvals">
    ${error ? html`<p class="error">${error}</p>` : null}
    ${items.map(
      (a) => html`<div class="approval" data-call=${a.tool_call_id}>
        <div>
          <span class="tool">${a.tool}</span>${showRun ? html` in <a class="mono" href=${`#/runs/${encodeURIComponent(a.run_id)}`}>${a.run_id}</a> <span class="muted">(${a.agent})</span>` : null}<span class="muted"> requested ${time(a.requested_at)}</span>
          ${a.input ? html`<div class="muted">${a.input}</div>` : null}
          <pre>${pretty(a.arguments)}</pre>
        </div>
        <div class="decide">
          <button disabled=${busy === a.tool_call_id} onClick=${() => decide(a, 'approve')}>Approve</button>
          <button class="danger" disabled=${busy === a.tool_call_id} onClick=${() => decide(a, 'reject')}>Reject</button>
        </div>
      </div>`,
    )}
  </div>`;
}
