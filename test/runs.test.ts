import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunEvent } from '@agent-reach/scheduler';
import { startApiServer } from '@agent-reach/scheduler';
import { bareApiDeps, request, TEST_API_KEYS, TEST_MODELS } from './helpers/api.js';
import { startRunsHarness } from './helpers/runs.js';
import { toolMessages } from './helpers/loop.js';
import { waitFor } from './helpers/redis.js';
import { addCommonScenarios } from './helpers/scenarios.js';

describe('runs as jobs: records, approvals, cancellation, sessions, retention', () => {
  let h: Awaited<ReturnType<typeof startRunsHarness>>;
  beforeAll(async () => {
    h = await startRunsHarness({ RUN_RETENTION_S: '600', RUN_RETENTION_COUNT: '1000' });
    addCommonScenarios(h.sim);
    h.sim.addScenario({
      name: 'slow-steps',
      fault: { type: 'latency', ms: 150 },
      turns: Array.from({ length: 6 }, () => ({ tool_calls: [{ name: 'counted_effect', arguments: {} }] })),
    });
  });
  afterAll(async () => h.close());

  const eventsOf = async (runId: string) => (await h.control.events(runId)).map((e) => e.event);

  it('runs a job added to agent-runs and records every event with a timestamp, in order', async () => {
    const runId = await h.control.start({
      agent: 'test_agent',
      input: 'weather in 杭州?',
      model: 'weather-then-answer',
    });
    const outcome = await h.control.wait(runId, 20_000);
    expect(outcome).toMatchObject({ status: 'succeeded', answer: 'It is 阴.' });
    const events = await eventsOf(runId);
    // A one-tool request: no plan is asked for, so no task steps are ticked off.
    expect(events.map((e) => e.type)).toEqual([
      'run_started',
      'llm_request',
      'tool_dispatched',
      'tool_result',
      'llm_request',
      'run_finished',
    ]);
    expect(events[0]).toMatchObject({ type: 'run_started', intent: 'single_tool' });
    expect(events.every((e, i) => e.at >= (events[i - 1]?.at ?? 0))).toBe(true);
    const llm = events.find((e) => e.type === 'llm_request') as Extract<RunEvent, { type: 'llm_request' }>;
    expect(llm).toMatchObject({ model: 'weather-then-answer', finish_reason: 'tool_calls', tool_calls: 1 });
    expect(llm.prompt_tokens).toBeGreaterThan(0);
    const tool = events.find((e) => e.type === 'tool_result') as Extract<RunEvent, { type: 'tool_result' }>;
    expect(tool).toMatchObject({
      tool: 'query_weather',
      arguments: '{"city":"杭州"}',
      ok: true,
      attempts: 1,
    });
    const got = await h.control.get(runId);
    expect(got?.summary).toMatchObject({ status: 'succeeded', agent: 'test_agent', reason: 'final_answer' });
    expect(got?.summary.traceId).toMatch(/^[0-9a-f]{32}$/);
    const listed = await h.control.list({ agent: 'test_agent', status: 'succeeded' });
    expect(listed.map((r) => r.runId)).toContain(runId);
    expect(await h.control.list({ agent: 'nobody' })).toEqual([]);
  });

  it("stores a finished run's events as references to its state and messages, and every reader of events gets each call's arguments and result back", async () => {
    const runId = await h.control.start({
      agent: 'test_agent',
      input: 'weather in 杭州?',
      model: 'weather-then-answer',
    });
    expect(await h.control.wait(runId, 20_000)).toMatchObject({ status: 'succeeded' });
    const raw = await h.producer.xrange(h.keys.runEvents(runId), '-', '+');
    const stored = raw.map(([, fields]) => JSON.parse(fields[1] as string) as Record<string, unknown>);
    // Stored: no call's arguments, no result, no outcome (the state and messages hold them).
    expect(stored.find((e) => e.type === 'tool_result')).toEqual({
      type: 'tool_result',
      tool_call_id: expect.any(String),
      at: expect.any(Number),
    });
    expect(stored.find((e) => e.type === 'run_finished')).not.toHaveProperty('outcome');
    expect(JSON.stringify(stored)).not.toContain('"arguments"');
    // Calls by their ids (names and arguments are the assistant message's), the start without the input.
    expect(stored.find((e) => e.type === 'tool_dispatched')).toEqual({
      type: 'tool_dispatched',
      turn: 1,
      calls: [{ tool_call_id: expect.any(String) }],
      at: expect.any(Number),
    });
    expect(stored.find((e) => e.type === 'llm_request')).not.toHaveProperty('tool_calls');
    expect(stored.find((e) => e.type === 'run_started')).not.toHaveProperty('input');
    // The final state keeps each call's arguments once (the assistant message's), the input once (the
    // first user message's), and each result once: its tool message took the recorded entry in at the
    // run's end (it referred to it while the run lived), and the results hash is gone.
    expect(await h.producer.get(h.keys.runState(runId))).not.toContain('"arguments"');
    expect(await h.producer.get(h.keys.runState(runId))).not.toContain('"input"');
    const history = await h.producer.lrange(h.keys.runMessages(runId), 0, -1);
    const storedTools = history.filter((m) => m.startsWith('{"role":"tool"'));
    expect(storedTools).toHaveLength(1);
    expect(storedTools[0]).toContain('"$entry":');
    expect(await h.producer.exists(h.keys.results(runId))).toBe(0);

    const state = (await h.control.get(runId))?.state;
    const message = state?.messages.find((m) => m.role === 'tool');
    const args = '{"city":"杭州"}';
    expect(state?.steps).toMatchObject([{ tool: 'query_weather', arguments: args, ok: true }]);
    expect(state?.outcome?.steps).toEqual(state?.steps);
    expect(state?.input).toBe('weather in 杭州?');
    const read = await eventsOf(runId);
    expect(read[0]).toMatchObject({ type: 'run_started', agent: 'test_agent', input: 'weather in 杭州?' });
    const callId = state!.steps[0]!.tool_call_id;
    expect(read.find((e) => e.type === 'llm_request' && e.tool_calls === 1)).toMatchObject({
      message: { tool_calls: [{ id: callId, name: 'query_weather', arguments: args }] },
    });
    expect(read.find((e) => e.type === 'tool_dispatched')).toMatchObject({
      calls: [{ tool_call_id: callId, tool: 'query_weather', arguments: args }],
    });
    expect(read.find((e) => e.type === 'tool_result')).toMatchObject({
      turn: 1,
      tool_call_id: callId,
      tool: 'query_weather',
      arguments: args,
      ok: true,
      kind: 'ok',
      answered: 'dispatched',
      executor_id: state!.steps[0]!.executor_id,
      result: { ...JSON.parse(message!.content as string), attempts: 1 },
    });
    expect(read.find((e) => e.type === 'run_finished')).toEqual({
      type: 'run_finished',
      outcome: state?.outcome,
      at: expect.any(Number),
    });
    // The live read (SSE) resolves them too.
    const [first] = await h.control.store.waitEvents(runId, '0', 1000, h.producer);
    const live = await h.control.store.waitEvents(runId, first!.id, 1000, h.producer);
    expect(live.map((e) => e.event)).toEqual(read.slice(1));
  });

  it('parks a run that calls a tool needing approval, holding no worker slot, and resumes it when approved', async () => {
    const runId = await h.control.start({
      agent: 'test_agent',
      input: 'do the sensitive thing',
      model: 'approval',
    });
    await waitFor(
      async () => (await h.control.get(runId))?.summary.status === 'awaiting_approval',
      10_000,
      'parked',
    );
    const job = await h.control.queue.getJob(runId);
    await waitFor(async () => (await job?.isDelayed()) === true, 5000, 'delayed job');
    expect(await h.control.queue.getActiveCount()).toBe(0);
    const state = (await h.control.get(runId))?.state;
    const [pending] = Object.values(state?.approvals ?? {});
    expect(pending).toMatchObject({ tool: 'needs_approval' });
    await h.control.decide({
      runId,
      toolCallId: pending!.toolCallId,
      decision: 'approved',
      by: 'alice',
      reason: 'checked',
    });
    const outcome = await h.control.wait(runId, 20_000);
    expect(outcome).toMatchObject({ status: 'succeeded', answer: 'after the decision: true ' });
    const types = (await eventsOf(runId)).map((e) => e.type);
    expect(types).toContain('approval_requested');
    expect(types).toContain('approval_decided');
    await expect(
      h.control.decide({ runId, toolCallId: pending!.toolCallId, decision: 'rejected' }),
    ).rejects.toMatchObject({
      code: 'RUN_INVALID_STATE',
      message: expect.stringMatching(/already approved/),
    });
  });

  it('gives the model a structured refusal when a person rejects the call', async () => {
    const runId = await h.control.start({
      agent: 'test_agent',
      input: 'do the sensitive thing again',
      model: 'approval',
    });
    await waitFor(
      async () => (await h.control.get(runId))?.summary.status === 'awaiting_approval',
      10_000,
      'parked',
    );
    const [pending] = Object.values((await h.control.get(runId))?.state?.approvals ?? {});
    await h.control.decide({
      runId,
      toolCallId: pending!.toolCallId,
      decision: 'rejected',
      by: 'bob',
      reason: 'not today',
    });
    const outcome = await h.control.wait(runId, 20_000);
    expect(outcome.answer).toBe(
      'after the decision: false refused by a person: not today; do not retry this call',
    );
    const second = h.sim.requests.filter((r) => r.scenario === 'approval' && r.turn === 1).at(-1);
    const refusal = toolMessages(second!.body as never)[0]?.result;
    expect(refusal?.error).toMatchObject({ kind: 'forbidden', decided_by: 'bob', reason: 'not today' });
  });

  it('cancels a running run: it ends cancelled and dispatches nothing more', async () => {
    const runId = await h.control.start({
      agent: 'test_agent',
      input: 'slow steps, cancel me',
      model: 'slow-steps',
    });
    await waitFor(async () => (await h.control.get(runId))?.state?.steps.length === 1, 10_000, 'first step');
    await h.control.cancel(runId);
    const outcome = await h.control.wait(runId, 10_000);
    expect(outcome.status).toBe('cancelled');
    const stepsAtEnd = outcome.steps.length;
    expect(stepsAtEnd).toBeLessThanOrEqual(2);
    const effects = await h.redis.hlen(`${h.prefix}:test:effects`);
    expect(effects).toBeLessThanOrEqual(stepsAtEnd);
  });

  it('cancels a parked run and a queued run', async () => {
    const parked = await h.control.start({
      agent: 'test_agent',
      input: 'park then cancel',
      model: 'approval',
    });
    await waitFor(
      async () => (await h.control.get(parked))?.summary.status === 'awaiting_approval',
      10_000,
      'parked',
    );
    await h.control.cancel(parked);
    expect((await h.control.wait(parked, 10_000)).status).toBe('cancelled');

    await h.schedulers[0]!.worker.worker.pause();
    const queued = await h.control.start({
      agent: 'test_agent',
      input: 'queued then cancelled',
      model: 'weather-then-answer',
    });
    await h.control.cancel(queued);
    void h.schedulers[0]!.worker.worker.resume();
    const outcome = await h.control.wait(queued, 10_000);
    expect(outcome).toMatchObject({ status: 'cancelled', iterations: 0 });
    expect(h.sim.requests.some((r) => JSON.stringify(r.body).includes('queued then cancelled'))).toBe(false);
  });

  it('lists a run from the moment the API accepts it: queued with its time, then running once a scheduler takes it, cancellable throughout', async () => {
    h.sim.addScenario({
      name: 'slow-answer',
      fault: { type: 'latency', ms: 60_000 },
      turns: [{ content: 'late' }],
    });
    const api = await startApiServer(bareApiDeps(h.control, h.producer, h.keys), {
      apiKeys: TEST_API_KEYS,
      port: 0,
      host: '127.0.0.1',
      allowedModels: [...TEST_MODELS, 'slow-answer'],
    });
    const call = (method: string, path: string, body?: unknown) =>
      request(api.url, method, path, body === undefined ? {} : { body });
    const listed = async () =>
      (await call('GET', '/v1/runs?limit=200')).json.runs as Array<{ run_id: string; status: string }>;
    try {
      await h.schedulers[0]!.worker.worker.pause();
      const created = await call('POST', '/v1/runs', {
        agent: 'test_agent',
        input: 'accepted, not taken yet',
        model: 'slow-answer',
      });
      expect(created.status, created.text).toBe(201);
      const runId = created.json.run_id as string;
      const queued = await call('GET', `/v1/runs/${runId}`);
      expect(queued.json).toMatchObject({ run_id: runId, status: 'queued' });
      expect(queued.json.updated_at).toBeGreaterThan(0);
      expect(await listed()).toContainEqual(expect.objectContaining({ run_id: runId, status: 'queued' }));
      // What an executor reads to check a call of the run: its listing, with a live status.
      expect(await h.producer.hget(h.keys.runMeta(runId), 'status')).toBe('queued');

      void h.schedulers[0]!.worker.worker.resume();
      await waitFor(async () => h.sim.inFlight > 0, 10_000, 'the model to be asked');
      const running = await call('GET', `/v1/runs/${runId}`);
      expect(running.json).toMatchObject({ status: 'running' });
      expect(running.json.updated_at).toBeGreaterThanOrEqual(queued.json.updated_at);
      expect(await listed()).toContainEqual(expect.objectContaining({ run_id: runId, status: 'running' }));
      expect((await call('POST', `/v1/runs/${runId}/cancel`)).status).toBe(202);
      expect((await h.control.wait(runId, 15_000)).status).toBe('cancelled');
    } finally {
      void h.schedulers[0]!.worker.worker.resume();
      await api.close();
    }
  });

  it('shares history between the runs of one session', async () => {
    const first = await h.control.start({
      agent: 'test_agent',
      input: 'my name is Ada',
      model: 'remember',
      sessionId: 'sess-1',
    });
    await h.control.wait(first, 10_000);
    const second = await h.control.start({
      agent: 'test_agent',
      input: 'what is my name?',
      model: 'remember',
      sessionId: 'sess-1',
    });
    await h.control.wait(second, 10_000);
    const last = h.sim.requests.filter((r) => r.scenario === 'remember').at(-1)!;
    const texts = (last.body as { messages: Array<{ role: string; content: string }> }).messages.map(
      (m) => `${m.role}:${m.content}`,
    );
    expect(texts).toContain('user:my name is Ada');
    expect(texts).toContain('assistant:noted: my name is Ada');
    expect(texts.at(-1)).toBe('user:what is my name?');
  });

  it('keeps finished runs for the retention time only', async () => {
    const runId = await h.control.start({ agent: 'test_agent', input: 'retention', model: 'echo' });
    await h.control.wait(runId, 10_000);
    for (const key of [
      h.keys.runState(runId),
      h.keys.runEvents(runId),
      h.keys.runMeta(runId),
      h.keys.runMessages(runId),
    ]) {
      const ttl = await h.redis.ttl(key);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(600);
    }
  });
});
