import { beforeEach, describe, expect, it } from 'vitest';
import {
  toolMessageContent,
  toolMessageEntryPrefix,
  type RunOutcome,
  type ToolResult,
} from '@agent-reach/protocol';
import { callLedgerEntry } from '@agent-reach/shared';
import type { RunEvent, RunState } from '@agent-reach/scheduler';
import { RunStore, type RunCheckpointer } from '@agent-reach/scheduler/internal';
import { endWithAnswer, runningRun, useRunStore, type TestRedis } from './store-fixture.js';

const started = (): RunEvent => ({ type: 'run_started', at: Date.now(), agent: 'a', input: 'x', model: 'm' });

describe('run store: fenced, sequenced checkpoints (real Redis)', () => {
  const fixture = useRunStore();
  let t: TestRedis;
  let store: RunStore;
  beforeEach(() => ({ t, store } = fixture()));

  const newRun = runningRun;
  /** Ends the run with its final answer (its next checkpoint is its last). */
  const finish = (state: RunState) => {
    state.outcome = {
      status: 'succeeded',
      reason: 'final_answer',
      usage: state.usage,
      iterations: 1,
      steps: [],
    };
    state.status = 'succeeded';
  };
  const eventTypes = async (runId: string) => (await store.events(runId)).map((e) => e.event.type);

  it('refuses every write of a scheduler that lost the run once another one claimed it, and changes nothing', async () => {
    const state = newRun();
    const first = await store.claim(state.runId);
    await first.writer.prepare(state, [started()])();
    const second = await store.claim(state.runId);
    expect(second.state?.messages).toHaveLength(1);

    state.messages.push({ role: 'assistant', content: 'stale answer' });
    await expect(first.writer.prepare(state, [])()).rejects.toMatchObject({
      name: 'CheckpointRefused',
      verdict: 'fenced',
      lost: true,
    });
    expect(await t.redis.llen(t.keys.runMessages(state.runId))).toBe(1);
    expect(await eventTypes(state.runId)).toEqual(['run_started']);
  });

  it("counts the stored messages itself at a writer's first checkpoint, so a record another release appended to without the listing's count is taken over", async () => {
    const state = newRun();
    const first = await store.claim(state.runId);
    await first.writer.prepare(state, [started()])();
    // A scheduler of the release before this one appends a message and leaves the listing's count alone.
    const other = { role: 'assistant', content: 'from the release before' } as const;
    await t.redis.rpush(t.keys.runMessages(state.runId), JSON.stringify(other));
    const { state: taken, writer } = await store.claim(state.runId);
    expect(taken?.messages).toEqual([...state.messages, other]);
    taken!.messages.push({ role: 'assistant', content: 'one' });
    await writer.prepare(taken!, [])();
    taken!.messages.push({ role: 'assistant', content: 'two' });
    await writer.prepare(taken!, [])();
    expect((await store.load(state.runId)).state?.messages).toEqual(taken!.messages);
  });

  it('applies a checkpoint sent twice (a re-sent command after a reconnect) only once', async () => {
    const state = newRun();
    const { writer } = await store.claim(state.runId);
    await writer.prepare(state, [started()])();
    state.messages.push({ role: 'assistant', content: 'one' });
    const send = writer.prepare(state, [
      { type: 'guard', at: 1, guard: 'repeat', action: 'nudge', report: 'r' },
    ]);
    await send();
    await send();
    expect(await t.redis.lrange(t.keys.runMessages(state.runId), 0, -1)).toHaveLength(2);
    expect(await eventTypes(state.runId)).toEqual(['run_started', 'guard']);
    expect(await t.redis.hget(t.keys.runMeta(state.runId), 'seq')).toBe('2');
  });

  it('refuses a checkpoint that skips a step, writing nothing of it', async () => {
    const state = newRun();
    const { writer } = await store.claim(state.runId);
    await writer.prepare(state, [started()])();
    state.messages.push({ role: 'assistant', content: 'lost step' });
    writer.prepare(state, []); // prepared, never sent
    state.messages.push({ role: 'user', content: 'next' });
    await expect(writer.prepare(state, [])()).rejects.toMatchObject({ verdict: 'gap', lost: false });
    expect(await t.redis.llen(t.keys.runMessages(state.runId))).toBe(1);
  });

  it('writes what the run was when the step ended, not what it became while the write waited', async () => {
    const state = newRun();
    const { writer } = await store.claim(state.runId);
    const firstStep = writer.prepare(state, [started()]);
    state.messages.push({ role: 'assistant', content: 'pushed after the step' });
    const secondStep = writer.prepare(state, []);
    await firstStep();
    expect(await t.redis.llen(t.keys.runMessages(state.runId))).toBe(1);
    await secondStep();
    const stored = (await t.redis.lrange(t.keys.runMessages(state.runId), 0, -1)).map(
      (m) => JSON.parse(m) as { content: string },
    );
    expect(stored.map((m) => m.content)).toEqual(['hello', 'pushed after the step']);
  });

  it('never writes a finished run again and keeps its retention TTL on every key', async () => {
    const state = newRun();
    const { writer } = await store.claim(state.runId);
    finish(state);
    await writer.prepare(state, [started()])();
    const { writer: late } = await store.claim(state.runId);
    state.messages.push({ role: 'assistant', content: 'after the end' });
    await expect(late.prepare(state, [])()).rejects.toMatchObject({ verdict: 'final' });
    for (const key of [
      t.keys.runState(state.runId),
      t.keys.runMessages(state.runId),
      t.keys.runMeta(state.runId),
    ]) {
      const ttl = await t.redis.ttl(key);
      expect(ttl, key).toBeGreaterThan(0);
      expect(ttl, key).toBeLessThanOrEqual(60);
    }
  });

  it('finishes a run with an event stream that keeps every event and id, its TTL, and less memory than the stream as appended', async () => {
    const state = newRun();
    const { writer } = await store.claim(state.runId);
    const guard = (i: number): RunEvent => ({
      type: 'guard',
      at: i,
      guard: 'repeat',
      action: 'nudge',
      report: `report ${i} ${'x'.repeat(200)}`,
    });
    await writer.prepare(state, [started(), ...Array.from({ length: 20 }, (_, i) => guard(i))])();
    const key = t.keys.runEvents(state.runId);
    // The same entries appended to a stream of its own: what the run's stream weighs before its end.
    const appended = `${key}:as-appended`;
    for (const [id, fields] of await t.redis.xrange(key, '-', '+'))
      await t.redis.xadd(appended, id, ...fields);
    const before = await t.redis.xrange(key, '-', '+');
    finish(state);
    await writer.prepare(state, [guard(20)])();
    await t.redis.xadd(appended, '*', 'e', 'x');
    const after = await t.redis.xrange(key, '-', '+');
    expect(after.slice(0, before.length)).toEqual(before);
    expect(after).toHaveLength(before.length + 1);
    const ttl = await t.redis.ttl(key);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(60);
    const usage = async (k: string) => Number(await t.redis.call('MEMORY', 'USAGE', k, 'SAMPLES', '0'));
    expect(await usage(key)).toBeLessThan(await usage(appended));
  });

  const ARGS = '{"city":"上海"}';
  /**
   * Plays one call of a model turn through the writer as the loop records it (the turn, then the result,
   * then the run's end); `forModel` is what the tool message says instead of the result. Returns every
   * event emitted, in order.
   */
  const playCall = async (state: RunState, writer: RunCheckpointer, forModel?: string) => {
    const emitted: RunEvent[] = [];
    const send = async (events: RunEvent[]) => {
      emitted.push(...events);
      await writer.prepare(state, events)();
    };
    state.messages.push({
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'query_weather', arguments: ARGS } }],
    });
    await send([
      { type: 'run_started', at: 0, agent: state.agent, input: state.input, model: 'm' },
      {
        type: 'llm_request',
        at: 1,
        turn: 1,
        model: 'm',
        latency_ms: 3,
        prompt_tokens: 10,
        completion_tokens: 2,
        finish_reason: 'tool_calls',
        tool_calls: 1,
        tools_offered: ['query_weather'],
        message: { content: null, tool_calls: [{ id: 'call_1', name: 'query_weather', arguments: ARGS }] },
      },
    ]);
    const result: ToolResult = {
      tool_call_id: 'call_1',
      name: 'query_weather',
      ok: true,
      status: 'ok',
      duration_ms: 5,
      attempts: 2,
      content: { sky: '晴' },
    };
    state.messages.push({
      role: 'tool',
      tool_call_id: 'call_1',
      content: forModel ?? toolMessageContent(result),
    });
    const shared = {
      turn: 1,
      tool_call_id: 'call_1',
      tool: 'query_weather',
      arguments: ARGS,
      ok: true,
      duration_ms: 5,
      attempts: 2,
      kind: 'ok',
      answered: 'dispatched',
      executor_id: 'executor-1',
    } as const;
    state.steps.push({ ...shared });
    // Recorded by the executor before the loop reads it; and the result of a call whose tool message
    // compaction folded away.
    await t.redis.hset(t.keys.results(state.runId), {
      call_1: JSON.stringify({ ...result, executor_id: 'executor-1' }),
      call_0: JSON.stringify({ ...result, tool_call_id: 'call_0', executor_id: 'executor-1' }),
    });
    await send([
      {
        type: 'tool_dispatched',
        at: 2,
        turn: 1,
        calls: [{ tool_call_id: 'call_1', tool: 'query_weather', arguments: ARGS }],
      },
      { type: 'tool_result', at: 3, ...shared, result },
    ]);
    await t.redis.hset(t.keys.runStarts(state.runId), 'call_1', 'started:2:executor-1');
    endWithAnswer(state, 'sunny');
    await send([{ type: 'run_finished', at: 4, outcome: state.outcome as RunOutcome }]);
    return emitted;
  };

  it("keeps a finished run's call arguments, results and outcome once, and reads back every event and the state exactly as the run had them", async () => {
    const state = newRun();
    const { writer } = await store.claim(state.runId);
    const emitted = await playCall(state, writer);

    expect((await store.events(state.runId)).map((e) => e.event)).toEqual(emitted);
    expect((await store.load(state.runId)).state).toEqual(state);
    // Stored: the arguments in the assistant message only, the result in the tool message only.
    const raw = (await t.redis.xrange(t.keys.runEvents(state.runId), '-', '+')).map(([, f]) => f[1]);
    expect(raw.join('\n')).not.toContain('上海');
    expect(raw.join('\n')).not.toContain('晴');
    expect(await t.redis.get(t.keys.runState(state.runId))).not.toContain('上海');
    // Calls by id alone, the start without the input: the assistant message and the state hold them.
    expect(raw.join('\n')).not.toContain('"name"');
    expect(raw.join('\n')).not.toContain('"input"');
    expect(await t.redis.get(t.keys.runState(state.runId))).not.toContain('"input"');
    // A final run's ledger and starts are gone (no call of it starts again). The tool message, which
    // referred to its result while the run lived, took the entry in: the entry left the hash; the folded
    // call's stays. The rest keeps its TTL.
    expect(await t.redis.exists(t.keys.runCalls(state.runId), t.keys.runStarts(state.runId))).toBe(0);
    expect(await t.redis.hkeys(t.keys.results(state.runId))).toEqual(['call_0']);
    const history = await t.redis.lrange(t.keys.runMessages(state.runId), 0, -1);
    const entry = await t.redis.hget(t.keys.results(state.runId), 'call_0');
    expect(history.filter((m) => m.includes('晴'))).toEqual([
      `${toolMessageEntryPrefix('call_1')}${entry?.replaceAll('call_0', 'call_1')}}`,
    ]);
    expect(await t.redis.ttl(t.keys.results(state.runId))).toBeGreaterThan(0);
    expect(await t.redis.ttl(t.keys.results(state.runId))).toBeLessThanOrEqual(60);
  });

  it("stores a run_started whole when the run's state holds another input, and reads it back as it was", async () => {
    const state = newRun();
    const { writer } = await store.claim(state.runId);
    const other = started();
    await writer.prepare(state, [other])();
    expect((await store.events(state.runId)).map((e) => e.event)).toEqual([other]);
    const raw = await t.redis.xrange(t.keys.runEvents(state.runId), '-', '+');
    expect(raw.map(([, fields]) => JSON.parse(fields[1] as string) as unknown)).toEqual([other]);
  });

  it("reads a finished run recorded before calls were stored by id (names, counts, the state's input, the results hash whole) exactly as the run had it", async () => {
    const state = newRun();
    const { writer } = await store.claim(state.runId);
    const emitted = await playCall(state, writer);
    const k = (key: (id: string) => string) => key(state.runId);
    // The record as the release before wrote it: calls with their names, counts, starts and the final
    // state's outcome whole, the results hash with every call's entry.
    const previous = (e: RunEvent): object => {
      switch (e.type) {
        case 'llm_request':
          return {
            ...e,
            message: { ...e.message, tool_calls: e.message.tool_calls?.map(({ arguments: _a, ...c }) => c) },
          };
        case 'tool_dispatched':
          return { ...e, calls: e.calls.map(({ arguments: _a, ...c }) => c) };
        case 'tool_result':
          return { type: e.type, tool_call_id: e.tool_call_id, at: e.at };
        case 'run_finished':
          return { type: e.type, at: e.at };
        default:
          return e;
      }
    };
    await t.redis.del(k(t.keys.runEvents));
    for (const e of emitted) await t.redis.xadd(k(t.keys.runEvents), '*', 'e', JSON.stringify(previous(e)));
    const { messages: _m, outcome, ...rest } = state;
    const { steps: _s, ...outcomeRest } = outcome!;
    const steps = state.steps.map(({ arguments: _a, ...s }) => s);
    await t.redis.set(k(t.keys.runState), JSON.stringify({ ...rest, steps, outcome: outcomeRest }));
    const recorded = {
      ...JSON.parse(toolMessageContent(emitted.find((e) => e.type === 'tool_result')!.result!)),
      attempts: 2,
      executor_id: 'executor-1',
    };
    await t.redis.hset(k(t.keys.results), 'call_1', JSON.stringify(recorded));

    expect((await store.events(state.runId)).map((e) => e.event)).toEqual(emitted);
    expect((await store.load(state.runId)).state).toEqual(state);
  });

  it("stores an event whole when the run's record could not give it back, and reads it back as it was", async () => {
    const state = newRun();
    const { writer } = await store.claim(state.runId);
    // The model read a cut of the result (as a context provider's): the tool message is not the result.
    const emitted = await playCall(state, writer, 'sky: 晴 (cut)');

    expect((await store.events(state.runId)).map((e) => e.event)).toEqual(emitted);
    const raw = (await t.redis.xrange(t.keys.runEvents(state.runId), '-', '+')).map(
      ([, f]) => JSON.parse(f[1] as string) as { type: string; result?: unknown },
    );
    expect(raw.find((e) => e.type === 'tool_result')?.result).toMatchObject({ content: { sky: '晴' } });
  });

  it("reads a tool_result of the previous release's record (without arguments and result) with both put back", async () => {
    const state = newRun();
    const { writer } = await store.claim(state.runId);
    const emitted = await playCall(state, writer);
    const { arguments: _args, result: _result, ...older } = emitted.find((e) => e.type === 'tool_result')!;
    await t.redis.xadd(t.keys.runEvents(state.runId), '*', 'e', JSON.stringify(older));
    const events = (await store.events(state.runId)).map((e) => e.event);
    expect(events.at(-1)).toEqual(emitted.find((e) => e.type === 'tool_result'));
  });

  it('records each call of a model turn in the run ledger with the checkpoint that records the turn', async () => {
    const state = newRun();
    const { writer } = await store.claim(state.runId);
    state.messages.push({
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: 'call_1', type: 'function', function: { name: 'query_weather', arguments: '{"city":"上海"}' } },
      ],
    });
    await writer.prepare(state, [])();
    expect(await t.redis.hget(t.keys.runCalls(state.runId), 'call_1')).toBe(
      callLedgerEntry({ agent: 'agent_a', name: 'query_weather', arguments: '{"city":"上海"}' }),
    );
  });

  it("keeps the listing as of the run's last checkpoint, and a new owner's first checkpoint writes all of it", async () => {
    const state = newRun();
    state.input = `${'长'.repeat(30)} ${'x'.repeat(120)}`;
    const first = await store.claim(state.runId);
    await first.writer.prepare(state, [started()])();
    state.iterations = 1;
    state.steps.push({
      turn: 1,
      tool_call_id: 'call_1',
      tool: 'query_weather',
      arguments: '{}',
      ok: false,
      duration_ms: 1,
      attempts: 2,
      kind: 'error',
      answered: 'dispatched',
      error_kind: 'timeout',
    });
    await first.writer.prepare(state, [])();
    expect(await store.summary(state.runId)).toMatchObject({
      status: 'running',
      iterations: 1,
      tools: ['query_weather'],
      errorKinds: ['timeout'],
      calls: 1,
      errors: 1,
      retries: 1,
      inputPreview: state.input.slice(0, 160),
    });

    // Fields lost from the hash come back with the next owner's first checkpoint.
    await t.redis.hdel(t.keys.runMeta(state.runId), 'agent', 'inputPreview', 'tools');
    const second = await store.claim(state.runId);
    finish(state);
    await second.writer.prepare(state, [])();
    expect(await store.summary(state.runId)).toMatchObject({
      agent: 'agent_a',
      status: 'succeeded',
      reason: 'final_answer',
      tools: ['query_weather'],
      inputPreview: state.input.slice(0, 160),
    });
  });

  it('refuses a stored run state of an unknown version with an error naming the version', async () => {
    const state = newRun();
    const { writer } = await store.claim(state.runId);
    await writer.prepare(state, [started()])();
    const stored = JSON.parse((await t.redis.get(t.keys.runState(state.runId))) ?? '{}') as { v: number };
    await t.redis.set(t.keys.runState(state.runId), JSON.stringify({ ...stored, v: 3 }));
    const refusal = {
      name: 'UnsupportedVersionError',
      message: 'stored run state has wire version 3; this release reads versions 1 and 2',
    };
    await expect(store.load(state.runId)).rejects.toMatchObject(refusal);
    await expect(store.claim(state.runId)).rejects.toMatchObject(refusal);
  });

  it('reads the steps of a run state stored by the previous release (camelCase) with snake_case names', async () => {
    const state = newRun();
    const { writer } = await store.claim(state.runId);
    await writer.prepare(state, [started()])();
    const stored = JSON.parse((await t.redis.get(t.keys.runState(state.runId))) ?? '{}') as object;
    const legacy = {
      turn: 1,
      toolCallId: 'call_1',
      tool: 't',
      arguments: '{}',
      ok: false,
      errorKind: 'timeout',
      durationMs: 7,
      attempts: 3,
    };
    await t.redis.set(t.keys.runState(state.runId), JSON.stringify({ ...stored, v: 1, steps: [legacy] }));
    expect((await store.load(state.runId)).state?.steps).toEqual([
      {
        turn: 1,
        tool_call_id: 'call_1',
        tool: 't',
        arguments: '{}',
        ok: false,
        error_kind: 'timeout',
        duration_ms: 7,
        attempts: 3,
      },
    ]);
  });

  it('reads the events of the previous release, which named calls toolCallId, with tool_call_id', async () => {
    const state = newRun();
    const { writer } = await store.claim(state.runId);
    await writer.prepare(state, [started()])();
    await t.redis.xadd(
      t.keys.runEvents(state.runId),
      '*',
      'e',
      JSON.stringify({ type: 'approval_requested', at: 1, toolCallId: 'call_1', tool: 't', arguments: '{}' }),
    );
    await t.redis.xadd(
      t.keys.runEvents(state.runId),
      '*',
      'e',
      JSON.stringify({
        type: 'tool_dispatched',
        at: 2,
        turn: 1,
        calls: [{ toolCallId: 'call_1', tool: 't', arguments: '{}' }],
      }),
    );
    const [, requested, dispatched] = (await store.events(state.runId)).map((e) => e.event);
    expect(requested).toEqual({
      type: 'approval_requested',
      at: 1,
      tool_call_id: 'call_1',
      tool: 't',
      arguments: '{}',
    });
    expect(dispatched).toEqual({
      type: 'tool_dispatched',
      at: 2,
      turn: 1,
      calls: [{ tool_call_id: 'call_1', tool: 't', arguments: '{}' }],
    });
  });

  it('ignores and reports a decision keyed by a hostile id, with no prototype touched', async () => {
    const state = newRun();
    state.approvals.call_1 = { toolCallId: 'call_1', tool: 't', arguments: '{}', requestedAt: 1 };
    const { writer } = await store.claim(state.runId);
    await writer.prepare(state, [])();
    await t.redis.hset(
      t.keys.runApprovals(state.runId),
      '__proto__',
      JSON.stringify({ decision: 'approved', polluted: 'yes' }),
      'call_1',
      JSON.stringify({ decision: 'approved', by: 'ops' }),
    );
    const claim = await store.claim(state.runId);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(({} as Record<string, unknown>).decision).toBeUndefined();
    expect(claim.problems).toEqual([expect.stringContaining('__proto__')]);
    expect(claim.state?.approvals.call_1).toMatchObject({ decision: 'approved', by: 'ops' });
    const read = await store.load(state.runId);
    expect(read.state?.approvals.call_1?.decision).toBe('approved');
  });
});
