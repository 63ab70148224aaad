import { html } from 'htm/preact';
import { time } from './format.js';

/** A delivery's state in words: a dead letter is named, never shown by colour alone. */
const STATE_TEXT = { pending: 'pending', delivered: 'delivered', dead_lettered: 'dead-lettered' };

/** One delivery of a callback: event, state, attempts, last answer or error. */
function Delivery({ d }) {
  const dead = d.state === 'dead_lettered';
  return html`<li class=${`delivery delivery-${d.state}`}>
    <span class="mono">${d.event}</span>
    <span class=${`badge delivery-state-${d.state}`}>${dead ? '⚠ ' : ''}${STATE_TEXT[d.state] ?? d.state}</span>
    <span>${d.attempts} attempt${d.attempts === 1 ? '' : 's'}</span>
    ${d.last_status !== undefined ? html`<span>last status <span class="mono">${d.last_status}</span></span>` : null}
    <span class="muted">${time(d.updated_at)}</span>
    ${dead ? html`<span class="dead-note">Dead-lettered: no further attempts will be made.</span>` : null}
    ${d.last_error ? html`<div class="mono muted delivery-error">last error: ${d.last_error}</div>` : null}
    <div class="mono muted">${d.id}</div>
  </li>`;
}

/**
 * The "Callback" box of a run or workflow page: where its events are sent and each delivery's state,
 * from the `callback` of `GET /v1/runs/:id` or `GET /v1/workflows/:id`; nothing when none was asked for.
 */
export function CallbackBox({ callback }) {
  if (!callback) return null;
  const dead = callback.deliveries.filter((d) => d.state === 'dead_lettered').length;
  return html`<section class=${`box callback${dead ? ' warn' : ''}`} aria-labelledby="callback-title">
    <h2 id="callback-title" class="code-label">Callback</h2>
    <p><span class="mono">${callback.url}</span> <span class="muted">events: ${callback.events.join(', ')}</span></p>
    ${dead ? html`<p><strong>${dead} ${dead === 1 ? 'delivery' : 'deliveries'} dead-lettered</strong></p>` : null}
    ${
      callback.deliveries.length
        ? html`<ul class="deliveries">${callback.deliveries.map((d) => html`<${Delivery} key=${d.id} d=${d} />`)}</ul>`
        : html`<p class="muted">No delivery yet.</p>`
    }
  </section>`;
}
