import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_ERROR_CODES } from '@agent-reach/protocol';
import {
  FULL_KEY,
  LIMITED_KEY,
  startApiHarness,
  seedSessionAndFinishedRun,
  type ApiHarness,
} from './helpers/api.js';
import { waitFor } from './helpers/redis.js';
import { addCommonScenarios } from './helpers/scenarios.js';

/** Requests per route; raise it for a longer hunt (`API_FUZZ_RUNS=2000 pnpm exec vitest run test/api-fuzz`). */
const NUM_RUNS = Number(process.env.API_FUZZ_RUNS ?? 200);

type Body = { json: unknown } | { raw: string; contentType: string } | undefined;

interface Shot {
  method: string;
  path: string;
  key: string | null;
  headers: Record<string, string>;
  body: Body;
}

const printable = fc.stringMatching(/^[\x20-\x7e]{0,40}$/);
/** Names that reach or replace a prototype when they key a plain object, and other inherited names. */
const protoish = fc.constantFrom(
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
  'valueOf',
  '__defineGetter__',
  'isPrototypeOf',
);
/** Ids as an attacker would send them: prototype names, well-formed ids, any text. */
const anyId = fc.oneof(
  protoish,
  fc.stringMatching(/^[A-Za-z0-9_.-]{1,140}$/),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
);
const anyText = fc.string({ unit: 'grapheme', maxLength: 40 });
const key = fc.constantFrom<string | null>(FULL_KEY, FULL_KEY, LIMITED_KEY, null, 'wrong-key');
const headers = fc.dictionary(
  fc.constantFrom('idempotency-key', 'last-event-id', 'accept', 'x-request-id', 'if-none-match', 'origin'),
  printable,
  { maxKeys: 3 },
);
const nasty = fc.constantFrom('%zz', '%', '..', '%2e%2e', '%00', 'a%2Fb', '%E0%A4%A', '~', '-', '.');
const segment = (known: string[]) =>
  fc.oneof(
    fc.constantFrom(...known),
    protoish,
    fc.stringMatching(/^[A-Za-z0-9_.-]{1,140}$/),
    anyText.map(encodeURIComponent),
    nasty,
  );
const body: fc.Arbitrary<Body> = fc.oneof(
  fc.constant(undefined),
  fc.jsonValue({ maxDepth: 3 }).map((json) => ({ json })),
  fc
    .record(
      {
        agent: fc.oneof(fc.constantFrom('test_agent', 'weather_only'), anyText),
        input: fc.oneof(anyText, fc.integer(), fc.constant('hello'), fc.constant('')),
        session_id: fc.oneof(fc.constantFrom('fuzz-sess'), anyText),
        metadata: fc.dictionary(anyText, fc.oneof(anyText, fc.integer()), { maxKeys: 3 }),
        model: fc.constantFrom('echo', 'no-such-model'),
        tool_call_id: fc.oneof(anyText, protoish),
        decision: fc.constantFrom('approve', 'reject', 'maybe'),
        by: anyText,
        reason: anyText,
        extra: fc.jsonValue({ maxDepth: 1 }),
      },
      { requiredKeys: [] },
    )
    .map((json) => ({ json })),
  fc.record({
    raw: fc.oneof(
      anyText,
      fc.constantFrom(
        '{',
        '{"a":',
        '[}',
        'null',
        '{"__proto__":{"x":1}}',
        '{"tool_call_id":"__proto__","decision":"approve"}',
        '{"constructor":{"prototype":{"polluted":1}}}',
        '{"agent":"test_agent","input":"hi","metadata":{"__proto__":"x"}}',
      ),
    ),
    contentType: fc.constantFrom(
      'application/json',
      'text/plain',
      'application/x-www-form-urlencoded',
      'application/xml',
      '',
    ),
  }),
);
const query = fc
  .dictionary(
    fc.constantFrom('agent', 'status', 'since', 'until', 'limit', 'offset', 'colour'),
    fc.oneof(
      printable,
      fc.integer().map(String),
      fc.constantFrom('succeeded', 'test_agent', '-1', '1e3', ''),
    ),
    { maxKeys: 4 },
  )
  .map((q) => new URLSearchParams(q).toString());

