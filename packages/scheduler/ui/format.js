import { html } from 'htm/preact';

export const time = (ms) => (ms ? new Date(ms).toLocaleString(undefined, { hour12: false }) : '—');

export const duration = (ms) => (ms >= 1000 ? `${(ms / 1000).toFixed(ms >= 10_000 ? 0 : 1)} s` : `${ms} ms`);

/** JSON for reading: parsed and indented when it parses, as sent otherwise. */
export function pretty(value) {
  if (typeof value === 'string') {
    try {
      return JSON.stringify(JSON.parse(value), null, 2);
    } catch {
      return value;
    }
  }
  return JSON.stringify(value, null, 2);
}

// Markup note: htm drops whitespace that contains a newline, so a space between inline elements is
// written on one line.

export const Status = ({ status }) =>
  html`<span class=${`badge status-${status}`}>${status.replace('_', ' ')}</span>`;

export const Kind = ({ kind, answered }) =>
  html`<span class=${`badge kind-${kind}`}>${kind.replace('_', ' ')}</span>${
    answered === 'local'
      ? html` <span class="badge local" title="answered by the scheduler, not dispatched">local</span>`
      : null
  }`;

export const Code = ({ value, label }) =>
  html`<div class="code"><div class="code-label">${label}</div><pre>${pretty(value)}</pre></div>`;
