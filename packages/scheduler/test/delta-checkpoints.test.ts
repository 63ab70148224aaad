import { beforeEach, describe, expect, it } from 'vitest';
import { foldStateRecord, StateDeltaWriter, type StepRecord } from '@agent-reach/protocol';
import type { RunState } from '@agent-reach/scheduler';
import { RunStore } from '@agent-reach/scheduler/internal';
import { runningRun, useRunStore, type TestRedis } from './store-fixture.js';

/** One model turn calling `lookup` with `args`, its tool message and its step, as the loop records them. */
function playTurn(state: RunState, turn: number, args: string): void {
  const id = `call_${turn}`;
  state.messages.push({
    role: 'assistant',
    content: null,
    tool_calls: [{ id, type: 'function', function: { name: 'lookup', arguments: args } }],
  });
  state.messages.push({ role: 'tool', tool_call_id: id, content: JSON.stringify({ ok: true, n: turn }) });
  const step: StepRecord = {
    turn,
    tool_call_id: id,
    tool: 'lookup',
    arguments: args,
    ok: true,
    duration_ms: 1,
    attempts: 1,
  };
  state.steps.push(step);
  state.iterations = turn;
  state.usage = { prompt_tokens: 10 * turn, completion_tokens: turn, total_tokens: 11 * turn };
}

describe('delta checkpoints: a checkpoint writes what changed, the state is rebuilt on load (real Redis)', () => {
  const fixture = useRunStore();
  let t: TestRedis;
  let store: RunStore;
  beforeEach(() => ({ t, store } = fixture()));

  const newRun = runningRun;
  const rawState = async (runId: string) => (await t.redis.get(t.keys.runState(runId))) ?? '';

  it('appends per step only what changed, and loading the record gives exactly the state after every step', async () => {
    const state = newRun('run_delta');
    const { writer } = await store.claim(state.runId);
    await writer.prepare(state, [])();
    const base = await rawState(state.runId);
    expect(base).not.toContain('\n');
    let before = base;
    let deltas = 0;
    for (let turn = 1; turn <= 8; turn += 1) {
      playTurn(state, turn, JSON.stringify({ city: `city number ${turn}`, pad: 'x'.repeat(200) }));
      await writer.prepare(state, [])();
      const now = await rawState(state.runId);
      if (now.startsWith(before)) {
        // One line per checkpoint: the new step and the counters, never the steps written before it.
        const appended = now.slice(before.length);
        expect(appended.startsWith('\n')).toBe(true);
        expect(appended.slice(1)).not.toContain('\n');
        expect(appended).toContain(`call_${turn}`);
        expect(appended).not.toContain(`call_${turn - 1}"`);
        deltas += 1;
      } else {
        expect(now).not.toContain('\n'); // a new base, the deltas folded into it
      }
      before = now;
      expect((await store.load(state.runId)).state).toEqual(state);
    }
    expect(deltas).toBeGreaterThan(4);
    // A call's arguments are kept once: in the assistant message, not in its step.
    expect(await rawState(state.runId)).not.toContain('city number');
    expect((await store.load(state.runId)).state?.steps.map((s) => s.arguments)).toEqual(
      state.steps.map((s) => s.arguments),
    );
  });

  it("writes a new base when the deltas outgrow it, and at the run's end, and reads each back exactly", async () => {
    const state = newRun('run_compact');
    const { writer } = await store.claim(state.runId);
    await writer.prepare(state, [])();
    let bases = 0;
    for (let turn = 1; turn <= 40; turn += 1) {
      playTurn(state, turn, `{"q":${turn}}`);
      state.metadata = { turn: String(turn), note: 'n'.repeat(300) };
      await writer.prepare(state, [])();
      const raw = await rawState(state.runId);
      if (!raw.includes('\n')) bases += 1;
      // The deltas since the base never hold more than twice the base.
      const [head, ...deltas] = raw.split('\n');
      expect(deltas.join('\n').length).toBeLessThanOrEqual(2 * (head as string).length);
    }
    expect(bases).toBeGreaterThan(0);
    expect((await store.load(state.runId)).state).toEqual(state);
    state.outcome = {
      status: 'succeeded',
      reason: 'final_answer',
      usage: state.usage,
      iterations: state.iterations,
      steps: state.steps,
    };
    state.status = 'succeeded';
    await writer.prepare(state, [])();
    expect(await rawState(state.runId)).not.toContain('\n');
    expect((await store.load(state.runId)).state).toEqual(state);
  });

  it('keeps a step whose call compaction folded out of the history with its arguments (a new base)', async () => {
    const state = newRun('run_fold');
    const { writer } = await store.claim(state.runId);
    await writer.prepare(state, [])();
    playTurn(state, 1, '{"q":"folded away"}');
    await writer.prepare(state, [])();
    expect(await rawState(state.runId)).not.toContain('folded away');
    // Compaction replaces the history with a summary: the step is the call's only record now.
    state.messages = [{ role: 'user', content: 'summary of the earlier turns' }];
    state.compactions += 1;
    await writer.prepare(state, [])();
    const raw = await rawState(state.runId);
    expect(raw).not.toContain('\n');
    expect(raw).toContain('folded away');
    expect((await store.load(state.runId)).state).toEqual(state);
  });

  it('resumes a run from a record written in the earlier format (the whole state per checkpoint) and goes on with deltas', async () => {
    const state = newRun('run_earlier');
    const earlier = new RunStore(t.redis, t.keys, { retentionS: 60, stateFormat: 'whole' });
    const first = await earlier.claim(state.runId);
    await first.writer.prepare(state, [])();
    playTurn(state, 1, '{"q":1}');
    await first.writer.prepare(state, [])();
    const written = await rawState(state.runId);
    expect(JSON.parse(written)).toMatchObject({ v: 1, steps: [{ arguments: '{"q":1}' }] });

    // Another scheduler, writing deltas, takes the run over: it reads the record as the run had it.
    const taken = await store.claim(state.runId);
    expect(taken.state).toEqual(state);
    const resumed = taken.state as RunState;
    playTurn(resumed, 2, '{"q":2}');
    await taken.writer.prepare(resumed, [])();
    // A new owner's first checkpoint is a base: it never builds on a record another process wrote.
    expect(await rawState(state.runId)).not.toContain('\n');
    playTurn(resumed, 3, '{"q":3}');
    await taken.writer.prepare(resumed, [])();
    expect(await rawState(state.runId)).toContain('\n');
    expect((await store.load(state.runId)).state).toEqual(resumed);

    // The earlier owner is fenced off: its write changes nothing, deltas included.
    const before = await rawState(state.runId);
    playTurn(state, 9, '{"q":9}');
    await expect(first.writer.prepare(state, [])()).rejects.toMatchObject({ verdict: 'fenced' });
    expect(await rawState(state.runId)).toBe(before);
  });

  it('applies a delta sent twice only once', async () => {
    const state = newRun('run_twice');
    const { writer } = await store.claim(state.runId);
    await writer.prepare(state, [])();
    playTurn(state, 1, '{"q":1}');
    const send = writer.prepare(state, []);
    await send();
    const once = await rawState(state.runId);
    await send();
    expect(await rawState(state.runId)).toBe(once);
    expect((await store.load(state.runId)).state).toEqual(state);
  });
});

