import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@agent-reach/shared';
import { countTokens } from '@agent-reach/scheduler/internal';
import {
  FULL_KEY,
  LIMITED_KEY,
  TEST_API_KEYS,
  request,
  startApiHarness,
  type ApiHarness,
} from './helpers/api.js';
import { waitFor } from './helpers/redis.js';
import { addCommonScenarios } from './helpers/scenarios.js';

/** A second key limited to `weather_only`: another caller with the same reach as LIMITED_KEY. */
const OTHER_LIMITED_KEY = 'other-limited-key-0123456789';

const PROTOTYPE_KEYS = ['__proto__', 'constructor', 'prototype'];

/** Whether anything was written onto `Object.prototype` (what a polluting request would leave behind). */
const prototypePolluted = () =>
  Object.getOwnPropertyNames(Object.prototype).some((name) =>
    ['decision', 'by', 'reason', 'decidedAt', 'tool', 'agent', 'principal'].includes(name),
  );

describe('HTTP API doors: ids by pattern, approvers, session ownership, allowed models, input caps', () => {
  let h: ApiHarness;
  let other: Awaited<ReturnType<ApiHarness['extraServer']>>;
  beforeAll(async () => {
    h = await startApiHarness();
    addCommonScenarios(h.sim);
    other = await h.extraServer({
      apiKeys: [...TEST_API_KEYS, { key: OTHER_LIMITED_KEY, name: 'other-desk', agents: ['weather_only'] }],
      board: false,
      docs: false,
    });
  });
  afterAll(async () => {
    await other?.close();
    await h?.close();
  });

  const parked = async () => {
    const runId = (
      await h.call('POST', '/v1/runs', {
        body: { agent: 'test_agent', input: 'do the sensitive thing', model: 'approval' },
      })
    ).json.run_id as string;
    const run = await waitFor(
      async () => {
        const r = (await h.call('GET', `/v1/runs/${runId}`)).json;
        return r.status === 'awaiting_approval' ? r : undefined;
      },
      15_000,
      'the run to park',
    );
    return { runId, toolCallId: run.pending_approvals[0].tool_call_id as string };
  };

  it('refuses a prototype key as tool_call_id with 400 naming the field and the pattern, storing nothing', async () => {
    const { runId, toolCallId } = await parked();
    for (const id of PROTOTYPE_KEYS) {
      const res = await h.call('POST', `/v1/runs/${runId}/approvals`, {
        body: { tool_call_id: id, decision: 'approve' },
      });
      expect(res.status, id).toBe(400);
      expect(res.json.error.code).toBe('VALIDATION_FAILED');
      expect(res.json.error.message).toMatch(/^body\/tool_call_id must match the pattern \^/);
      expect(res.json.error.message).toContain('not __proto__, constructor or prototype');
    }
    expect(await h.redis.hkeys(h.keys.runApprovals(runId))).toEqual([]);
    expect(prototypePolluted()).toBe(false);
    // The run is unharmed: it loads, and the real call can still be decided.
    expect((await h.call('GET', `/v1/runs/${runId}`)).json.pending_approvals).toHaveLength(1);
    const decided = await h.call('POST', `/v1/runs/${runId}/approvals`, {
      body: { tool_call_id: toolCallId, decision: 'reject' },
    });
    expect(decided.status).toBe(200);
  });

  it('refuses a prototype key as run id, session id or metadata key at every door with 400 naming the field', async () => {
    const agent = { agent: 'test_agent', input: 'hi' };
    // prettier-ignore
    const doors: Array<[string, string, unknown, RegExp]> = [
      ['GET', '/v1/runs/__proto__', undefined, /^params\/id must match the pattern .*\(run id: /],
      ['GET', '/v1/runs/constructor/events', undefined, /^params\/id must match the pattern/],
      ['POST', '/v1/runs/prototype/cancel', undefined, /^params\/id must match the pattern/],
      ['POST', '/v1/runs/__proto__/approvals', { tool_call_id: 'call_1', decision: 'approve' }, /^params\/id must match/],
      ['GET', '/v1/sessions/__proto__', undefined, /^params\/id must match the pattern .*\(session id: /],
      ['POST', '/v1/sessions/constructor/messages', agent, /^params\/id must match the pattern/],
      ['POST', '/v1/sessions', { session_id: '__proto__' }, /^body\/session_id must match the pattern/],
      ['POST', '/v1/runs', { ...agent, session_id: 'prototype' }, /^body\/session_id must match the pattern/],
      ['POST', '/v1/runs', { ...agent, metadata: { constructor: 'x' } }, /^body\/metadata must match the pattern .*metadata key/],
    ];
    for (const [method, path, body] of doors) {
      const res = await h.call(method, path, body === undefined ? {} : { body });
      expect(res.status, `${method} ${path}`).toBe(400);
      expect(res.json.error.code).toBe('VALIDATION_FAILED');
    }
    for (const [method, path, body, message] of doors) {
      const res = await h.call(method, path, body === undefined ? {} : { body });
      expect(res.json.error.message, `${method} ${path}`).toMatch(message);
    }
    expect(prototypePolluted()).toBe(false);
  });

  it("records the authenticated key's name as the approver and refuses a `by` in the body", async () => {
    const { runId, toolCallId } = await parked();
    const forged = await h.call('POST', `/v1/runs/${runId}/approvals`, {
      body: { tool_call_id: toolCallId, decision: 'approve', by: 'the-ceo' },
    });
    expect(forged.status).toBe(400);
    expect(forged.json.error).toMatchObject({
      code: 'VALIDATION_FAILED',
      message: 'body/by is not accepted: the approver recorded is the name of the API key that decides',
    });
    expect(await h.redis.hkeys(h.keys.runApprovals(runId))).toEqual([]);
    const decided = await h.call('POST', `/v1/runs/${runId}/approvals`, {
      body: { tool_call_id: toolCallId, decision: 'approve' },
    });
    expect(decided.json).toMatchObject({ decision: 'approved', by: 'tester' });
    const event = (await h.control.events(runId)).find((e) => e.event.type === 'approval_decided');
    expect(event?.event).toMatchObject({ by: 'tester' });
  });

  it('answers 404 to another key reading or posting to a session, even with an agent it may use, and lets its owner in', async () => {
    const mine = await request(other.url, 'POST', '/v1/sessions', {
      key: LIMITED_KEY,
      body: { session_id: 'owned-by-desk' },
    });
    expect(mine.status).toBe(201);
    const first = await request(other.url, 'POST', '/v1/sessions/owned-by-desk/messages', {
      key: LIMITED_KEY,
      body: { agent: 'weather_only', input: 'remember: the code is 4711' },
    });
    expect(first.status).toBe(201);
    const read = await request(other.url, 'GET', '/v1/sessions/owned-by-desk', { key: LIMITED_KEY });
    expect(read.status).toBe(200);
    expect(read.json).toMatchObject({ session_id: 'owned-by-desk', agent: 'weather_only' });

    const stranger = [
      ['GET', '/v1/sessions/owned-by-desk', undefined],
      ['POST', '/v1/sessions/owned-by-desk/messages', { agent: 'weather_only', input: 'what is the code?' }],
      [
        'POST',
        '/v1/runs',
        { agent: 'weather_only', input: 'what is the code?', session_id: 'owned-by-desk' },
      ],
    ] as const;
    for (const [method, path, body] of stranger) {
      const res = await request(other.url, method, path, {
        key: OTHER_LIMITED_KEY,
        ...(body ? { body } : {}),
      });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.json.error).toEqual({ code: 'NOT_FOUND', message: 'session owned-by-desk not found' });
    }
    // The same answer as for a session that does not exist: nothing tells the two apart.
    const ghost = await request(other.url, 'GET', '/v1/sessions/no-such-session', { key: OTHER_LIMITED_KEY });
    expect(ghost.json.error).toEqual({ code: 'NOT_FOUND', message: 'session no-such-session not found' });
    // A key for every agent may read it; a message for another agent than the session's is a conflict.
    expect((await request(other.url, 'GET', '/v1/sessions/owned-by-desk', { key: FULL_KEY })).status).toBe(
      200,
    );
    const switched = await request(other.url, 'POST', '/v1/sessions/owned-by-desk/messages', {
      key: FULL_KEY,
      body: { agent: 'test_agent', input: 'what is the code?' },
    });
    expect(switched.status).toBe(409);
    expect(switched.json.error).toEqual({
      code: 'CONFLICT',
      message:
        'session owned-by-desk belongs to agent "weather_only"; start another session for agent "test_agent"',
    });
  });

  it('answers 404 to a limited key joining a session of another agent, so its history never reaches that key', async () => {
    const created = await h.call('POST', '/v1/sessions', {
      body: { session_id: 'full-key-secrets', agent: 'test_agent' },
    });
    expect(created.status).toBe(201);
    expect(created.json).toEqual({ session_id: 'full-key-secrets', agent: 'test_agent' });
    const runsBefore = (await h.control.queue.getJobCounts()) as Record<string, number>;
    const join = await h.call('POST', '/v1/sessions/full-key-secrets/messages', {
      key: LIMITED_KEY,
      body: { agent: 'weather_only', input: 'repeat everything said so far' },
    });
    expect(join.status).toBe(404);
    expect(join.json.error.code).toBe('NOT_FOUND');
    expect(await h.control.queue.getJobCounts()).toEqual(runsBefore);
    // Creating a session for an agent the key may not use is refused outright.
    const foreign = await h.call('POST', '/v1/sessions', { key: LIMITED_KEY, body: { agent: 'test_agent' } });
    expect(foreign.status).toBe(403);
    expect(foreign.json.error.code).toBe('FORBIDDEN');
  });

  it('refuses a model outside the allowed list with 400 MODEL_NOT_ALLOWED naming the allowed models', async () => {
    const before = (await h.control.queue.getJobCounts()) as Record<string, number>;
    for (const [path, body] of [
      ['/v1/runs', { agent: 'test_agent', input: 'hi', model: 'gpt-9-ultra' }],
      ['/v1/sessions/full-key-secrets/messages', { agent: 'test_agent', input: 'hi', model: 'gpt-9-ultra' }],
    ] as const) {
      const res = await h.call('POST', path, { body });
      expect(res.status, path).toBe(400);
      expect(res.json.error).toEqual({
        code: 'MODEL_NOT_ALLOWED',
        message:
          'model "gpt-9-ultra" is not allowed; allowed: echo, approval, weather-then-answer, remember (or no model, for the default)',
        details: [
          { in: 'body', path: '/model', allowed: ['echo', 'approval', 'weather-then-answer', 'remember'] },
        ],
      });
    }
    expect(await h.control.queue.getJobCounts()).toEqual(before);
    expect((await h.call('POST', '/v1/runs', { body: { agent: 'test_agent', input: 'hi' } })).status).toBe(
      201,
    );
  });

  it('declares allowed models in the configuration: by default the configured model only', () => {
    expect(loadConfig({}).api.allowedModels).toEqual(['gpt-4o-mini']);
    expect(loadConfig({ OPENAI_MODEL: 'my-model' }).api.allowedModels).toEqual(['my-model']);
    expect(loadConfig({ ALLOWED_MODELS: 'a, b/c:1' }).api.allowedModels).toEqual(['a', 'b/c:1']);
    expect(() => loadConfig({ ALLOWED_MODELS: 'ok,bad model' })).toThrow(/ALLOWED_MODELS/);
    expect(loadConfig({ API_MAX_INPUT_TOKENS: '500' }).api.maxInputTokens).toBe(500);
    expect(() => loadConfig({ API_MAX_INPUT_TOKENS: 'many' })).toThrow(/API_MAX_INPUT_TOKENS/);
  });

  it('caps run input by tokens as well as characters: 400 INPUT_TOO_LONG with the count and the limit', async () => {
    const server = await h.extraServer({ maxInputTokens: 50, board: false, docs: false });
    try {
      const long = 'word '.repeat(120);
      const tokens = countTokens(long);
      expect(tokens).toBeGreaterThan(50);
      const res = await request(server.url, 'POST', '/v1/runs', {
        body: { agent: 'test_agent', input: long },
      });
      expect(res.status).toBe(400);
      expect(res.json.error).toEqual({
        code: 'INPUT_TOO_LONG',
        message: `input has ${tokens} tokens; at most 50 are accepted`,
        details: [{ in: 'body', path: '/input', tokens, limit: 50 }],
      });
      // Many characters but few tokens pass; so does anything of no more bytes than the limit.
      const fine = await request(server.url, 'POST', '/v1/runs', {
        body: { agent: 'test_agent', input: 'hello '.repeat(12) },
      });
      expect(fine.status).toBe(201);
      const viaSession = await request(server.url, 'POST', '/v1/sessions/full-key-secrets/messages', {
        body: { agent: 'test_agent', input: long },
      });
      expect(viaSession.json.error.code).toBe('INPUT_TOO_LONG');
    } finally {
      await server.close();
    }
  });
});
