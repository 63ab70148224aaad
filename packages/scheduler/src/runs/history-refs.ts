import { createHash } from 'node:crypto';
import { toolMessageOf, toolMessageRef } from '@agent-reach/protocol';
import type { RunEvent } from '../agent-loop/events.js';
import type { ChatMessage } from '../agent-loop/run-state.js';

/*
 * Which of a checkpoint's new tool messages are stored as references to the run's results hash (see
 * protocol's tool-message-refs.ts): those of calls an executor or the dispatcher answered from the
 * record, whose result as this checkpoint's `tool_result` event carries it gives the message exactly.
 * What the results hash holds is checked by the checkpoint script (SHA-1 of the entry); a message whose
 * entry is not the result expected is stored whole.
 */

/** A checkpoint's tool messages stored as references: call id → SHA-1 of the entry it refers to. */
export type HistoryRefs = Map<string, string>;

/** The references a checkpoint may store for `fresh` (its new messages), from its `events`. */
export function historyRefs(fresh: readonly ChatMessage[], events: readonly RunEvent[]): HistoryRefs {
  const refs: HistoryRefs = new Map();
  let answered: Map<string, string> | undefined;
  for (const m of fresh) {
    if (m.role !== 'tool') continue;
    answered ??= recordedResults(events);
    const entry = answered.get(m.tool_call_id);
    if (entry === undefined || typeof m.content !== 'string') continue;
    if (toolMessageOf(m.tool_call_id, entry) !== JSON.stringify(m)) continue;
    refs.set(m.tool_call_id, createHash('sha1').update(entry, 'utf8').digest('hex'));
  }
  return refs;
}

/** The stored form of each new message: a reference where `refs` has its call, else the message whole. */
export function storedMessages(fresh: readonly ChatMessage[], refs: HistoryRefs): string[] {
  return fresh.map((m) =>
    m.role === 'tool' && refs.has(m.tool_call_id) ? toolMessageRef(m.tool_call_id) : JSON.stringify(m),
  );
}

/**
 * The results-hash entry each call answered through the record should be, by call id: the result its
 * `tool_result` event carries with the executor's id put back where the executor wrote it (last).
 */
function recordedResults(events: readonly RunEvent[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const e of events) {
    if (e.type !== 'tool_result' || e.answered !== 'dispatched' || !e.result) continue;
    const entry = e.executor_id ? { ...e.result, executor_id: e.executor_id } : e.result;
    out.set(e.tool_call_id, JSON.stringify(entry));
  }
  return out;
}
