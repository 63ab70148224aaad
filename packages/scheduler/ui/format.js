import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';

/**
 * An absolute time in the browser's locale and time zone, on a 24-hour clock from 00 to 23 (`hourCycle`:
 * with `hour12: false` some engines write the hour after midnight as 24).
 */
export const time = (ms) => (ms ? new Date(ms).toLocaleString(undefined, { hourCycle: 'h23' }) : '—');

/** A duration for reading: 840 ms, 4.2 s, 38 s, 3 min 05 s, 2 h 14 min. */
export function duration(ms) {
  if (!Number.isFinite(ms)) return '—';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms >= 10_000 ? 0 : 1)} s`;
  const s = Math.floor(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
  return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')} min`;
}

const RELATIVE =
  typeof Intl !== 'undefined' ? new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' }) : null;
const UNITS = [
  ['year', 365 * 86_400_000],
  ['month', 30 * 86_400_000],
  ['day', 86_400_000],
  ['hour', 3_600_000],
  ['minute', 60_000],
  ['second', 1000],
];

/**
 * "3 minutes ago", in the browser's language. Every moment shown is in the past: one that reads as
 * later than the browser's clock (a server clock ahead of it) is "now", never "in 3 seconds".
 */
export function relative(ms, now = Date.now()) {
  const d = Math.min(0, ms - now);
  for (const [unit, size] of UNITS)
    if (Math.abs(d) >= size || unit === 'second')
      return RELATIVE?.format(Math.round(d / size), unit) ?? time(ms);
  return time(ms);
}

/** A moment: relative ("2 minutes ago") with the absolute time on hover, both in the browser's locale. */
export const When = ({ ms, now }) =>
  ms
    ? html`<time datetime=${new Date(ms).toISOString()} title=${time(ms)}>${relative(ms, now)}</time>`
    : html`<span class="muted">—</span>`;

/**
 * The current time, read at every render, and a render every `everyMs` while `live` (durations of running
 * things). The clock is never kept from an earlier render: a page that mounted before its data arrived,
 * or stopped ticking a moment before its run ended, would compare later times against an older clock.
 */
export function useNow(live, everyMs = 1000) {
  const [, setTick] = useState(0);
  useEffect(() => {
    if (!live) return undefined;
    const timer = setInterval(() => setTick((n) => n + 1), everyMs);
    return () => clearInterval(timer);
  }, [live, everyMs]);
  return Date.now();
}

const FINAL = new Set(['succeeded', 'not_converged', 'failed', 'cancelled']);
export const isFinal = (status) => FINAL.has(status);

/** A run's duration: creation to its last checkpoint once it ended, to now while it goes on. */
export const runDuration = (r, now) =>
  isFinal(r.status)
    ? Math.max(0, (r.updated_at || r.created_at) - r.created_at)
    : Math.max(0, now - r.created_at);

/** Why a run ended, for people; the stable code stays on hover. */
const REASONS = {
  final_answer: 'answered',
  final_answer_truncated: 'answered (cut at the output token cap)',
  max_iterations: 'too many turns',
  repeat: 'kept repeating itself',
  token_budget: 'token budget spent',
  deadline: 'ran out of time',
  failed_rounds: 'tool calls kept failing',
  refused: 'the model declined',
  content_filter: 'output filtered by the provider',
  empty_answer: 'the model gave no answer',
  output_truncated: 'output cut before any text',
  no_tool_available: 'every tool call was refused',
  guardrail_tripped: 'stopped by a guardrail',
  llm_error: 'the model could not be reached',
  internal_error: 'internal error',
  invalid_job: 'invalid run request',
  cancelled: 'cancelled',
  cancel_requested: 'cancelled on request',
  node_failed: 'a node failed',
  coordinator_failed: 'the coordinator failed',
  completed: 'completed',
  timeout: 'timed out',
};
export const reasonText = (code) => REASONS[code] ?? code.replaceAll('_', ' ');
export const Reason = ({ code }) =>
  code ? html`<abbr class="reason" title=${`reason code: ${code}`}>${reasonText(code)}</abbr>` : null;

/** What a tool error kind means, for people. */
const KINDS = {
  unknown_tool: 'unknown tool',
  invalid_arguments: 'invalid arguments',
  forbidden: 'forbidden',
  awaiting_confirmation: 'needs approval',
  timeout: 'timed out',
  unavailable: 'no executor took it',
  transient: 'transient failure',
  circuit_open: 'breaker open',
  guardrail: 'blocked by a guardrail',
  no_result: 'no result',
  execution_error: 'tool raised an error',
};
export const kindText = (kind) => KINDS[kind] ?? kind.replaceAll('_', ' ');

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

/** Copies text to the clipboard, through a hidden text area where the Clipboard API is missing. */
async function copyText(text) {
  try {
    await window.navigator.clipboard.writeText(text);
    return true;
  } catch {
    const area = document.createElement('textarea');
    area.value = text;
    area.setAttribute('readonly', '');
    area.style.position = 'fixed';
    area.style.opacity = '0';
    document.body.appendChild(area);
    area.select();
    const done = document.execCommand('copy');
    area.remove();
    return done;
  }
}

