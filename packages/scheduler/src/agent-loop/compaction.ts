import type { ToolResult } from '@agent-reach/shared';
import type { ChatMessage, CompactionSummary, RunState } from './run-state.js';

export interface CompactionRecord {
  beforeTokens: number;
  afterTokens: number;
  foldedMessages: number;
  foldedTurns: number;
  summary: CompactionSummary;
}

/**
 * Folds all but the last `keepRounds` model turns into the run's structured summary: the goal, each done
 * step with the key field values of its JSON result, notes from the model's own text, and what is left
 * (the open task-stack steps). The first user message stays; the kept tail starts at an assistant message
 * so every tool message still follows the call it answers.
 */
export function compact(state: RunState, keepRounds: number): { folded: number; foldedTurns: number } {
  const firstUser = state.messages.findIndex((m) => m.role === 'user');
  const assistantAt = state.messages.flatMap((m, i) => (m.role === 'assistant' && i > firstUser ? [i] : []));
  if (assistantAt.length <= keepRounds) return { folded: 0, foldedTurns: 0 };
  const cut = assistantAt[assistantAt.length - keepRounds] ?? state.messages.length;
  const head = state.messages.slice(0, firstUser + 1);
  const folded = state.messages.slice(firstUser + 1, cut);
  const summary: CompactionSummary = state.summary ?? {
    goal: state.input,
    done: [],
    notes: [],
    todo: [],
    folded_turns: 0,
  };
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
    if (m.role !== 'assistant') continue;
    foldedTurns += 1;
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
  summary.folded_turns += foldedTurns;
  summary.todo = state.plan.steps.filter((s) => !s.done).map((s) => s.title);
  state.summary = summary;
  state.messages = [...head, ...state.messages.slice(cut)] as ChatMessage[];
  state.compactions += 1;
  return { folded: folded.length, foldedTurns };
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
