import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRunsHarness } from './helpers/runs.js';
import { waitFor } from './helpers/redis.js';
import { addCommonScenarios } from './helpers/scenarios.js';

describe('checkpoint formats: a scheduler resumes records of the earlier format (real scheduler, executor, llm-sim)', () => {
  let h: Awaited<ReturnType<typeof startRunsHarness>>;
  beforeAll(async () => {
    h = await startRunsHarness({ RUN_RETENTION_S: '600' });
    addCommonScenarios(h.sim);
  });
  afterAll(async () => h.close());

  it('finishes a parked run whose state was written whole, as the release before delta checkpoints wrote it', async () => {
    const runId = await h.control.start({
      agent: 'test_agent',
      input: 'do the sensitive thing, upgraded',
      model: 'approval',
    });
    await waitFor(
      async () => (await h.control.get(runId))?.summary.status === 'awaiting_approval',
      10_000,
      'parked',
    );
    const key = h.keys.runState(runId);
    // This release parked it with a base and the lines of what changed since.
    expect(await h.producer.get(key)).toContain('\n');
    const parked = (await h.control.store.load(runId)).state;
    if (!parked) throw new Error('the parked run has no record');
    // The record as the earlier release left it: the whole state (without messages), one JSON object.
    const { messages: _messages, ...whole } = parked;
    await h.producer.set(key, JSON.stringify(whole));
    expect((await h.control.store.load(runId)).state).toEqual(parked);

    const [pending] = Object.values(parked.approvals);
    await h.control.decide({ runId, toolCallId: pending!.toolCallId, decision: 'approved', by: 'alice' });
    const outcome = await h.control.wait(runId, 20_000);
    expect(outcome).toMatchObject({ status: 'succeeded', answer: 'after the decision: true ' });
    // Its end wrote the state whole again, and the record reads back with the steps' arguments.
    expect(await h.producer.get(key)).not.toContain('\n');
    const done = (await h.control.store.load(runId)).state;
    expect(done?.steps.map((s) => s.tool)).toEqual(['needs_approval']);
    const calls = done?.messages.flatMap((m) => (m.role === 'assistant' ? (m.tool_calls ?? []) : []));
    const call = calls?.[0];
    expect(call?.type).toBe('function');
    expect(done?.steps[0]?.arguments).toBe(call?.type === 'function' ? call.function.arguments : undefined);
  });
});
