import { html } from 'htm/preact';
import { useLayoutEffect, useState } from 'preact/hooks';
import { duration, keptText, kindText } from './format.js';
import { passedOver } from './model-route.js';

/**
 * The spans of a run on one time axis, from its events: model turns (the turn's latency, ending when it
 * was recorded), tool calls (their duration, with one segment per attempt placed by its recorded start
 * and duration when the executors retried), approval waits (request to decision, or to now), and
 * compactions, guards and handoffs as marks.
 */
export function spans(events, end) {
  const out = [];
  const asked = new Map();
  for (const e of events) {
    switch (e.type) {
      case 'llm_request':
        out.push({
          kind: 'turn',
          label: `Model turn ${e.turn}${e.answered_by ? ` · ${e.answered_by}` : ''}`,
          from: e.at - e.latency_ms,
          to: e.at,
          note: `${e.prompt_tokens} in / ${e.completion_tokens} out tokens${typeof e.cost === 'number' ? `, cost ${String(Number(e.cost.toPrecision(6)))}` : ''}${passedOver(e) ? `; after ${passedOver(e)}` : ''}`,
        });
        break;
      case 'llm_error':
        out.push({
          kind: 'bad',
          label: `Model turn ${e.turn} failed`,
          from: e.at - e.latency_ms,
          to: e.at,
          note: e.message,
        });
        break;
      case 'tool_result': {
        const failed = !e.ok;
        const rejected = e.error?.decided_by !== undefined;
        out.push({
          kind: rejected ? 'rejected' : failed ? 'bad' : 'tool',
          label: e.tool,
          from: e.at - e.duration_ms,
          to: e.at,
          attempts: e.attempts,
          tries: e.attempt_log,
          note: failed
            ? rejected
              ? `rejected by ${e.error.decided_by}`
              : kindText(e.error?.kind ?? e.kind ?? 'error')
            : e.kind === 'no_result'
              ? 'no result'
              : 'ok',
          call: e.tool_call_id,
        });
        break;
      }
      case 'approval_requested':
        asked.set(e.tool_call_id, out.length);
        out.push({ kind: 'wait', label: `Approval: ${e.tool}`, from: e.at, to: undefined, note: 'waiting' });
        break;
      case 'approval_decided': {
        const i = asked.get(e.tool_call_id);
        if (i !== undefined)
          Object.assign(out[i], { to: e.at, note: `${e.decision}${e.by ? ` by ${e.by}` : ''}` });
        break;
      }
      case 'compaction':
        out.push({
          kind: 'mark',
          label: 'Compaction',
          from: e.at,
          to: e.at,
          note: `${e.before_tokens} → ${e.after_tokens} tokens`,
        });
        break;
      case 'guard':
        out.push({ kind: 'mark guard', label: `Guard ${e.guard}`, from: e.at, to: e.at, note: e.action });
        break;
      case 'guardrail':
        out.push({
          kind: 'mark guard',
          label: `Guardrail ${e.guardrail}`,
          from: e.at,
          to: e.at,
          note: `${e.stage}${e.tool ? ` of ${e.tool}` : ''}: ${e.action.replace('_', ' ')}`,
        });
        break;
      case 'handoff':
        out.push({
          kind: 'mark handoff',
          label: `Handoff ${e.from} → ${e.to}`,
          from: e.at,
          to: e.at,
          note: `kept ${keptText(e)}`,
        });
        break;
      default:
    }
  }
  const last = events[events.length - 1]?.at;
  for (const s of out) if (s.to === undefined) s.to = end ?? last ?? s.from;
  return out;
}

const STEPS = [
  1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 15_000, 30_000, 60_000, 120_000, 300_000,
  600_000, 1_800_000, 3_600_000,
];
/** A tick label's width at the axis's 11 px font, over-estimated a little (7 px a character, 4 px of padding). */
const labelPx = (ms) => duration(ms).length * 7 + 4;
/** The least room between two tick labels. */
const LABEL_GAP_PX = 8;

/**
 * Round ticks along an axis of `total` ms: at most five steps, and on an axis `widthPx` wide only steps
 * whose labels fit between one tick and the next (fewer ticks on a narrow screen). An unmeasured axis
 * (`widthPx` 0) gets the five steps.
 */
function ticks(total, widthPx = 0) {
  const widest = (step) =>
    Math.max(...Array.from({ length: Math.floor(total / step) + 1 }, (_, k) => labelPx(k * step)));
  const room = (step) => (widthPx * step) / total >= widest(step) + LABEL_GAP_PX;
  const step =
    STEPS.find((s) => total / s <= 5 && (widthPx <= 0 || room(s))) ??
    (widthPx > 0 && total <= STEPS[STEPS.length - 1] ? total : total / 4);
  const out = [];
  for (let t = 0; t <= total; t += step) out.push(t);
  return out;
}

const pct = (x) => `${Math.max(0, Math.min(100, x)).toFixed(3)}%`;

/**
 * The ticks of an axis `widthPx` wide, each with its label to the right of its mark, or to its left where
 * it would run past the end; a label that would still touch the one before it is left out (the end's
 * label beside a close last step). Unmeasured, labels past 80% sit to the left.
 */