describe('state record format: generic over the state, strict on what it reads', () => {
  it('carries fields the writer never heard of, their removal, and arrays that changed rather than grew', () => {
    const writer = new StateDeltaWriter({ maxDeltaRatio: 100 });
    let record = writer.next({ v: 1, list: [1, 2], gone: 'x', nested: { a: 1 } });
    const state: Record<string, unknown> = { v: 1, list: [1, 2], nested: { a: 1 } };
    for (const change of [
      () => (state.added = { by: 'a later release' }),
      () => (state.list = [1, 2, 3]),
      () => (state.list = [9]),
      () => ((state.nested as { a: number }).a = 2),
    ]) {
      change();
      const line = writer.next(structuredClone(state));
      expect(line.startsWith('\n')).toBe(true);
      record += line;
      expect(foldStateRecord(record)).toEqual(state);
    }
    expect(writer.next(structuredClone(state))).toBe('');
  });

  it('refuses a record whose delta is not JSON, or appends to what is not an array, naming the problem', () => {
    expect(() => foldStateRecord('{"v":1}\nnot json')).toThrow(/stored run state: delta 1 is not JSON/);
    expect(() => foldStateRecord('{"v":1}\n[1]')).toThrow(/delta 1 is not a JSON object/);
    expect(() => foldStateRecord('{"v":1}\n{"+":{"v":[2]}}')).toThrow(/appends to v, which is not an array/);
    expect(() => foldStateRecord('')).toThrow(/base is not JSON/);
  });
});