export function CopyButton({ text, label }) {
  const [done, setDone] = useState(false);
  const copy = async () => {
    setDone(await copyText(text));
    setTimeout(() => setDone(false), 1500);
  };
  return html`<button type="button" class="small secondary" aria-label=${`Copy ${label}`} onClick=${copy}>Copy</button><span class="copied" role="status">${done ? 'Copied' : ''}</span>`;
}

// ---- Payloads for reading ------------------------------------------------------------------------

const MARKDOWN_HINT =
  /(^|\n)(#{1,6} |\s*[-*+] |\s*\d+\. |```|> )|\*\*[^*\n]+\*\*|\[[^\]\n]+\]\([^)\n]+\)|\|[^\n]*\n\s*\|?\s*:?-+:?\s*\|/;
/** Text that reads as markdown: headings, lists, fences, quotes, bold, links or tables. */
export const looksLikeMarkdown = (text) => MARKDOWN_HINT.test(text);

/** Only web and mail links are followed; anything else (javascript:, data:…) stays text. */
const safeHref = (href) => (/^(https?:|mailto:)/i.test(href.trim()) ? href.trim() : undefined);

/** Inline markdown (code, bold, italic, links) as elements: text is never parsed as HTML. */
function inline(text) {
  const out = [];
  const re = /(`[^`\n]+`)|(\*\*[^*\n]+\*\*)|(\*[^*\n]+\*|(?<!\w)_[^_\n]+_(?!\w))|(\[[^\]\n]+\]\([^)\s]+\))/g;
  let last = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    if (m.index > last) out.push(text.slice(last, m.index));
    const t = m[0];
    if (m[1]) out.push(html`<code>${t.slice(1, -1)}</code>`);
    else if (m[2]) out.push(html`<strong>${inline(t.slice(2, -2))}</strong>`);
    else if (m[3]) out.push(html`<em>${inline(t.slice(1, -1))}</em>`);
    else {
      const [, label, href] = /^\[([^\]]+)\]\(([^)]+)\)$/.exec(t);
      const safe = safeHref(href);
      out.push(
        safe
          ? html`<a href=${safe} target="_blank" rel="noopener noreferrer nofollow">${label}</a>`
          : html`<span title=${`link not followed: ${href}`}>${label}</span>`,
      );
    }
    last = m.index + t.length;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

/** The cells of a GitHub-style table row: outer pipes optional, `\\|` a pipe inside a cell. */
const cells = (line) =>
  line
    .trim()
    .replace(/^\|/, '')
    .replace(/(?<!\\)\|$/, '')
    .split(/(?<!\\)\|/)
    .map((c) => c.trim().replace(/\\\|/g, '|'));
/** A table's delimiter row (`|---|:--:|`), which makes the line above it a header. */
const TABLE_DELIMITER = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;
const isTableStart = (lines, i) =>
  lines[i].includes('|') &&
  i + 1 < lines.length &&
  TABLE_DELIMITER.test(lines[i + 1]) &&
  lines[i + 1].includes('-');

/** A GitHub-style table from `lines[i]` on: its header, alignments and rows; returns the next line's index. */
function table(lines, i, blocks) {
  const head = cells(lines[i]);
  const align = cells(lines[i + 1]).map((d) =>
    d.startsWith(':') && d.endsWith(':') ? 'center' : d.endsWith(':') ? 'right' : undefined,
  );
  const rows = [];
  for (i += 2; i < lines.length && lines[i].trim() && lines[i].includes('|'); i += 1)
    rows.push(cells(lines[i]));
  const cls = (k) => (align[k] ? `align-${align[k]}` : undefined);
  blocks.push(html`<div class="table-wrap md-table" tabindex="0" role="region" aria-label="Table">
    <table>
      <thead><tr>${head.map((c, k) => html`<th scope="col" class=${cls(k)}>${inline(c)}</th>`)}</tr></thead>
      <tbody>${rows.map((r) => html`<tr>${head.map((_, k) => html`<td class=${cls(k)}>${inline(r[k] ?? '')}</td>`)}</tr>`)}</tbody>
    </table>
  </div>`);
  return i;
}

/**
 * A markdown preview built as elements (headings, paragraphs, lists, quotes, fenced code, GitHub-style
 * tables, inline code, emphasis, web links): raw HTML in the text shows as text, so a tool's output cannot script the page.
 */
export function Markdown({ text }) {
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  const blocks = [];
  for (let i = 0; i < lines.length;) {
    const line = lines[i];
    if (line.startsWith('```')) {
      const code = [];
      for (i += 1; i < lines.length && !lines[i].startsWith('```'); i += 1) code.push(lines[i]);
      i += 1;
      blocks.push(html`<pre class="md-code" tabindex="0">${code.join('\n')}</pre>`);
    } else if (isTableStart(lines, i)) {
      i = table(lines, i, blocks);
    } else if (/^#{1,6} /.test(line)) {
      const level = Math.min(6, line.indexOf(' ') + 2);
      // Headings inside a payload sit below the page's own h1/h2.
      const Tag = `h${Math.min(6, level)}`;
      blocks.push(html`<${Tag} class="md-h">${inline(line.replace(/^#+ /, ''))}</${Tag}>`);
      i += 1;
    } else if (/^\s*([-*+]|\d+\.) /.test(line)) {
      const ordered = /^\s*\d+\. /.test(line);
      const items = [];
      for (; i < lines.length && /^\s*([-*+]|\d+\.) /.test(lines[i]); i += 1)
        items.push(html`<li>${inline(lines[i].replace(/^\s*([-*+]|\d+\.) /, ''))}</li>`);
      blocks.push(ordered ? html`<ol>${items}</ol>` : html`<ul>${items}</ul>`);
    } else if (line.startsWith('> ')) {
      const quote = [];
      for (; i < lines.length && lines[i].startsWith('> '); i += 1) quote.push(lines[i].slice(2));
      blocks.push(html`<blockquote>${inline(quote.join(' '))}</blockquote>`);
    } else if (!line.trim()) {
      i += 1;
    } else {
      const para = [];
      for (
        ;
        i < lines.length &&
        lines[i].trim() &&
        !/^(#{1,6} |```|> |\s*([-*+]|\d+\.) )/.test(lines[i]) &&
        !isTableStart(lines, i);
        i += 1
      )
        para.push(lines[i]);
      blocks.push(html`<p>${inline(para.join(' '))}</p>`);
    }
  }
  return html`<div class="markdown">${blocks}</div>`;
}