describe('HTTP API under random input', () => {
  let h: ApiHarness;
  let finished: string;
  let parked: { runId: string; toolCallId: string };
  let sent = 0;
  const prototypeNames = Object.getOwnPropertyNames(Object.prototype).sort();
  beforeAll(async () => {
    h = await startApiHarness({ rateLimitPerMinute: 1_000_000_000 });
    addCommonScenarios(h.sim);
    finished = await seedSessionAndFinishedRun(h, 'fuzz-sess');
    const runId = (
      await h.call('POST', '/v1/runs', { body: { agent: 'test_agent', input: 'fuzz me', model: 'approval' } })
    ).json.run_id as string;
    parked = await waitFor(
      async () => {
        const run = (await h.call('GET', `/v1/runs/${runId}`)).json;
        const call = run.pending_approvals?.[0]?.tool_call_id as string | undefined;
        return call ? { runId, toolCallId: call } : undefined;
      },
      15_000,
      'a parked run',
    );
  });
  afterAll(async () => h?.close());

  /** Sends one random request; any 5xx, or an error without the API's shape, fails the property. */
  const shoot = async (s: Shot) => {
    const withBody = s.body !== undefined && s.method !== 'GET' && s.method !== 'HEAD';
    const payload =
      !withBody || !s.body ? undefined : 'json' in s.body ? JSON.stringify(s.body.json) : s.body.raw;
    const contentType =
      !withBody || !s.body ? undefined : 'json' in s.body ? 'application/json' : s.body.contentType;
    const res = await fetch(`${h.url}${s.path}`, {
      method: s.method,
      headers: {
        ...s.headers,
        ...(s.key ? { authorization: `Bearer ${s.key}` } : {}),
        ...(contentType ? { 'content-type': contentType } : {}),
      },
      ...(payload !== undefined ? { body: payload } : {}),
      signal: AbortSignal.timeout(10_000),
    });
    const text = await res.text();
    sent += 1;
    expect(res.status, `${s.method} ${s.path} → ${res.status} ${text.slice(0, 300)}`).toBeLessThan(500);
    // Nothing a request carries may end up on Object.prototype (the server runs in this process).
    expect(Object.getOwnPropertyNames(Object.prototype).sort(), `${s.method} ${s.path}`).toEqual(
      prototypeNames,
    );
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    if (res.status >= 400 && s.method !== 'HEAD' && !s.path.startsWith('/admin/')) {
      const code = (JSON.parse(text) as { error: { code: string } }).error.code;
      expect(API_ERROR_CODES).toContain(code);
    }
  };

  const decision = fc
    .record(
      {
        // Prototype names often: they are what once polluted Object.prototype through this door.
        tool_call_id: fc.oneof(fc.constant('__proto__'), protoish, anyId, fc.constant('__parked__')),
        decision: fc.constantFrom('approve', 'reject', 'maybe'),
        reason: anyText,
        by: anyText,
      },
      { requiredKeys: ['tool_call_id', 'decision'] },
    )
    .map((json) => ({ json }));
  const sessionBody = fc
    .record(
      {
        session_id: anyId,
        agent: fc.oneof(fc.constantFrom('test_agent', 'weather_only', 'nobody'), protoish),
      },
      { requiredKeys: [] },
    )
    .map((json) => ({ json }));
  const messageBody = fc
    .record(
      {
        agent: fc.oneof(fc.constantFrom('test_agent', 'weather_only'), protoish),
        input: fc.oneof(fc.constant('hello'), anyText),
        model: fc.constantFrom('echo', 'gpt-9-ultra'),
        metadata: fc.dictionary(fc.oneof(protoish, anyText), anyText, { maxKeys: 2 }),
      },
      { requiredKeys: ['agent', 'input'] },
    )
    .map((json) => ({ json }));

  const routes: Array<[string, (finishedRun: string) => fc.Arbitrary<Omit<Shot, 'key' | 'headers'>>]> = [
    ['POST /v1/runs', () => body.map((b) => ({ method: 'POST', path: '/v1/runs', body: b }))],
    ['GET /v1/runs', () => query.map((q) => ({ method: 'GET', path: `/v1/runs?${q}`, body: undefined }))],
    [
      'GET /v1/runs/:id',
      (r) =>
        segment([r, 'run_missing']).map((id) => ({ method: 'GET', path: `/v1/runs/${id}`, body: undefined })),
    ],
    [
      'GET /v1/runs/:id/events',
      (r) =>
        segment([r, 'run_missing']).map((id) => ({
          method: 'GET',
          path: `/v1/runs/${id}/events`,
          body: undefined,
        })),
    ],
    [
      'POST /v1/runs/:id/cancel',
      (r) =>
        fc
          .tuple(segment([r, 'run_missing']), body)
          .map(([id, b]) => ({ method: 'POST', path: `/v1/runs/${id}/cancel`, body: b })),
    ],
    [
      'POST /v1/runs/:id/approvals',
      (r) =>
        fc
          .tuple(segment([r, 'run_missing']), body)
          .map(([id, b]) => ({ method: 'POST', path: `/v1/runs/${id}/approvals`, body: b })),
    ],
    ['POST /v1/sessions', () => body.map((b) => ({ method: 'POST', path: '/v1/sessions', body: b }))],
    [
      'POST /v1/runs/:id/approvals on a parked run (ids of every shape)',
      () =>
        fc
          .tuple(
            fc.oneof({ arbitrary: fc.constant('__parked__'), weight: 3 }, { arbitrary: anyId, weight: 1 }),
            fc.oneof({ arbitrary: decision, weight: 3 }, { arbitrary: body, weight: 1 }),
          )
          .map(([id, b]) => {
            const withCall =
              b && 'json' in b && b.json && typeof b.json === 'object' && 'tool_call_id' in b.json
                ? {
                    json: {
                      ...b.json,
                      tool_call_id:
                        b.json.tool_call_id === '__parked__' ? parked.toolCallId : b.json.tool_call_id,
                    },
                  }
                : b;
            const runId = id === '__parked__' ? parked.runId : encodeURIComponent(id);
            return { method: 'POST', path: `/v1/runs/${runId}/approvals`, body: withCall };
          }),
    ],
    [
      'GET /v1/runs/:id, /events and POST /cancel (ids of every shape)',
      (r) =>
        fc
          .tuple(fc.oneof(fc.constant(r), anyId), fc.constantFrom('', '/events', '/cancel'))
          .map(([id, tail]) => ({
            method: tail === '/cancel' ? 'POST' : 'GET',
            path: `/v1/runs/${encodeURIComponent(id)}${tail}`,
            body: undefined,
          })),
    ],
    [
      'POST /v1/sessions (session ids and agents of every shape)',
      () => sessionBody.map((b) => ({ method: 'POST', path: '/v1/sessions', body: b })),
    ],
    [
      'GET /v1/sessions/:id and POST its messages (ids and bodies of every shape)',
      () =>
        fc
          .tuple(fc.oneof(fc.constant('fuzz-sess'), anyId), fc.boolean(), fc.oneof(messageBody, body))
          .map(([id, read, b]) =>
            read
              ? { method: 'GET', path: `/v1/sessions/${encodeURIComponent(id)}`, body: undefined }
              : { method: 'POST', path: `/v1/sessions/${encodeURIComponent(id)}/messages`, body: b },
          ),
    ],
    [
      'POST /v1/sessions/:id/messages',
      () =>
        fc
          .tuple(segment(['fuzz-sess', 'nobody']), body)
          .map(([id, b]) => ({ method: 'POST', path: `/v1/sessions/${id}/messages`, body: b })),
    ],
    ['GET /v1/agents', () => query.map((q) => ({ method: 'GET', path: `/v1/agents?${q}`, body: undefined }))],
    [
      'GET /healthz, /readyz, /metrics, /openapi.json',
      () =>
        fc
          .tuple(fc.constantFrom('/healthz', '/readyz', '/metrics', '/openapi.json'), query)
          .map(([p, q]) => ({ method: 'GET', path: `${p}?${q}`, body: undefined })),
    ],
    [
      'GET /admin/queues/api/queues',
      () => query.map((q) => ({ method: 'GET', path: `/admin/queues/api/queues?${q}`, body: undefined })),
    ],
    [
      'any method on any path',
      () =>
        fc
          .tuple(
            fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'),
            fc.array(segment(['v1', 'runs', 'sessions', 'agents', 'events', 'approvals', 'messages']), {
              maxLength: 4,
            }),
            body,
          )
          .map(([method, parts, b]) => ({ method, path: `/${parts.join('/')}`, body: b })),
    ],
  ];

  for (const [name, route] of routes) {
    it(`never answers ${name} with a 5xx, whatever the body, path and headers`, async () => {
      await fc.assert(
        fc.asyncProperty(route(finished), key, headers, async (shot, k, hs) =>
          shoot({ ...shot, key: k, headers: hs }),
        ),
        { numRuns: NUM_RUNS },
      );
    });
  }

  it('stays up and healthy after the barrage', async () => {
    expect(sent).toBeGreaterThanOrEqual(routes.length * NUM_RUNS);
    expect(h.api.app.server.listening).toBe(true);
    const health = await h.call('GET', '/healthz', { key: null });
    expect(health).toMatchObject({ status: 200, json: { status: 'ok' } });
    expect((await h.call('GET', `/v1/runs/${finished}`)).json.status).toBe('succeeded');
    // Records written by the barrage still load: no stored id broke a run or a session.
    expect((await h.call('GET', `/v1/runs/${parked.runId}`)).status).toBe(200);
    expect((await h.call('GET', '/v1/sessions/fuzz-sess')).status).toBe(200);
    expect(await h.redis.hkeys(h.keys.runApprovals(parked.runId))).not.toContain('__proto__');
  });
});
