import { randomUUID } from 'node:crypto';
import { addCommonScenarios } from './helpers/scenarios.js';
import { Queue } from 'bullmq';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  RUN_ID_PATTERN as PLATFORM_RUN_ID_PATTERN,
  runJobOptions as platformJobOptions,
} from '@agent-reach/protocol';
import { AgentReachApiError, createClient, parseSse, type StreamedEvent } from '@agent-reach/client';
import { enqueueRun, RUN_ID_PATTERN, runJobOptions } from '@agent-reach/client/queue';
import { LIMITED_KEY, startApiHarness, type ApiHarness } from './helpers/api.js';
import { REDIS_URL } from './helpers/redis.js';

/** The error a promise rejects with, for assertions on its fields. */
async function failure(p: Promise<unknown>): Promise<AgentReachApiError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(AgentReachApiError);
    return err as AgentReachApiError;
  }
  throw new Error('expected a rejection');
}

describe('the client of other services: HTTP methods, event streams, enqueueRun', () => {
  let h: ApiHarness;
  beforeAll(async () => {
    h = await startApiHarness();
    addCommonScenarios(h.sim);
  });
  afterAll(async () => h?.close());

  const collect = async (events: AsyncIterable<StreamedEvent>) => {
    const out: StreamedEvent[] = [];
    for await (const e of events) out.push(e);
    return out;
  };

  it('creates a run, waits for it and reads its outcome', async () => {
    const created = await h.client.createRun({
      agent: 'test_agent',
      input: 'weather in 杭州?',
      model: 'weather-then-answer',
      metadata: { caller: 'client-test' },
    });
    expect(created.status).toBe('queued');
    const done = await h.client.waitForRun(created.run_id, { timeoutMs: 20_000 });
    expect(done).toMatchObject({
      run_id: created.run_id,
      status: 'succeeded',
      answer: 'It is 阴.',
      metadata: { caller: 'client-test' },
    });
    expect(done.steps.map((s) => s.tool)).toEqual(['query_weather']);
    expect(await h.client.getRun(created.run_id)).toEqual(done);
  });

  it("streams a run's events as an async iterator, in stored order, and resumes after lastEventId", async () => {
    const { run_id: runId } = await h.client.createRun({
      agent: 'test_agent',
      input: 'weather?',
      model: 'weather-then-answer',
    });
    const all = await collect(h.client.streamEvents(runId));
    const stored = await h.control.events(runId);
    expect(all.map((e) => e.id)).toEqual(stored.map((e) => e.id));
    expect(all.map((e) => e.data)).toEqual(stored.map((e) => e.event));
    expect(all.at(-1)?.type).toBe('run_finished');
    const rest = await collect(h.client.streamEvents(runId, { lastEventId: all[1]!.id }));
    expect(rest.map((e) => e.id)).toEqual(all.slice(2).map((e) => e.id));
  });

  it('approves a parked call from inside a live event stream, which then runs on to run_finished', async () => {
    const { run_id: runId } = await h.client.createRun({
      agent: 'test_agent',
      input: 'sensitive',
      model: 'approval',
    });
    const seen: string[] = [];
    for await (const e of h.client.streamEvents(runId)) {
      seen.push(e.type);
      if (e.type === 'approval_requested') {
        const decision = await h.client.approve(runId, e.data.tool_call_id, { reason: 'fine' });
        expect(decision).toMatchObject({
          decision: 'approved',
          by: 'tester',
          reason: 'fine',
          tool: 'needs_approval',
        });
      }
    }
    expect(seen).toEqual(expect.arrayContaining(['approval_requested', 'approval_decided', 'run_finished']));
    expect((await h.client.getRun(runId)).answer).toBe('after the decision: true ');
  });

  it('rejects a parked call and cancels another parked run through the client', async () => {
    const parkedRun = async () => {
      const { run_id: runId } = await h.client.createRun({
        agent: 'test_agent',
        input: 'sensitive',
        model: 'approval',
      });
      for await (const e of h.client.streamEvents(runId)) {
        if (e.type === 'approval_requested') return { runId, toolCallId: e.data.tool_call_id };
      }
      throw new Error('the run never asked for approval');
    };
    const first = await parkedRun();
    // The approver recorded is the client's API key (its name), whatever the caller would call itself.
    expect(await h.client.reject(first.runId, first.toolCallId, { reason: 'no' })).toMatchObject({
      decision: 'rejected',
      by: 'tester',
    });
    expect((await h.client.waitForRun(first.runId, { timeoutMs: 20_000 })).answer).toMatch(
      /^after the decision: false refused by a person: no/,
    );

    const second = await parkedRun();
    expect((await h.client.cancel(second.runId)).cancel_requested).toBe(true);
    expect(await h.client.waitForRun(second.runId, { timeoutMs: 20_000 })).toMatchObject({
      status: 'cancelled',
      reason: 'cancelled',
    });
  });

  it('surfaces API errors as AgentReachApiError with the status and the stable code', async () => {
    expect(await failure(h.client.getRun('run_missing'))).toMatchObject({ status: 404, code: 'NOT_FOUND' });
    expect(await failure(h.client.createRun({ agent: 'nobody', input: 'hi' }))).toMatchObject({
      status: 422,
      code: 'UNKNOWN_AGENT',
    });
    const wrongKey = createClient({ baseUrl: h.url, apiKey: 'not-a-key' });
    expect(await failure(wrongKey.listAgents())).toMatchObject({ status: 401, code: 'UNAUTHORIZED' });
    const limited = createClient({ baseUrl: `${h.url}/`, apiKey: LIMITED_KEY });
    expect(await failure(limited.createRun({ agent: 'test_agent', input: 'hi' }))).toMatchObject({
      status: 403,
      code: 'FORBIDDEN',
    });
    await h.client.createRun({ agent: 'weather_only', input: 'a', idempotencyKey: 'client-idem' });
    expect(
      await failure(h.client.createRun({ agent: 'weather_only', input: 'b', idempotencyKey: 'client-idem' })),
    ).toMatchObject({ status: 409, code: 'CONFLICT' });
    const streamError = await failure(collect(h.client.streamEvents('run_missing')));
    expect(streamError).toMatchObject({ status: 404, code: 'NOT_FOUND' });
    const nowhere = createClient({ baseUrl: 'http://127.0.0.1:1', apiKey: 'x' });
    expect(await failure(nowhere.getRun('run_x'))).toMatchObject({ status: 0, code: 'NETWORK' });
  });

  it('gives up waiting for a run that does not end in time with a TIMEOUT error', async () => {
    const { run_id: runId } = await h.client.createRun({
      agent: 'test_agent',
      input: 'sensitive',
      model: 'approval',
    });
    const started = Date.now();
    expect(await failure(h.client.waitForRun(runId, { timeoutMs: 400 }))).toMatchObject({
      status: 0,
      code: 'TIMEOUT',
    });
    expect(Date.now() - started).toBeLessThan(5000);
    await h.client.cancel(runId);
  });

  it('continues a session, lists runs and lists agents through the client', async () => {
    const { session_id: sessionId } = await h.client.createSession();
    const first = await h.client.sendMessage(sessionId, {
      agent: 'test_agent',
      input: 'my name is Ada',
      model: 'remember',
    });
    await h.client.waitForRun(first.run_id, { timeoutMs: 20_000 });
    const second = await h.client.sendMessage(sessionId, {
      agent: 'test_agent',
      input: 'who am I?',
      model: 'remember',
    });
    expect((await h.client.waitForRun(second.run_id, { timeoutMs: 20_000 })).session_id).toBe(sessionId);
    const last = h.sim.requests.filter((r) => r.scenario === 'remember').at(-1)!;
    expect(JSON.stringify(last.body)).toContain('noted: my name is Ada');

    const page = await h.client.listRuns({ agent: 'test_agent', status: 'succeeded', limit: 1 });
    expect(page.runs).toHaveLength(1);
    expect(page.runs[0]!.run_id).toBe(second.run_id);
    expect(page.next_offset).toBe(1);
    const agents = await h.client.listAgents();
    expect(agents.map((a) => a.name)).toEqual(['test_agent', 'weather_only']);
  });

  it('starts a run with enqueueRun straight on agent-runs, once per run id', async () => {
    const runId = `enq-${Date.now()}`;
    const job = {
      prefix: h.prefix,
      runId,
      agent: 'test_agent',
      input: 'weather?',
      model: 'weather-then-answer',
      metadata: { via: 'enqueueRun' },
    };
    expect(await enqueueRun({ ...job, connection: h.producer })).toEqual({ runId });
    expect(await enqueueRun({ ...job, redisUrl: REDIS_URL })).toEqual({ runId });
    const done = await h.client.waitForRun(runId, { timeoutMs: 20_000 });
    expect(done).toMatchObject({ status: 'succeeded', answer: 'It is 阴.', metadata: { via: 'enqueueRun' } });
    const started = (await h.control.events(runId)).filter((e) => e.event.type === 'run_started');
    expect(started).toHaveLength(1);
    expect(h.producer.status).toBe('ready');
  });

  it('lists a run started with enqueueRun as running from the moment a scheduler takes it, before its first model answer', async () => {
    h.sim.addScenario({
      name: 'slow-enqueued',
      fault: { type: 'latency', ms: 60_000 },
      turns: [{ content: 'late' }],
    });
    const runId = `enq-slow-${Date.now()}`;
    await enqueueRun({
      prefix: h.prefix,
      runId,
      agent: 'test_agent',
      input: 'taken, not answered yet',
      model: 'slow-enqueued',
      connection: h.producer,
    });
    const asked = () => h.sim.inFlight > 0;
    for (const deadline = Date.now() + 20_000; !asked();) {
      if (Date.now() > deadline) throw new Error('the model was never asked');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const run = await h.client.getRun(runId);
    expect(run).toMatchObject({ run_id: runId, status: 'running' });
    expect(run.updated_at).toBeGreaterThan(0);
    const listed = await h.client.listRuns({ limit: 200 });
    expect(listed.runs).toContainEqual(expect.objectContaining({ run_id: runId, status: 'running' }));
    await h.client.cancel(runId);
    expect((await h.client.waitForRun(runId, { timeoutMs: 20_000 })).status).toBe('cancelled');
  });

  it("starts a run with enqueueRun in the caller's trace when given its traceparent, and refuses a malformed one", async () => {
    const runId = `enq-traced-${Date.now()}`;
    const trace = randomUUID().replace(/-/g, '');
    const base = { prefix: h.prefix, agent: 'test_agent', input: 'weather?', model: 'weather-then-answer' };
    const traceParent = `00-${trace}-${'b'.repeat(16)}-01`;
    await enqueueRun({ ...base, runId, traceParent, connection: h.producer });
    await h.client.waitForRun(runId, { timeoutMs: 20_000 });
    expect((await h.control.get(runId))?.summary.traceId).toBe(trace);
    await expect(enqueueRun({ ...base, traceParent: '00-xyz', connection: h.producer })).rejects.toThrow(
      /traceParent must be a W3C traceparent/,
    );
    await expect(
      enqueueRun({ ...base, traceParent, traceId: 'f'.repeat(32), connection: h.producer }),
    ).rejects.toThrow(/a run has one trace/);
  });

  it('refuses, before touching Redis, a run id that BullMQ reserves or that breaks the pattern', async () => {
    const base = { redisUrl: 'redis://127.0.0.1:1', prefix: h.prefix, agent: 'test_agent', input: 'x' };
    for (const runId of ['events', 'meta', 'a:b', '']) {
      await expect(enqueueRun({ ...base, runId })).rejects.toThrow(TypeError);
    }
    await expect(enqueueRun({ ...base, input: '  ' })).rejects.toThrow(/input/);
  });

  it('completes a run added with a bare BullMQ Queue.add that follows the documented job schema', async () => {
    const queue = new Queue('agent-runs', {
      connection: { host: '127.0.0.1', port: Number(new URL(REDIS_URL).port || 6379) },
      prefix: `${h.prefix}:{agent-runs}`,
    });
    try {
      const runId = `bare-${Date.now()}`;
      await queue.add(
        'run',
        {
          v: 1,
          runId,
          agent: 'test_agent',
          input: 'weather in 杭州?',
          model: 'weather-then-answer',
          metadata: { source: 'bare' },
        },
        {
          jobId: runId,
          attempts: 1,
          removeOnComplete: { age: 604800, count: 100000 },
          removeOnFail: { age: 604800 },
        },
      );
      const done = await h.client.waitForRun(runId, { timeoutMs: 20_000 });
      expect(done).toMatchObject({ status: 'succeeded', answer: 'It is 阴.', metadata: { source: 'bare' } });
    } finally {
      await queue.close();
    }
  });

  it('ends a bare job with an undeclared agent, missing fields or an unknown version as a failed run that names each problem', async () => {
    const queue = new Queue('agent-runs', {
      connection: { host: '127.0.0.1', port: Number(new URL(REDIS_URL).port || 6379) },
      prefix: `${h.prefix}:{agent-runs}`,
    });
    try {
      const stranger = `bare-stranger-${Date.now()}`;
      const broken = `bare-broken-${Date.now()}`;
      await queue.add('run', { v: 1, runId: stranger, agent: 'nobody', input: 'hi' }, { jobId: stranger });
      await queue.add('run', { v: 3, run_id: broken, agent: 'test_agent', inptu: 'typo' }, { jobId: broken });
      const first = await h.client.waitForRun(stranger, { timeoutMs: 20_000 });
      expect(first).toMatchObject({ status: 'failed', reason: 'invalid_job' });
      expect(first.report).toBe('the run could not start: agent "nobody" is not declared');
      const second = await h.client.waitForRun(broken, { timeoutMs: 20_000 });
      expect(second.status).toBe('failed');
      expect(second.report).toMatch(/input must have required property|must have required property 'input'/);
      expect(second.report).toContain('run job has wire version 3; this release reads versions 1 and 2');
      expect(second.report).toMatch(/must NOT have additional properties "inptu"/);
    } finally {
      await queue.close();
    }
  });

  it("gives run jobs exactly the platform's job options and run id rule", () => {
    // The wire contract's own function, not a copy that could drift from what the API adds.
    expect(runJobOptions).toBe(platformJobOptions);
    expect(RUN_ID_PATTERN.source).toBe(PLATFORM_RUN_ID_PATTERN.source);
  });

  it('parses an event stream split at any byte, with CRLF, CR, comments and multi-line data', async () => {
    const text =
      ': hello\r\n\r\nid: 1-0\r\nevent: plan\r\ndata: {"a":"天气"}\r\n\r\n' +
      'id: 1-1\revent: step\rdata: line one\rdata: line two\r\r' +
      ': heartbeat\n\nid:2-0\nevent:run_finished\ndata:{}\n\n' +
      'data: no id, kept id\n\n';
    const expected = [
      { id: '1-0', event: 'plan', data: '{"a":"天气"}' },
      { id: '1-1', event: 'step', data: 'line one\nline two' },
      { id: '2-0', event: 'run_finished', data: '{}' },
      { id: '2-0', event: 'message', data: 'no id, kept id' },
    ];
    const bytes = new TextEncoder().encode(text);
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.integer({ min: 1, max: bytes.length - 1 }), { maxLength: 12 }),
        async (cuts) => {
          const points = [0, ...cuts.sort((a, b) => a - b), bytes.length];
          const body = new ReadableStream<Uint8Array>({
            start(c) {
              for (let i = 1; i < points.length; i += 1) c.enqueue(bytes.slice(points[i - 1], points[i]));
              c.close();
            },
          });
          const got = [];
          for await (const m of parseSse(body)) got.push(m);
          expect(got).toEqual(expected);
        },
      ),
      { numRuns: 200 },
    );
  });
});
