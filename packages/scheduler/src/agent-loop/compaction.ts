import { createHash } from 'node:crypto';
import type { ToolResult } from '@agent-reach/protocol';
import { isContextTurn } from './context-providers.js';
import {
  MAX_SUMMARY_NOTES,
  retarget,
  type ChatMessage,
  type CompactionSummary,
  type RunState,
} from './run-state.js';

export interface CompactionRecord {
  beforeTokens: number;
  afterTokens: number;
  foldedMessages: number;
  foldedTurns: number;
  summary: CompactionSummary;
}

/** Done steps a summary keeps at most (the latest), so a long session stays bounded. */
const MAX_SUMMARY_DONE = 60;

/**
 * Folds all but the last `keepRounds` model turns into the run's structured summary: the goal (the
 * current run's input), each done step with the key field values of its JSON result, notes from the
 * model's own text and earlier requests, and what is left (the open task-stack steps). The current
 * run's input (the last user message: the loop itself never adds one) is never folded: it stays first,
 * followed by the kept tail, which starts at an assistant message so every tool message still follows
 * the call it answers. A session's earlier messages (before the input) are folded too.
 */
export function compact(
  state: RunState,
  keepRounds: number,
): { folded: number; foldedTurns: number; digest?: string } {
  const input = state.messages.findLastIndex((m) => m.role === 'user');
  const assistantAt = state.messages.flatMap((m, i) => (m.role === 'assistant' && i > input ? [i] : []));
  const cut =
    assistantAt.length > keepRounds
      ? (assistantAt[assistantAt.length - keepRounds] ?? state.messages.length)
      : input + 1;
  const folded = [...state.messages.slice(0, Math.max(0, input)), ...state.messages.slice(input + 1, cut)];
  if (folded.length === 0) return { folded: 0, foldedTurns: 0 };
  const summary = currentSummary(state);
  const results = new Map<string, ToolResult>();
  for (const m of folded) {
    if (m.role === 'tool' && typeof m.content === 'string') {
      try {
        results.set(m.tool_call_id, JSON.parse(m.content) as ToolResult);
      } catch {
        // a tool message that is not a platform result carries nothing to summarize
      }
    }
  }
  let foldedTurns = 0;
  for (const m of folded) {
    if (m.role === 'user') {
      const text = typeof m.content === 'string' ? m.content.trim() : '';
      if (text) summary.notes.push(`earlier request: ${text.slice(0, 300)}`);
      continue;
    }
    if (m.role !== 'assistant') continue;
    // The context providers' calls were no model turn: the model never saw them as one.
    if (!isContextTurn(m)) foldedTurns += 1;
    if (typeof m.content === 'string' && m.content.trim()) summary.notes.push(m.content.trim().slice(0, 300));
    for (const call of m.tool_calls ?? []) {
      if (call.type !== 'function') continue;
      const r = results.get(call.id);
      summary.done.push({
        tool: call.function.name,
        arguments: parseOr(call.function.arguments),
        ok: r?.ok ?? false,
        ...(r?.ok ? { key_values: keyValues(r.content) } : { error: r?.error?.kind ?? 'no result' }),
      });
    }
  }
  summary.notes = summary.notes.slice(-MAX_SUMMARY_NOTES);
  summary.done = summary.done.slice(-MAX_SUMMARY_DONE);
  summary.folded_turns += foldedTurns;
  summary.todo = state.plan.steps.filter((s) => !s.done).map((s) => s.title);
  state.summary = summary;
  const head = input >= 0 ? [state.messages[input] as ChatMessage] : [];
  state.messages = [...head, ...state.messages.slice(cut)];
  state.compactions += 1;
  const digest = createHash('sha256').update(JSON.stringify(folded)).digest('hex');
  return { folded: folded.length, foldedTurns, digest };
}

/** The run's summary with the current run's goal (a session's summary starts with an earlier run's). */
function currentSummary(state: RunState): CompactionSummary {
  const summary = state.summary ?? { goal: state.input, done: [], notes: [], todo: [], folded_turns: 0 };
  return retarget(summary, state.input);
}

function parseOr(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return raw.slice(0, 200);
  }
}

/** Scalar fields of a JSON result (one level into objects), short strings only: what later steps need. */
export function keyValues(content: unknown, limit = 12): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const visit = (value: unknown, prefix: string, depth: number) => {
    if (
      Object.keys(out).length >= limit ||
      value === null ||
      typeof value !== 'object' ||
      Array.isArray(value)
    )
      return;
    for (const [k, v] of Object.entries(value)) {
      if (Object.keys(out).length >= limit) return;
      const key = prefix ? `${prefix}.${k}` : k;
      if (typeof v === 'number' || typeof v === 'boolean') out[key] = v;
      else if (typeof v === 'string') out[key] = v.length > 160 ? `${v.slice(0, 160)}…` : v;
      else if (Array.isArray(v)) out[key] = `[${v.length} items]`;
      else if (depth < 1) visit(v, key, depth + 1);
    }
  };
  visit(content, '', 0);
  return out;
}
