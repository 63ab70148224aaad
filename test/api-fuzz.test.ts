import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_ERROR_CODES } from '../packages/scheduler/src/api/index.js';
import {
  FULL_KEY,
  LIMITED_KEY,
  startApiHarness,
  seedSessionAndFinishedRun,
  type ApiHarness,
} from './helpers/api.js';

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
        tool_call_id: anyText,
        decision: fc.constantFrom('approve', 'reject', 'maybe'),
        by: anyText,
        reason: anyText,
        extra: fc.jsonValue({ maxDepth: 1 }),
      },
      { requiredKeys: [] },
    )
    .map((json) => ({ json })),
  fc.record({
    raw: fc.oneof(anyText, fc.constantFrom('{', '{"a":', '[}', 'null', '{"__proto__":{"x":1}}')),
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
  let sent = 0;
  beforeAll(async () => {
    h = await startApiHarness({ rateLimitPerMinute: 1_000_000_000 });
    finished = await seedSessionAndFinishedRun(h, 'fuzz-sess');
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
    if (res.status >= 400 && s.method !== 'HEAD' && !s.path.startsWith('/admin/')) {
      const code = (JSON.parse(text) as { error: { code: string } }).error.code;
      expect(API_ERROR_CODES).toContain(code);
    }
  };

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
            fc.array(segment(['v1', 'runs', 'sessions', 'agents', 'events']), { maxLength: 4 }),
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
  });
});
