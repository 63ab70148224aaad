import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_INPUT_CHARS } from '@agent-reach/protocol';
import {
  FULL_KEY,
  LIMITED_KEY,
  request,
  startApiHarness,
  seedSessionAndFinishedRun,
  TEST_API_KEYS,
  type ApiHarness,
} from './helpers/api.js';

/** [what is wrong, method, path, what is sent, status, code] */
type Case = [string, string, string, Sent, number, string];
type Sent = { body?: unknown; raw?: string; headers?: Record<string, string> };

describe('HTTP API: bad input, agents, health, metrics, docs, admin board, rate limits', () => {
  let h: ApiHarness;
  let finished: string;
  beforeAll(async () => {
    h = await startApiHarness();
    finished = await seedSessionAndFinishedRun(h, 'known-sess');
  });
  afterAll(async () => h?.close());

  const big = 'x'.repeat(1024 * 1024 + 10);
  const cases = (): Case[] => {
    const done = `/v1/runs/${finished}`;
    const run = (input: unknown, extra: object = {}) => ({ body: { agent: 'test_agent', input, ...extra } });
    const decision = (d: string) => ({ body: { tool_call_id: 'c', decision: d } });
    const unknownAgent = { body: { agent: 'nobody', input: 'hi' } };
    const as = (type: string, raw: string) => ({ raw, headers: { 'content-type': type } });
    // A table: one row per kind of bad input.
    // prettier-ignore
    return [
      ['malformed JSON on POST /v1/runs', 'POST', '/v1/runs', { raw: '{"agent":' }, 400, 'MALFORMED_JSON'],
      ['malformed JSON on approvals', 'POST', `${done}/approvals`, { raw: '[}' }, 400, 'MALFORMED_JSON'],
      ['malformed JSON on POST /v1/sessions', 'POST', '/v1/sessions', { raw: 'nul' }, 400, 'MALFORMED_JSON'],
      ['malformed JSON on messages', 'POST', '/v1/sessions/s1/messages', { raw: '{' }, 400, 'MALFORMED_JSON'],
      ['an empty JSON body', 'POST', '/v1/runs', { raw: '' }, 400, 'MALFORMED_JSON'],
      ['a prototype-poisoning body', 'POST', '/v1/runs', { raw: '{"__proto__":{"a":1}}' }, 400, 'MALFORMED_JSON'],
      ['a body over the size limit (runs)', 'POST', '/v1/runs', run(big), 413, 'BODY_TOO_LARGE'],
      ['a body over the size limit (approvals)', 'POST', `${done}/approvals`, { raw: big }, 413, 'BODY_TOO_LARGE'],
      ['an unknown agent (runs)', 'POST', '/v1/runs', unknownAgent, 422, 'UNKNOWN_AGENT'],
      ['an unknown agent (messages)', 'POST', '/v1/sessions/known-sess/messages', unknownAgent, 422, 'UNKNOWN_AGENT'],
      ['an unknown session', 'POST', '/v1/runs', run('hi', { session_id: 'ghost' }), 404, 'NOT_FOUND'],
      ['a run id that is a BullMQ key name', 'GET', '/v1/runs/events', {}, 404, 'NOT_FOUND'],
      ['a run id that is a BullMQ key name (cancel)', 'POST', '/v1/runs/meta/cancel', {}, 404, 'NOT_FOUND'],
      ['an unknown run (get)', 'GET', '/v1/runs/run_missing', {}, 404, 'NOT_FOUND'],
      ['an unknown run (events)', 'GET', '/v1/runs/run_missing/events', {}, 404, 'NOT_FOUND'],
      ['an unknown run (cancel)', 'POST', '/v1/runs/run_missing/cancel', {}, 404, 'NOT_FOUND'],
      ['an unknown run (approvals)', 'POST', '/v1/runs/run_missing/approvals', decision('approve'), 404, 'NOT_FOUND'],
      ['an approval for an ended run', 'POST', `${done}/approvals`, decision('approve'), 409, 'INVALID_STATE'],
      ['cancelling an ended run', 'POST', `${done}/cancel`, {}, 409, 'INVALID_STATE'],
      ['an input that is a number', 'POST', '/v1/runs', run(123), 400, 'VALIDATION_FAILED'],
      ['an input of blanks', 'POST', '/v1/runs', run('   '), 400, 'VALIDATION_FAILED'],
      ['an input over the character cap', 'POST', '/v1/runs', run('x'.repeat(MAX_INPUT_CHARS + 1)), 400, 'INPUT_TOO_LONG'],
      ['a missing input', 'POST', '/v1/runs', { body: { agent: 'test_agent' } }, 400, 'VALIDATION_FAILED'],
      ['an unknown body field', 'POST', '/v1/runs', run('x', { extra: 1 }), 400, 'VALIDATION_FAILED'],
      ['metadata with a number value', 'POST', '/v1/runs', run('x', { metadata: { a: 1 } }), 400, 'VALIDATION_FAILED'],
      ['a body that is an array', 'POST', '/v1/runs', { body: [1, 2] }, 400, 'VALIDATION_FAILED'],
      ['a text/plain body', 'POST', '/v1/runs', as('text/plain', 'hi'), 400, 'VALIDATION_FAILED'],
      ['an unsupported content type', 'POST', '/v1/runs', as('application/xml', '<a/>'), 415, 'VALIDATION_FAILED'],
      ['a session id with a colon', 'POST', '/v1/sessions', { body: { session_id: 'a:b' } }, 400, 'VALIDATION_FAILED'],
      ['a decision that is neither', 'POST', `${done}/approvals`, decision('maybe'), 400, 'VALIDATION_FAILED'],
      ['a run id with a colon', 'GET', '/v1/runs/a:b', {}, 400, 'VALIDATION_FAILED'],
      ['a run id over 128 characters', 'GET', `/v1/runs/${'r'.repeat(129)}`, {}, 400, 'VALIDATION_FAILED'],
      ['a limit that is not a number', 'GET', '/v1/runs?limit=ten', {}, 400, 'VALIDATION_FAILED'],
      ['a limit of 0', 'GET', '/v1/runs?limit=0', {}, 400, 'VALIDATION_FAILED'],
      ['an unknown status filter', 'GET', '/v1/runs?status=bogus', {}, 400, 'VALIDATION_FAILED'],
      ['an unknown query parameter', 'GET', '/v1/runs?colour=red', {}, 400, 'VALIDATION_FAILED'],
      ['a malformed Last-Event-ID', 'GET', `${done}/events`, { headers: { 'last-event-id': 'x' } }, 400, 'VALIDATION_FAILED'],
      ['an over-long Idempotency-Key', 'POST', '/v1/runs', { ...run('x'), headers: { 'idempotency-key': 'k'.repeat(256) } }, 400, 'VALIDATION_FAILED'],
      ['a malformed percent-encoding', 'GET', '/v1/runs/%zz', {}, 400, 'VALIDATION_FAILED'],
      ['an unknown route', 'GET', '/v2/everything', {}, 404, 'NOT_FOUND'],
      ['an unknown method on a known path', 'DELETE', done, {}, 404, 'NOT_FOUND'],
    ];
  };

  it('answers every kind of bad input with a 4xx and its stable code, never a 5xx', async () => {
    for (const [name, method, path, sent, status, code] of cases()) {
      const res = await h.call(method, path, sent);
      expect({ case: name, status: res.status, code: res.json?.error?.code }).toEqual({
        case: name,
        status,
        code,
      });
      expect(typeof res.json.error.message, name).toBe('string');
    }
  });

  it('says which field failed validation, and how, in the error details', async () => {
    const res = await h.call('POST', '/v1/runs', { body: { agent: 'bad agent!', input: 7, extra: true } });
    expect(res.status).toBe(400);
    expect(res.json.error.details).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ in: 'body', path: '/input', message: 'must be string' }),
        expect.objectContaining({ in: 'body', path: '/agent', message: expect.stringContaining('pattern') }),
        expect.objectContaining({ in: 'body', property: 'extra' }),
      ]),
    );
  });

  it('lists agents with their reachable tools from the catalog and each tool breaker state', async () => {
    const now = Date.now();
    await h.redis.hset(
      h.keys.breakers,
      'slow',
      // From the live executor: snapshots of executors that no longer announce themselves are ignored.
      JSON.stringify({
        tool: 'slow',
        state: 'open',
        openUntil: now + 60_000,
        executorId: h.executor!.worker.executorId,
        at: now,
      }),
    );
    try {
      const res = await h.call('GET', '/v1/agents');
      expect(res.status).toBe(200);
      const agent = res.json.agents.find((a: { name: string }) => a.name === 'test_agent');
      const tool = (name: string) => agent.tools.find((t: { name: string }) => t.name === name);
      expect(agent.tools).toHaveLength(14);
      expect(tool('needs_approval')).toMatchObject({
        registered: true,
        requires_confirmation: true,
        group: 'default',
        breaker: { state: 'closed', hidden: false },
      });
      expect(tool('slow').breaker).toEqual({ state: 'open', open_until: now + 60_000, hidden: true });
      const weatherOnly = res.json.agents.find((a: { name: string }) => a.name === 'weather_only');
      expect(weatherOnly.tools.map((t: { name: string }) => t.name)).toEqual(['query_weather']);
    } finally {
      await h.redis.hdel(h.keys.breakers, 'slow');
    }
  });

  it('answers /healthz and /readyz without a key, and reports a Redis that evicts nothing as ready', async () => {
    expect(await h.call('GET', '/healthz', { key: null })).toMatchObject({
      status: 200,
      json: { status: 'ok' },
    });
    const ready = await h.call('GET', '/readyz', { key: null });
    expect(ready.status).toBe(200);
    expect(ready.json).toEqual({ status: 'ready', redis: 'ok', maxmemory_policy: 'noeviction' });
  });

  it('warns on /readyz about an evicting or unreadable eviction policy, and is 503 when Redis does not answer', async () => {
    const withRedis = (override: Partial<Record<'config' | 'ping', () => Promise<unknown>>>) =>
      new Proxy(h.producer, {
        get(target, prop, receiver) {
          if (prop in override) return override[prop as keyof typeof override];
          const value = Reflect.get(target, prop, receiver) as unknown;
          return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
        },
      }) as Redis;
    const variants = [
      {
        redis: withRedis({ config: async () => ['maxmemory-policy', 'allkeys-lru'] }),
        status: 200,
        policy: 'allkeys-lru',
        warning: /allkeys-lru, not noeviction/,
      },
      {
        redis: withRedis({ config: async () => Promise.reject(new Error("ERR unknown command 'CONFIG'")) }),
        status: 200,
        policy: 'unknown',
        warning: /CONFIG GET refused/,
      },
      {
        redis: withRedis({ ping: async () => Promise.reject(new Error('Connection is closed')) }),
        status: 503,
        policy: 'unknown',
        warning: undefined,
      },
    ];
    for (const v of variants) {
      const server = await h.extraServer({ board: false, docs: false }, { redis: v.redis });
      try {
        const res = await request(server.url, 'GET', '/readyz', { key: null });
        expect(res.status).toBe(v.status);
        expect(res.json.maxmemory_policy).toBe(v.policy);
        if (v.warning) expect(res.json.warning).toMatch(v.warning);
        else expect(res.json).toMatchObject({ status: 'not_ready', redis: 'down' });
      } finally {
        await server.close();
      }
    }
  });

  it('requires a key for health routes when openHealth is false', async () => {
    const server = await h.extraServer({ openHealth: false, board: false, docs: false });
    try {
      expect((await request(server.url, 'GET', '/healthz', { key: null })).status).toBe(401);
      expect((await request(server.url, 'GET', '/healthz')).status).toBe(200);
    } finally {
      await server.close();
    }
  });

  it('serves /metrics in Prometheus text with a key, 401 without, and openly with openMetrics', async () => {
    expect((await h.call('GET', '/metrics', { key: null })).json.error.code).toBe('UNAUTHORIZED');
    const res = await h.call('GET', '/metrics');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(res.text).toMatch(/^# HELP agent_reach_scheduler_/m);
    const open = await h.extraServer({ openMetrics: true, board: false, docs: false });
    try {
      expect((await request(open.url, 'GET', '/metrics', { key: null })).status).toBe(200);
    } finally {
      await open.close();
    }
  });

  it('documents every route with its schemas at /openapi.json and serves the docs page at /docs', async () => {
    const doc = await h.call('GET', '/openapi.json', { key: null });
    expect(doc.status).toBe(200);
    expect(doc.json.openapi).toMatch(/^3\./);
    expect(Object.keys(doc.json.paths).sort()).toEqual(
      [
        '/healthz',
        '/mcp',
        '/metrics',
        '/readyz',
        '/v1/agents',
        '/v1/archive/dead-letters',
        '/v1/callbacks/dead-letters',
        '/v1/callbacks/{id}/redeliver',
        '/v1/chat/completions',
        '/v1/evals',
        '/v1/evals/{id}',
        '/v1/events/{name}',
        '/v1/models',
        '/v1/models/{id}',
        '/v1/responses',
        '/v1/runs',
        '/v1/runs/{id}',
        '/v1/runs/{id}/approvals',
        '/v1/runs/{id}/cancel',
        '/v1/runs/{id}/events',
        '/v1/schedules',
        '/v1/schedules/{id}',
        '/v1/schedules/{id}/pause',
        '/v1/schedules/{id}/resume',
        '/v1/schedules/{id}/trigger',
        '/v1/sessions',
        '/v1/sessions/{id}',
        '/v1/sessions/{id}/messages',
        '/v1/workflows',
        '/v1/workflows/{id}',
        '/v1/workflows/{id}/cancel',
        '/v1/workflows/{id}/events',
      ].sort(),
    );
    // The approver is the key: the OpenAPI document says a `by` in the body is refused.
    const approvals = doc.json.paths['/v1/runs/{id}/approvals'].post;
    expect(approvals.description).toMatch(/a `by` in the body is refused with 400 VALIDATION_FAILED/);
    expect(approvals.requestBody.content['application/json'].schema.properties.by.description).toMatch(
      /^refused \(400 VALIDATION_FAILED\)/,
    );
    const create = doc.json.paths['/v1/runs'].post;
    expect(create.requestBody.content['application/json'].schema.required).toEqual(['agent', 'input']);
    expect(Object.keys(create.responses)).toEqual(expect.arrayContaining(['200', '201', '4XX', '5XX']));
    expect(create.parameters.map((p: { name: string }) => p.name)).toContain('idempotency-key');
    expect(doc.json.paths['/healthz'].get.security).toEqual([]);
    // Signed by its sender, not by a key.
    expect(doc.json.paths['/v1/events/{name}'].post.security).toEqual([]);
    expect(doc.json.components.securitySchemes.bearer).toEqual({ type: 'http', scheme: 'bearer' });
    const page = await h.call('GET', '/docs', { key: null });
    expect(page.status).toBe(200);
    expect(page.text).toContain('Swagger UI');
  });

  it('serves Bull Board at /admin/queues to a full key only (Bearer or Basic), with the runs and tool queues', async () => {
    const anonymous = await h.call('GET', '/admin/queues', { key: null });
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toMatch(/^Basic /);
    expect((await h.call('GET', '/admin/queues', { key: LIMITED_KEY })).json.error.code).toBe('FORBIDDEN');
    const basic = await h.call('GET', '/admin/queues', {
      key: null,
      headers: { authorization: `Basic ${Buffer.from(`admin:${FULL_KEY}`).toString('base64')}` },
    });
    expect(basic.status).toBe(200);
    expect(basic.text).toContain('<title>Agent-Reach</title>');
    const wrongBasic = await h.call('GET', '/admin/queues', {
      key: null,
      headers: { authorization: `Basic ${Buffer.from('admin:nope').toString('base64')}` },
    });
    expect(wrongBasic.status).toBe(401);
    const queues = await h.call('GET', '/admin/queues/api/queues');
    expect(queues.status).toBe(200);
    const names = queues.json.queues.map((q: { name: string }) => q.name);
    expect(names).toEqual(expect.arrayContaining(['agent-runs', 'tools-default']));
    expect(queues.json.queues.every((q: { readOnlyMode: boolean }) => q.readOnlyMode)).toBe(true);
  });

  it('answers 429 RATE_LIMITED past the per-key limit, counting each key, and unknown keys per IP, apart', async () => {
    const keyA = 'rate-key-a-0123456789';
    const keyB = 'rate-key-b-0123456789';
    const server = await h.extraServer({
      apiKeys: [...TEST_API_KEYS, { key: keyA }, { key: keyB }],
      rateLimitPerMinute: 3,
      board: false,
      docs: false,
    });
    // Anonymous requests of the earlier tests share this IP's bucket.
    await h.redis.del(`${h.prefix}:ratelimit:ip:127.0.0.1`);
    try {
      const statuses = [];
      for (let i = 0; i < 4; i += 1)
        statuses.push((await request(server.url, 'GET', '/v1/agents', { key: keyA })).status);
      expect(statuses).toEqual([200, 200, 200, 429]);
      const limited = await request(server.url, 'GET', '/v1/agents', { key: keyA });
      expect(limited.json.error.code).toBe('RATE_LIMITED');
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
      expect((await request(server.url, 'GET', '/v1/agents', { key: keyB })).status).toBe(200);
      const guesses = [];
      for (let i = 0; i < 4; i += 1)
        guesses.push((await request(server.url, 'GET', '/v1/agents', { key: `guess-${i}` })).status);
      expect(guesses).toEqual([401, 401, 401, 429]);
    } finally {
      await server.close();
      await h.redis.del(`${h.prefix}:ratelimit:ip:127.0.0.1`);
    }
  });
});