function placed(total, widthPx) {
  const out = [];
  let reach = -Infinity;
  for (const t of ticks(total, widthPx)) {
    const x = (100 * t) / total;
    if (widthPx <= 0) {
      out.push({ t, x, end: x > 80 });
      continue;
    }
    const at = (widthPx * t) / total;
    const w = labelPx(t);
    const end = at + w > widthPx;
    const from = end ? at - w : at;
    if (from < reach + LABEL_GAP_PX) continue;
    reach = end ? at : at + w;
    out.push({ t, x, end });
  }
  return out;
}

/** A tick of a time axis at `x` percent: its label to the right of the mark, or to its left at the end. */
const Tick = ({ x, end, label }) =>
  end
    ? html`<span class="wf-tick end" style=${{ right: pct(100 - x) }}>${label}</span>`
    : html`<span class="wf-tick" style=${{ left: pct(x) }}>${label}</span>`;

/** The width of an element, kept current as it resizes: 0 until it is laid out. */
function useWidth() {
  const [element, setElement] = useState(null);
  const [width, setWidth] = useState(0);
  useLayoutEffect(() => {
    if (!element) return undefined;
    setWidth(element.clientWidth);
    const watch = new window.ResizeObserver(() => setWidth(element.clientWidth));
    watch.observe(element);
    return () => watch.disconnect();
  }, [element]);
  return [setElement, width];
}

/** The header cell of a time axis of `total` ms, its ticks spaced for the width it has. */
export function AxisTrack({ total, id }) {
  const [ref, width] = useWidth();
  return html`<div class="wf-track" role="columnheader" id=${id} ref=${ref} aria-label=${`time axis, 0 to ${duration(total)}`}>
    ${placed(total, width).map((p) => html`<${Tick} key=${p.t} x=${p.x} end=${p.end} label=${duration(p.t)} />`)}
  </div>`;
}

/**
 * A retried call's attempts inside its bar, to scale: each segment starts at its offset in the call and
 * lasts its duration (the gaps are backoffs). Records without timings split the bar evenly.
 */
function Segments({ span }) {
  const n = span.attempts > 1 ? span.attempts : 1;
  if (n === 1) return null;
  const length = span.to - span.from;
  if (!span.tries?.length || length <= 0)
    return Array.from({ length: n }, (_, k) => html`<span class="wf-seg" data-attempt=${k + 1}></span>`);
  return span.tries.map((t) => {
    const text = `attempt ${t.attempt}: ${t.outcome === 'ok' ? 'ok' : kindText(t.outcome)}, ${duration(t.duration_ms)} at +${duration(t.offset_ms)}`;
    return html`<span
      class=${`wf-seg timed ${t.outcome === 'ok' ? 'ok' : 'failed'}`}
      data-attempt=${t.attempt}
      data-outcome=${t.outcome}
      title=${text}
      style=${{ left: pct((100 * t.offset_ms) / length), width: pct((100 * t.duration_ms) / length) }}
    ></span>`;
  });
}

/** A run's waterfall: one row per span, bars placed on a shared axis from the run's first event. */
export function Waterfall({ events, start, end }) {
  const rows = spans(events, end);
  if (rows.length === 0) return html`<p class="muted">Nothing on the time axis yet.</p>`;
  const finish = Math.max(end ?? 0, ...rows.map((r) => r.to), ...events.map((e) => e.at));
  const total = Math.max(1, finish - start);
  const x = (t) => (100 * (t - start)) / total;
  return html`<div class="waterfall" role="table" aria-labelledby="waterfall-title" aria-describedby="waterfall-axis">
    <div class="wf-row wf-axis" role="row">
      <div class="wf-label" role="columnheader">Span</div>
      <${AxisTrack} total=${total} id="waterfall-axis" />
    </div>
    ${rows.map((r, i) => {
      const width = x(r.to) - x(r.from);
      const n = r.attempts > 1 ? r.attempts : 1;
      const tries = r.tries?.length
        ? ` (${r.tries.map((t) => `${t.outcome === 'ok' ? 'ok' : kindText(t.outcome)} ${duration(t.duration_ms)}`).join(', ')})`
        : '';
      const text = `${r.label}: ${r.to > r.from ? duration(r.to - r.from) : 'instant'} at +${duration(Math.max(0, r.from - start))}${r.note ? `, ${r.note}` : ''}${n > 1 ? `, ${n} attempts${tries}` : ''}`;
      return html`<div class=${`wf-row wf-row-${r.kind.split(' ')[0]}`} role="row" key=${i} data-span=${r.kind} data-call=${r.call}>
        <div class="wf-label" role="rowheader"><span class="wf-name">${r.label}</span> <span class="muted">${r.to > r.from ? duration(r.to - r.from) : ''}</span></div>
        <div class="wf-track" role="cell" aria-label=${text} title=${text}>
          ${
            r.kind.startsWith('mark')
              ? html`<span class=${`wf-mark ${r.kind}`} style=${{ left: pct(x(r.from)) }}></span>`
              : html`<span class=${`wf-bar ${r.kind}${r.tries?.length > 1 ? ' tried' : ''}`} style=${{ left: pct(x(r.from)), width: pct(Math.max(width, 0.4)) }}><${Segments} span=${r} /></span>`
          }
        </div>
      </div>`;
    })}
  </div>`;
}
