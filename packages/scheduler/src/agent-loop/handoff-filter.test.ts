import { describe, expect, it } from 'vitest';
import { filterConversation } from './handoff-filter.js';
import { createRunState, type ChatMessage } from './run-state.js';

const call = (id: string, name: string): ChatMessage => ({
  role: 'assistant',
  content: null,
  tool_calls: [{ id, type: 'function', function: { name, arguments: '{}' } }],
});
const result = (id: string): ChatMessage => ({ role: 'tool', tool_call_id: id, content: '{"ok":true}' });

/** A session's earlier exchange, the request, a tool round and the transfer round. */
function conversation() {
  const state = createRunState({
    runId: 'run_1',
    agent: 'triage',
    input: 'my router is down',
    deadlineMs: 60_000,
    history: [
      { role: 'user', content: 'earlier question' },
      { role: 'assistant', content: 'earlier answer' },
    ],
  });
  state.messages.push(call('c1', 'lookup'), result('c1'), call('c2', 'transfer_to_technical'), result('c2'));
  return state;
}

describe('filterConversation', () => {
  it('keeps everything for all', () => {
    const state = conversation();
    const before = structuredClone(state.messages);
    filterConversation(state, 'all');
    expect(state.messages).toEqual(before);
  });

  it('keeps the last N messages after the request, never starting on a tool message whose call was cut', () => {
    const state = conversation();
    filterConversation(state, { last_n: 3 });
    // The last 3 start on c1's result, whose call was cut: the kept tail starts at the next call.
    expect(state.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
    expect(state.messages[0]).toMatchObject({ content: 'my router is down' });
    expect(state.messages[1]).toMatchObject({ tool_calls: [{ id: 'c2' }] });
  });

  it('keeps the request once when the last N messages include it', () => {
    const state = conversation();
    filterConversation(state, { last_n: 5 });
    expect(state.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant', 'tool']);
  });

  it('folds everything but the request into the summary for summary, the session before it included', () => {
    const state = conversation();
    filterConversation(state, 'summary');
    expect(state.messages).toEqual([{ role: 'user', content: 'my router is down' }]);
    expect(state.summary?.done.map((d) => d.tool)).toEqual(['lookup', 'transfer_to_technical']);
    expect(state.summary?.notes).toContain('earlier request: earlier question');
  });
});
