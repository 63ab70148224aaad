import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bodyHash, IdempotencyStore } from '@agent-reach/scheduler/internal';
import {
  FULL_KEY,
  LIMITED_KEY,
  openEventStream,
  request,
  startApiHarness,
  type ApiHarness,
} from './helpers/api.js';
import { waitFor } from './helpers/redis.js';
import { addCommonScenarios } from './helpers/scenarios.js';

describe('HTTP API: auth, runs, idempotency, event streams, approvals, cancellation, sessions', () => {
  let h: ApiHarness;
  beforeAll(async () => {
    h = await startApiHarness({ sseHeartbeatMs: 150 });
    addCommonScenarios(h.sim);
  });
  afterAll(async () => h?.close());

  const create = async (
    body: Record<string, unknown>,
    key = FULL_KEY,
    headers: Record<string, string> = {},
  ) => h.call('POST', '/v1/runs', { body, key, headers });
  const statusOf = async (runId: string) => (await h.call('GET', `/v1/runs/${runId}`)).json?.status as string;
  const waitStatus = (runId: string, status: string | string[]) =>
    waitFor(
      async () => ([status].flat().includes(await statusOf(runId)) ? true : undefined),
      15_000,
      `run ${runId} ${String(status)}`,
    );
  const parked = async (model = 'approval') => {
    const runId = (await create({ agent: 'test_agent', input: 'do the sensitive thing', model })).json
      .run_id as string;
    await waitStatus(runId, 'awaiting_approval');
    const run = (await h.call('GET', `/v1/runs/${runId}`)).json;
    return { runId, toolCallId: run.pending_approvals[0].tool_call_id as string, run };
  };

  it('refuses a request without a key, with a wrong key, or with a near-miss key, as 401 UNAUTHORIZED', async () => {
    for (const key of [null, 'wrong', `${FULL_KEY.slice(0, -1)}x`, `${FULL_KEY}x`, '']) {
      const res = await h.call('GET', '/v1/runs', { key });
      expect(res.status, `key ${String(key)}`).toBe(401);
      expect(res.json.error.code).toBe('UNAUTHORIZED');
    }
    const basic = await h.call('GET', '/v1/runs', {
      key: null,
      headers: { authorization: `Basic ${Buffer.from(`u:${FULL_KEY}`).toString('base64')}` },
    });
    expect(basic.status).toBe(401);
    expect((await h.call('GET', '/v1/runs')).status).toBe(200);
  });

  it('answers 403 FORBIDDEN when a key limited to some agents touches runs of another agent', async () => {
    const refused = await create({ agent: 'test_agent', input: 'hello' }, LIMITED_KEY);
    expect(refused.status).toBe(403);
    expect(refused.json.error.code).toBe('FORBIDDEN');
    // A limited key learns nothing about agents outside its list, not even whether they exist.
    expect((await create({ agent: 'no_such_agent', input: 'hello' }, LIMITED_KEY)).json.error.code).toBe(
      'FORBIDDEN',
    );

    const other = (await create({ agent: 'test_agent', input: 'do the sensitive thing', model: 'approval' }))
      .json.run_id;
    await waitStatus(other, 'awaiting_approval');
    const calls: Array<[string, string, unknown?]> = [
      ['GET', `/v1/runs/${other}`],
      ['GET', `/v1/runs/${other}/events`],
      ['POST', `/v1/runs/${other}/cancel`],
      ['POST', `/v1/runs/${other}/approvals`, { tool_call_id: 'x', decision: 'approve' }],
      ['GET', '/v1/runs?agent=test_agent'],
    ];
    for (const [method, path, body] of calls) {
      const res = await h.call(method, path, { key: LIMITED_KEY, ...(body ? { body } : {}) });
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(res.json.error.code).toBe('FORBIDDEN');
    }
    const mine = await create({ agent: 'weather_only', input: 'hello' }, LIMITED_KEY);
    expect(mine.status).toBe(201);
    await waitStatus(mine.json.run_id, 'succeeded');
    const listed = await h.call('GET', '/v1/runs', { key: LIMITED_KEY });
    expect(listed.json.runs.map((r: { run_id: string }) => r.run_id)).toContain(mine.json.run_id);
    expect(listed.json.runs.every((r: { agent: string }) => r.agent === 'weather_only')).toBe(true);
    const agents = await h.call('GET', '/v1/agents', { key: LIMITED_KEY });
    expect(agents.json.agents.map((a: { name: string }) => a.name)).toEqual(['weather_only']);
    await h.call('POST', `/v1/runs/${other}/cancel`);
  });

  it('creates a run once per Idempotency-Key: 201, then 200 with the same run for the same body in any key order', async () => {
    const headers = { 'idempotency-key': 'order-42' };
    const first = await create(
      { agent: 'test_agent', input: 'once', metadata: { a: '1', b: '2' } },
      FULL_KEY,
      headers,
    );
    const again = await create(
      { metadata: { b: '2', a: '1' }, input: 'once', agent: 'test_agent' },
      FULL_KEY,
      headers,
    );
    expect(first.status).toBe(201);
    expect(again.status).toBe(200);
    expect(again.json.run_id).toBe(first.json.run_id);
    // Idempotency keys belong to an API key: another caller's same key is another run.
    const limited = await create({ agent: 'weather_only', input: 'once' }, LIMITED_KEY, headers);
    expect(limited.status).toBe(201);
    expect(limited.json.run_id).not.toBe(first.json.run_id);
    await waitStatus(first.json.run_id, 'succeeded');
    const jobs = await h.control.queue.getJobs(['completed', 'active', 'waiting', 'delayed']);
    expect(jobs.filter((j) => j.data.input === 'once' && j.data.agent === 'test_agent')).toHaveLength(1);
  });

  it('answers 409 CONFLICT when an Idempotency-Key is reused with a different body', async () => {
    const headers = { 'idempotency-key': 'order-43' };
    expect((await create({ agent: 'test_agent', input: 'first' }, FULL_KEY, headers)).status).toBe(201);
    const conflict = await create({ agent: 'test_agent', input: 'second' }, FULL_KEY, headers);
    expect(conflict.status).toBe(409);
    expect(conflict.json.error.code).toBe('CONFLICT');
  });

  it('queues the run of an Idempotency-Key whose first request died between its claim and its queueing, so the repeat answers a run that exists', async () => {
    const body = { agent: 'test_agent', input: 'ghost' };
    // The state a request leaves when its process dies right after claiming the key.
    const principalId = createHash('sha256').update(FULL_KEY).digest('hex').slice(0, 16);
    const claimed = await new IdempotencyStore(h.redis, h.keys, 3600).claim(principalId, 'order-ghost', {
      runId: 'run_ghost_1',
      bodyHash: bodyHash(body),
    });
    expect(claimed.claimed).toBe(true);
    const again = await create(body, FULL_KEY, { 'idempotency-key': 'order-ghost' });
    expect(again.status).toBe(200);
    expect(again.json.run_id).toBe('run_ghost_1');
    await waitStatus('run_ghost_1', 'succeeded');
    const run = (await h.call('GET', '/v1/runs/run_ghost_1')).json;
    expect(run.created_at).toBeGreaterThan(0);
  });

  it('runs a run created over HTTP to its outcome and shows status, answer, usage, steps and trace id', async () => {
    const created = await create({
      agent: 'test_agent',
      input: 'weather in 杭州?',
      model: 'weather-then-answer',
      metadata: { ticket: 'T-1' },
    });
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({ agent: 'test_agent', status: 'queued', cancel_requested: false });
    expect(created.json.trace_id).toMatch(/^[0-9a-f]{32}$/);
    const runId = created.json.run_id as string;
    await waitStatus(runId, 'succeeded');
    const run = (await h.call('GET', `/v1/runs/${runId}`)).json;
    expect(run).toMatchObject({
      run_id: runId,
      status: 'succeeded',
      reason: 'final_answer',
      answer: 'It is 阴.',
      trace_id: created.json.trace_id,
      metadata: { ticket: 'T-1' },
      input: 'weather in 杭州?',
      pending_approvals: [],
    });
    expect(run.usage.total_tokens).toBeGreaterThan(0);
    expect(run.steps).toEqual([
      expect.objectContaining({ tool: 'query_weather', ok: true, attempts: 1, turn: 1 }),
    ]);
    expect(run.created_at).toBeGreaterThan(0);
  });

  it('lists runs newest first, filtered by agent and status, a page at a time', async () => {
    const ids: string[] = [];
    for (const input of ['page one', 'page two', 'page three']) {
      const id = (await create({ agent: 'weather_only', input })).json.run_id as string;
      await waitStatus(id, 'succeeded');
      ids.push(id);
    }
    const first = await h.call('GET', '/v1/runs?agent=weather_only&status=succeeded&limit=2');
    expect(first.status).toBe(200);
    expect(first.json.runs.map((r: { run_id: string }) => r.run_id)).toEqual([ids[2], ids[1]]);
    expect(first.json.next_offset).toBe(2);
    const second = await h.call('GET', `/v1/runs?agent=weather_only&status=succeeded&limit=2&offset=2`);
    expect(second.json.runs[0].run_id).toBe(ids[0]);
    const none = await h.call('GET', '/v1/runs?agent=weather_only&status=failed');
    expect(none.json).toEqual({ runs: [] });
    const later = await h.call('GET', `/v1/runs?agent=weather_only&since=${Date.now() + 60_000}`);
    expect(later.json.runs).toEqual([]);
  });

  it('streams every event of a run over SSE in stored order, live across a parking, with heartbeats, and ends after run_finished', async () => {
    const runId = (await create({ agent: 'test_agent', input: 'stream me', model: 'approval' })).json
      .run_id as string;
    const live = await openEventStream(h.url, runId);
    expect(live.stream.status).toBe(200);
    expect(live.stream.contentType).toMatch(/^text\/event-stream/);
    await waitFor(
      () => live.messages().some((m) => m.event === 'approval_requested'),
      15_000,
      'approval_requested',
    );
    await waitFor(() => live.comments().length >= 2, 5000, 'heartbeats while parked');
    const pending = (await h.call('GET', `/v1/runs/${runId}`)).json.pending_approvals[0];
    await h.call('POST', `/v1/runs/${runId}/approvals`, {
      body: { tool_call_id: pending.tool_call_id, decision: 'approve' },
    });
    await live.ended;
    const streamed = live.messages();
    expect(streamed.at(-1)?.event).toBe('run_finished');
    const stored = await h.control.events(runId);
    expect(streamed.map((m) => m.id)).toEqual(stored.map((e) => e.id));
    expect(streamed.map((m) => m.event)).toEqual(stored.map((e) => e.event.type));
    expect(streamed.map((m) => JSON.parse(m.data!))).toEqual(stored.map((e) => e.event));
    expect(streamed.map((m) => m.event)).toContain('approval_decided');
  });

  it('resumes an event stream after Last-Event-ID with exactly the events that followed it', async () => {
    const runId = (await create({ agent: 'test_agent', input: 'weather?', model: 'weather-then-answer' }))
      .json.run_id;
    await waitStatus(runId, 'succeeded');
    const stored = await h.control.events(runId);
    expect(stored.length).toBeGreaterThan(4);
    const resumed = await openEventStream(h.url, runId, { lastEventId: stored[2]!.id });
    await resumed.ended;
    expect(resumed.messages().map((m) => m.id)).toEqual(stored.slice(3).map((e) => e.id));
    const atEnd = await openEventStream(h.url, runId, { lastEventId: stored.at(-1)!.id });
    await atEnd.ended;
    expect(atEnd.messages()).toEqual([]);
  });

  it('frees the Redis connection of an event stream when its client goes away, caps open streams, and ends them on close', async () => {
    const { runId } = await parked();
    const streamConnections = async () =>
      String(await h.redis.call('CLIENT', 'LIST'))
        .split('\n')
        .filter((line) => line.includes(`name=${h.prefix}-api-events`)).length;
    const server = await h.extraServer({
      maxEventStreams: 1,
      board: false,
      docs: false,
      sseHeartbeatMs: 100,
    });
    try {
      const first = await openEventStream(server.url, runId);
      await waitFor(() => first.messages().some((m) => m.event === 'approval_requested'), 10_000, 'replay');
      await waitFor(async () => (await streamConnections()) === 1, 5000, 'one stream connection');
      const second = await request(server.url, 'GET', `/v1/runs/${runId}/events`);
      expect(second.status).toBe(429);
      expect(second.json.error.code).toBe('RATE_LIMITED');
      first.close();
      await waitFor(async () => (await streamConnections()) === 0, 5000, 'stream connection closed');
      const third = await openEventStream(server.url, runId);
      await waitFor(() => third.messages().length > 0, 10_000, 'a new stream once the first left');
      await server.close();
      await third.ended;
      expect(third.messages().map((m) => m.event)).not.toContain('run_finished');
      await waitFor(async () => (await streamConnections()) === 0, 5000, 'closed with the server');
    } finally {
      await server.close();
      await h.call('POST', `/v1/runs/${runId}/cancel`);
    }
  });

  it('approves a parked call over HTTP: the run resumes, the decision names the key, and a second decision is 409', async () => {
    const { runId, toolCallId, run } = await parked();
    expect(run.pending_approvals[0]).toMatchObject({ tool: 'needs_approval', arguments: '{}' });
    const missing = await h.call('POST', `/v1/runs/${runId}/approvals`, {
      body: { tool_call_id: 'call_nope', decision: 'approve' },
    });
    expect(missing.status).toBe(404);
    expect(missing.json.error.code).toBe('NOT_FOUND');
    const decided = await h.call('POST', `/v1/runs/${runId}/approvals`, {
      body: { tool_call_id: toolCallId, decision: 'approve', reason: 'checked' },
    });
    expect(decided.status).toBe(200);
    expect(decided.json).toEqual({
      run_id: runId,
      tool_call_id: toolCallId,
      tool: 'needs_approval',
      decision: 'approved',
      by: 'tester',
      reason: 'checked',
    });
    await waitStatus(runId, 'succeeded');
    expect((await h.call('GET', `/v1/runs/${runId}`)).json.answer).toBe('after the decision: true ');
    const again = await h.call('POST', `/v1/runs/${runId}/approvals`, {
      body: { tool_call_id: toolCallId, decision: 'reject' },
    });
    expect(again.status).toBe(409);
    expect(again.json.error.code).toBe('INVALID_STATE');
    const decidedEvent = (await h.control.events(runId)).find((e) => e.event.type === 'approval_decided');
    expect(decidedEvent?.event).toMatchObject({ decision: 'approved', by: 'tester', reason: 'checked' });
  });

  it('rejects a parked call over HTTP in the name of the deciding key', async () => {
    const { runId, toolCallId } = await parked();
    const res = await h.call('POST', `/v1/runs/${runId}/approvals`, {
      body: { tool_call_id: toolCallId, decision: 'reject', reason: 'not today' },
    });
    expect(res.json).toMatchObject({ decision: 'rejected', by: 'tester' });
    await waitStatus(runId, 'succeeded');
    expect((await h.call('GET', `/v1/runs/${runId}`)).json.answer).toBe(
      'after the decision: false refused by a person: not today; do not retry this call',
    );
  });

  it('cancels a parked run over HTTP (202) and answers 409 INVALID_STATE to cancelling it again', async () => {
    const { runId } = await parked();
    const res = await h.call('POST', `/v1/runs/${runId}/cancel`);
    expect(res.status).toBe(202);
    expect(res.json).toMatchObject({ run_id: runId, cancel_requested: true });
    await waitStatus(runId, 'cancelled');
    expect((await h.call('GET', `/v1/runs/${runId}`)).json.reason).toBe('cancelled');
    const again = await h.call('POST', `/v1/runs/${runId}/cancel`);
    expect(again.status).toBe(409);
    expect(again.json.error.code).toBe('INVALID_STATE');
  });

  it('creates sessions (409 CONFLICT for a taken id) and continues their history with messages', async () => {
    const created = await h.call('POST', '/v1/sessions', { body: { session_id: 'api-sess-1' } });
    expect(created.status).toBe(201);
    expect(created.json).toEqual({ session_id: 'api-sess-1' });
    const taken = await h.call('POST', '/v1/sessions', { body: { session_id: 'api-sess-1' } });
    expect(taken.status).toBe(409);
    expect(taken.json.error.code).toBe('CONFLICT');
    const generated = await h.call('POST', '/v1/sessions');
    expect(generated.status).toBe(201);
    expect(generated.json.session_id).toMatch(/^sess_/);
    const unknown = await h.call('POST', '/v1/sessions/nobody/messages', {
      body: { agent: 'test_agent', input: 'hi' },
    });
    expect(unknown.status).toBe(404);
    expect(unknown.json.error.code).toBe('NOT_FOUND');

    const say = async (input: string) => {
      const res = await h.call('POST', '/v1/sessions/api-sess-1/messages', {
        body: { agent: 'test_agent', input, model: 'remember' },
      });
      expect(res.status).toBe(201);
      expect(res.json.session_id).toBe('api-sess-1');
      await waitStatus(res.json.run_id, 'succeeded');
    };
    await say('my name is Ada');
    await say('what is my name?');
    const last = h.sim.requests.filter((r) => r.scenario === 'remember').at(-1)!;
    const texts = (last.body as { messages: Array<{ role: string; content: string }> }).messages.map(
      (m) => `${m.role}:${m.content}`,
    );
    expect(texts).toContain('user:my name is Ada');
    expect(texts).toContain('assistant:noted: my name is Ada');
  });
});
