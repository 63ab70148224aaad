import type { AttemptTiming } from '@agent-reach/protocol';
import type { RunEvent } from '../agent-loop/events.js';
import type { StoredEvent } from './run-store.js';

const clip = (text: string, max = 120) => (text.length > max ? `${text.slice(0, max)}…` : text);

/** Width of a line's `+   123 ms  ` prefix: an event's further lines are indented under its text. */
const PREFIX_WIDTH = 12;

/** One line per event, with the time since the run started: a run as a person reads it. */
export function renderTimeline(events: StoredEvent[]): string {
  const start = events[0]?.event.at ?? 0;
  return events
    .map(({ event }) =>
      `+${String(event.at - start).padStart(6)} ms  ${describe(event)}`.replaceAll(
        '\n',
        `\n${' '.repeat(PREFIX_WIDTH)}`,
      ),
    )
    .join('\n');
}

function describe(e: RunEvent): string {
  switch (e.type) {
    case 'run_started':
      return `run started: agent ${e.agent}${e.variant ? ` (variant ${e.variant.name})` : ''}, model ${e.model}: ${clip(e.input)}`;
    case 'plan':
      return e.steps.length
        ? `plan: ${e.steps.map((s, i) => `${i + 1}. ${s.title}`).join('  ')}`
        : `no plan${e.error ? ` (${e.error})` : ''}`;
    case 'llm_request':
      return `model turn ${e.turn}: ${e.tool_calls ? `${e.tool_calls} tool call(s)` : 'answer'}, ${e.latency_ms} ms, ${e.prompt_tokens}+${e.completion_tokens} tokens, ${e.finish_reason}${answeredBy(e)}${e.reasoning ? `; reasoning: ${clip(e.reasoning)}` : ''}`;
    case 'llm_usage':
      // A model request made for the run beside its turns: its plan, a guardrail agent's verdict.
      return `${e.purpose === 'plan' ? 'plan' : `guardrail ${e.guardrail ?? ''}`} request: ${e.latency_ms} ms, ${e.prompt_tokens}+${e.completion_tokens} tokens${answeredBy(e)}`;
    case 'llm_error':
      // The message lists every model of a routed turn and why it was passed over.
      return `model turn ${e.turn} failed after ${e.latency_ms} ms: ${e.message}`;
    case 'tool_dispatched':
      // Some of these may be answered without a dispatch (refused, rejected): their results say so.
      return `calls ${e.calls.map((c) => `${c.tool}(${clip(c.arguments, 60)})`).join(', ')}`;
    case 'child_run_started':
      return `child run ${e.child_run_id} of ${e.agent} started for ${e.tool} [${e.tool_call_id}], depth ${e.depth}`;
    case 'tool_result':
      return toolResultLine(e);
    case 'step_done':
      return `  step done: ${e.step.title}`;
    case 'approval_requested':
      return `approval requested for ${e.tool} [${e.tool_call_id}]`;
    case 'approval_decided':
      return `${e.decision} ${e.tool} [${e.tool_call_id}]${e.by ? ` by ${e.by}` : ''}${e.reason ? `: ${e.reason}` : ''}`;
    case 'guard':
      return `guard ${e.guard} ${e.action}: ${clip(e.report, 160)}`;
    case 'guardrail':
      return `guardrail ${e.guardrail} ${e.verdict === 'error' ? 'failed' : 'tripped'} on the ${e.stage}${e.tool ? ` of ${e.tool} [${e.tool_call_id}]` : ''}: ${e.action.replace('_', ' ')}: ${clip(e.reason, 160)}`;
    case 'output_invalid':
      return `answer misses the output schema, ${e.retries_left} retries left: ${clip(e.problems.map((p) => `${p.field} ${p.message}`).join('; '), 160)}`;
    case 'tasks_open':
      return `answer with ${e.open.length} task-stack step(s) open, ${e.action === 'remind' ? `sent back (${e.reminders_left} reminder(s) left)` : 'accepted'}: ${clip(e.open.map((t) => t.title).join('; '), 160)}`;
    case 'compaction':
      return `compaction: ${e.before_tokens} → ${e.after_tokens} tokens, ${e.folded_turns} turn(s) folded`;
    case 'handoff':
      return `handoff ${e.from} → ${e.to} [${e.tool_call_id}], handoff ${e.handoffs}: kept ${e.filter === 'last_n' ? `the last ${e.last_n} messages` : e.filter === 'summary' ? 'a summary' : 'the whole conversation'} (${e.messages_before} → ${e.messages_after} messages)`;
    case 'run_finished':
      return `run finished: ${e.outcome.status} (${e.outcome.reason})${e.outcome.answer ? `: ${clip(e.outcome.answer)}` : ''}`;
    default:
      return JSON.stringify(e);
  }
}

function toolResultLine(e: Extract<RunEvent, { type: 'tool_result' }>): string {
  const kind = e.kind ?? (e.ok ? 'ok' : 'error');
  const where = e.child_run_id
    ? `answered by child run ${e.child_run_id}`
    : e.answered === 'local'
      ? 'answered locally (not dispatched)'
      : `dispatched${e.executor_id ? ` to ${e.executor_id}` : ''}`;
  const head = `  ${kind.padEnd(9)} ${e.tool} [${e.tool_call_id}] ${e.duration_ms} ms, ${e.attempts} attempt(s), ${where}${e.truncated ? ', truncated' : ''}${e.result?.ref ? `, ref ${e.result.ref}` : ''}`;
  const error = e.error ? `: ${e.error.kind}: ${clip(e.error.message)}` : '';
  const result =
    e.result && e.result.content !== undefined ? ` → ${clip(JSON.stringify(e.result.content))}` : '';
  return `${head}${error}; args ${clip(e.arguments, 80)}${result}${attemptsLine(e.attempt_log)}`;
}

/**
 * A retried call's attempts on a line of their own, each with its outcome and duration
 * ("attempts: 1 timeout 120 ms, 2 ok 35 ms"): where the call's time went. Nothing for one attempt,
 * whose timing is the call's own.
 */
function attemptsLine(log: AttemptTiming[] | undefined): string {
  if (!log || log.length < 2) return '';
  return `\n    attempts: ${log.map((a) => `${a.attempt} ${a.outcome} ${a.duration_ms} ms`).join(', ')}`;
}

/** Which declared model answered a routed turn, what it passed over, and the turn's cost. */
function answeredBy(
  e: Pick<Extract<RunEvent, { type: 'llm_request' }>, 'answered_by' | 'fallback' | 'cost'>,
): string {
  if (e.answered_by === undefined) return '';
  const over = (e.fallback ?? []).map((f) =>
    f.reason === 'failed' ? `${f.model} failed: ${clip(f.message ?? '', 200)}` : `${f.model} breaker open`,
  );
  const cost = e.cost === undefined ? '' : `, cost ${formatCost(e.cost)}`;
  return `; answered by ${e.answered_by}${over.length ? ` (passed over: ${over.join(', ')})` : ''}${cost}`;
}

/** A cost for people: six significant digits at most. */
function formatCost(cost: number): string {
  return String(Number(cost.toPrecision(6)));
}
