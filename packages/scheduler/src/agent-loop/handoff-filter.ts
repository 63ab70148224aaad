import type { HandoffInputFilter } from '@agent-reach/shared';
import { compact } from './compaction.js';
import type { ChatMessage, RunState } from './run-state.js';

/** The filter's name as events and records show it. */
export function filterName(filter: HandoffInputFilter): 'all' | 'summary' | 'last_n' {
  return typeof filter === 'object' ? 'last_n' : filter;
}

/**
 * Keeps of the run's conversation what the target of a handoff is to see, leaving a valid conversation
 * for the provider:
 * - `all`: everything (the OpenAI Agents SDK's default);
 * - `{last_n: N}`: the last N messages, moved forward past any tool message whose call was cut, after the
 *   run's request (its last user message) when that was cut: the target always knows what was asked;
 * - `summary`: everything but the request is folded into the run's structured summary, as a compaction
 *   folds it (no model call): the target reads the summary in its system prompt, then the request.
 */
export function filterConversation(state: RunState, filter: HandoffInputFilter): void {
  if (filter === 'all') return;
  if (filter === 'summary') {
    compact(state, 0);
    return;
  }
  state.messages = lastMessages(state.messages, filter.last_n);
}

function lastMessages(messages: ChatMessage[], n: number): ChatMessage[] {
  let start = Math.max(0, messages.length - n);
  // A tool message must follow the assistant message of its call: never start on one.
  while (start < messages.length && messages[start]?.role === 'tool') start += 1;
  const request = messages.findLastIndex((m) => m.role === 'user');
  const kept = messages.slice(start);
  return request >= 0 && request < start ? [messages[request] as ChatMessage, ...kept] : kept;
}
