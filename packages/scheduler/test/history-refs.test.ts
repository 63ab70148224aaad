import { beforeEach, describe, expect, it } from 'vitest';
import {
  toolMessageContent,
  toolMessageEntryPrefix,
  toolMessageRef,
  type ToolResult,
} from '@agent-reach/protocol';
import { readRunRecord } from '@agent-reach/archive';
import type { RunEvent, RunState } from '@agent-reach/scheduler';
import { createRunState, RunStore } from '@agent-reach/scheduler/internal';
import { endWithAnswer, useRunStore, type TestRedis } from './store-fixture.js';

/** A result as an executor recorded it: its own fields, then its id (set last, as the executor does). */
const recorded = (id: string, sky: string): ToolResult & { executor_id: string } => ({
  tool_call_id: id,
  name: 'query_weather',
  ok: true,
  status: 'ok',
  duration_ms: 4,
  attempts: 1,
  content: { sky },
  executor_id: 'executor-1',
});

describe("a run's history refers to its recorded results instead of repeating them (real Redis)", () => {
  const fixture = useRunStore();
  let t: TestRedis;
  let store: RunStore;
  beforeEach(() => ({ t, store } = fixture()));

  /**
   * A run whose model called `call_1`, answered by an executor whose record the results hash holds as
   * `entry`; checkpointed as the loop does: the turn, then the result with its tool message.
   */
  async function answeredCall(entry: string): Promise<{ state: RunState; writer: RunCheckpointerOf }> {
    const state = createRunState({
      runId: 'run_refs',
      agent: 'agent_a',
      input: 'weather?',
      deadlineMs: 60_000,
    });
    state.status = 'running';
    const { writer } = await store.claim(state.runId);
    state.messages.push({
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'query_weather', arguments: '{}' } }],
    });
    await writer.prepare(state, [])();
    // The executor records the result (with the results hash's TTL) before the loop reads it.
    await t.redis.hset(t.keys.results(state.runId), 'call_1', entry);
    await t.redis.expire(t.keys.results(state.runId), 3600);
    const { executor_id: executorId, ...result } = recorded('call_1', '晴');
    state.messages.push({ role: 'tool', tool_call_id: 'call_1', content: toolMessageContent(result) });
    const step = {
      turn: 1,
      tool_call_id: 'call_1',
      tool: 'query_weather',
      arguments: '{}',
      ok: true,
      duration_ms: 4,
      attempts: 1,
      kind: 'ok',
      answered: 'dispatched',
      executor_id: executorId,
    } as const;
    state.steps.push(step);
    const event: RunEvent = { type: 'tool_result', at: Date.now(), ...step, result };
    await writer.prepare(state, [event])();
    return { state, writer };
  }
  type RunCheckpointerOf = Awaited<ReturnType<RunStore['claim']>>['writer'];

  const stored = () => t.redis.lrange(t.keys.runMessages('run_refs'), 0, -1);
  /** The stored tool message of `call_1`, as the history's list holds it. */
  const storedTool = async () => (await stored()).find((m) => m.includes('"call_1"') && m.includes('"tool"'));
  const finish = async (state: RunState, writer: RunCheckpointerOf) => {
    endWithAnswer(state, 'sunny');
    await writer.prepare(state, [])();
  };

  it('stores an answered tool message as a reference to its result, reads it back as the model saw it, and keeps the results hash without a TTL while the run lives', async () => {
    const { state } = await answeredCall(JSON.stringify(recorded('call_1', '晴')));
    expect(await storedTool()).toBe(toolMessageRef('call_1'));
    expect((await stored()).join('\n')).not.toContain('晴');
    // Whatever TTL a call's record gave the results hash, the history referring to it keeps it.
    expect(await t.redis.ttl(t.keys.results(state.runId))).toBe(-1);

    expect((await store.load(state.runId)).state?.messages).toEqual(state.messages);
    const resumed = await store.claim(state.runId);
    expect(resumed.state?.messages).toEqual(state.messages);
  });

  it("stores a tool message whole when the results hash does not hold the result the step expected, and drops that entry at the run's end", async () => {
    // Another result recorded first (the first recorded wins): the message the model read is not it.
    const { state, writer } = await answeredCall(JSON.stringify(recorded('call_1', '雨')));
    expect(JSON.parse((await storedTool()) as string)).toEqual(state.messages.find((m) => m.role === 'tool'));
    expect((await store.load(state.runId)).state?.messages).toEqual(state.messages);

    await finish(state, writer);
    expect(await t.redis.hexists(t.keys.results(state.runId), 'call_1')).toBe(0);
  });

  it("takes a referred result into its tool message at the run's end, drops it from the results hash, and hands the archive the message whole", async () => {
    const entry = JSON.stringify(recorded('call_1', '晴'));
    const { state, writer } = await answeredCall(entry);
    await finish(state, writer);
    expect(await t.redis.exists(t.keys.results(state.runId))).toBe(0);
    expect(await storedTool()).toBe(`${toolMessageEntryPrefix('call_1')}${entry}}`);
    const ttl = await t.redis.ttl(t.keys.runMessages(state.runId));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(60);

    const record = await readRunRecord(t.redis, t.keys, state.runId);
    expect(record?.messages.map((m) => JSON.parse(m) as unknown)).toEqual(state.messages);
    expect((await store.load(state.runId)).state?.messages).toEqual(state.messages);
  });
});
