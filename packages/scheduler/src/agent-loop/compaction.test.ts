import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compact, keyValues } from './compaction.js';
import { createRunState, type ChatMessage, type RunState } from './run-state.js';

/** One model turn: an assistant message with one call and the tool message answering it. */
function turn(i: number, result: object | string = { ok: true, content: { city: 'Paris', temp_c: 20 + i } }) {
  const id = `call_${i}`;
  return [
    {
      role: 'assistant',
      content: `turn ${i}`,
      tool_calls: [{ id, type: 'function', function: { name: 'weather', arguments: `{"day":${i}}` } }],
    },
    { role: 'tool', tool_call_id: id, content: typeof result === 'string' ? result : JSON.stringify(result) },
  ] as ChatMessage[];
}

function runWith(turns: number, history: ChatMessage[] = []): RunState {
  const s = createRunState({
    runId: 'run_c',
    agent: 'a',
    input: 'plan my weekend',
    deadlineMs: 60_000,
    history,
  });
  for (let i = 1; i <= turns; i += 1) s.messages.push(...turn(i));
  return s;
}

describe('compact', () => {
  it('keeps the input first and the last rounds whole, folding the earlier turns into the summary', () => {
    const s = runWith(4);
    const folded = s.messages.slice(1, 5);
    expect(compact(s, 2)).toEqual({
      folded: 4,
      foldedTurns: 2,
      // The digest names exactly the messages folded away, so an inspector can tell compactions apart.
      digest: createHash('sha256').update(JSON.stringify(folded)).digest('hex'),
    });
    expect(s.messages[0]).toEqual({ role: 'user', content: 'plan my weekend' });
    expect(s.messages.slice(1).map((m) => m.role)).toEqual(['assistant', 'tool', 'assistant', 'tool']);
    expect(s.messages[1]).toMatchObject({ content: 'turn 3' });
    expect(s.summary).toEqual({
      goal: 'plan my weekend',
      done: [
        { tool: 'weather', arguments: { day: 1 }, ok: true, key_values: { city: 'Paris', temp_c: 21 } },
        { tool: 'weather', arguments: { day: 2 }, ok: true, key_values: { city: 'Paris', temp_c: 22 } },
      ],
      notes: ['turn 1', 'turn 2'],
      todo: [],
      folded_turns: 2,
    });
    expect(s.compactions).toBe(1);
  });

  it('folds nothing when there are no more turns than it keeps', () => {
    const s = runWith(2);
    const before = structuredClone(s.messages);
    expect(compact(s, 2)).toEqual({ folded: 0, foldedTurns: 0 });
    expect(s.messages).toEqual(before);
    expect(s.summary).toBeUndefined();
    expect(s.compactions).toBe(0);
  });

  it('records a failed call with its error kind and an unanswered one as "no result"', () => {
    const s = createRunState({ runId: 'run_c', agent: 'a', input: 'go', deadlineMs: 60_000 });
    s.messages.push(...turn(1, { ok: false, error: { kind: 'timeout', message: 'slow', retryable: true } }));
    s.messages.push(turn(2)[0] as ChatMessage, ...turn(3));
    compact(s, 1);
    expect(s.summary?.done).toEqual([
      { tool: 'weather', arguments: { day: 1 }, ok: false, error: 'timeout' },
      { tool: 'weather', arguments: { day: 2 }, ok: false, error: 'no result' },
    ]);
  });

  it("folds a session's earlier messages as notes and makes the current input the goal", () => {
    const s = runWith(1, [
      { role: 'user', content: 'what is the weather' },
      { role: 'assistant', content: 'sunny' },
    ]);
    compact(s, 1);
    expect(s.messages[0]).toEqual({ role: 'user', content: 'plan my weekend' });
    expect(s.summary?.goal).toBe('plan my weekend');
    expect(s.summary?.notes).toEqual(['earlier request: what is the weather', 'sunny']);
  });

  it('lists the open steps of the task stack as what is left to do', () => {
    const s = runWith(3);
    s.plan.steps = [
      { title: 'look up the weather', tool: 'weather', done: true },
      { title: 'write the plan', done: false },
    ];
    compact(s, 1);
    expect(s.summary?.todo).toEqual(['write the plan']);
  });

  it('keeps every tool message after the call it answers, whatever it keeps (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 8 }), fc.integer({ min: 1, max: 4 }), (turns, keep) => {
        const s = runWith(turns);
        compact(s, keep);
        const called = new Set<string>();
        for (const m of s.messages) {
          if (m.role === 'assistant') for (const c of m.tool_calls ?? []) called.add(c.id);
          if (m.role === 'tool') expect(called.has(m.tool_call_id)).toBe(true);
        }
        expect(s.messages[0]).toEqual({ role: 'user', content: 'plan my weekend' });
        expect(s.messages.filter((m) => m.role === 'assistant')).toHaveLength(Math.min(turns, keep));
        expect(s.summary?.folded_turns ?? 0).toBe(Math.max(0, turns - keep));
      }),
    );
  });
});

describe('keyValues', () => {
  it('keeps scalars one level deep, counts arrays and cuts long strings', () => {
    expect(
      keyValues({
        id: 7,
        ok: true,
        name: 'x'.repeat(200),
        tags: [1, 2, 3],
        order: { status: 'sent', deep: { a: 1 } },
      }),
    ).toEqual({ id: 7, ok: true, name: `${'x'.repeat(160)}…`, tags: '[3 items]', 'order.status': 'sent' });
  });

  it('stops at the limit of fields', () => {
    const wide = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`f${i}`, i]));
    expect(Object.keys(keyValues(wide))).toHaveLength(12);
    expect(Object.keys(keyValues(wide, 3))).toEqual(['f0', 'f1', 'f2']);
  });

  it('has nothing to say about a result that is not an object', () => {
    expect(keyValues('text')).toEqual({});
    expect(keyValues([1, 2])).toEqual({});
    expect(keyValues(null)).toEqual({});
  });
});