/** A string for reading: markdown previewed, text with newlines kept as lines, short text inline. */
function Text({ text }) {
  if (text.includes('\n') && looksLikeMarkdown(text)) return html`<${Markdown} text=${text} />`;
  if (text.includes('\n') || text.length > 120) return html`<div class="text">${text}</div>`;
  return html`<span class="json-str">${JSON.stringify(text)}</span>`;
}

const FOLD_AT = 2;

/** A JSON value as a tree: objects and arrays fold (open near the top), strings read as text. */
function Tree({ value, name, depth = 0 }) {
  const key = name !== undefined ? html`<span class="json-key">${name}</span>: ` : null;
  if (value === null || typeof value !== 'object') {
    const leaf =
      typeof value === 'string'
        ? html`<${Text} text=${value} />`
        : html`<span class=${`json-${typeof value}`}>${String(value)}</span>`;
    return html`<div class="json-leaf">${key}${leaf}</div>`;
  }
  const entries = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
  const brackets = Array.isArray(value) ? ['[', ']'] : ['{', '}'];
  if (entries.length === 0) return html`<div class="json-leaf">${key}${brackets.join('')}</div>`;
  return html`<details class="json-node" open=${depth < FOLD_AT}>
    <summary>${key}${brackets[0]}<span class="muted"> ${entries.length} ${Array.isArray(value) ? 'item' : 'key'}${entries.length === 1 ? '' : 's'} </span>${brackets[1]}</summary>
    <div class="json-children">${entries.map(([k, v]) => html`<${Tree} key=${k} value=${v} name=${k} depth=${depth + 1} />`)}</div>
  </details>`;
}

/** The value a payload shows: a string holding JSON is read as that JSON. */
function parsed(value) {
  if (typeof value !== 'string') return value;
  const t = value.trim();
  if (!(t.startsWith('{') || t.startsWith('['))) return value;
  try {
    return JSON.parse(t);
  } catch {
    return value;
  }
}

/**
 * A payload (arguments, a result, an error) rendered for reading — JSON folded, strings with newlines as
 * text, markdown previewed — with a raw view (the exact JSON) and a copy button.
 */
export function Payload({ value, label }) {
  const [raw, setRaw] = useState(false);
  const exact = typeof value === 'string' ? value : JSON.stringify(value, null, 2);
  const shown = parsed(value);
  return html`<div class="code payload">
    <div class="code-label">
      <span>${label}</span>
      <span class="payload-actions">
        <button type="button" class="small secondary" aria-pressed=${raw} aria-label=${`Raw view of ${label}`} onClick=${() => setRaw(!raw)}>Raw</button>
        <${CopyButton} text=${exact} label=${label} />
      </span>
    </div>
    ${raw ? html`<pre class="raw" tabindex="0" aria-label=${`${label}, raw`}>${pretty(value)}</pre>` : html`<div class="reading" tabindex="0" aria-label=${label}>${typeof shown === 'string' ? html`<${Text} text=${shown} />` : html`<${Tree} value=${shown} />`}</div>`}
  </div>`;
}

/** Text written by the model or a person: markdown previewed when it reads as markdown, lines kept. */
export const Prose = ({ text }) =>
  looksLikeMarkdown(text) ? html`<${Markdown} text=${text} />` : html`<div class="text">${text}</div>`;

export const Code = ({ value, label }) => html`<${Payload} value=${value} label=${label} />`;

/** What of the conversation a handoff kept, in words. */
export function keptText(e) {
  if (e.filter === 'last_n') return `the last ${e.last_n} messages`;
  return e.filter === 'summary' ? 'a summary' : 'the whole conversation';
}
