import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enqueueRun } from '@agent-reach/client/queue';
import { TENANT_PATTERN } from '@agent-reach/protocol';
import { loadConfig } from '@agent-reach/shared';
import {
  FULL_KEY,
  openEventStream,
  runDoors,
  startApiHarness,
  startParkedRun,
  type ApiHarness,
  type ParkedRun,
} from './helpers/api.js';
import { waitFor } from './helpers/redis.js';
import { addCommonScenarios } from './helpers/scenarios.js';
import { WORKFLOW_SCENARIOS, WORKFLOWS_FIXTURE } from './helpers/workflows.js';

/** Full keys (every agent) of two tenants, and an operator's key of both. */
const ACME = 'acme-key-0123456789abcdef';
const BETA = 'beta-key-0123456789abcdef';
const OPS = 'ops-key-0123456789abcdef';
/** A key of every tenant, for every agent: the platform operator's. */
const ROOT = 'root-key-0123456789abcdef';
const KEYS = [
  { key: FULL_KEY, name: 'tester' },
  { key: ACME, name: 'acme-desk', tenants: ['acme'] },
  { key: BETA, name: 'beta-desk', tenants: ['beta'] },
  { key: OPS, name: 'operator', tenants: ['acme', 'beta'] },
  { key: ROOT, name: 'root', tenants: ['default', 'acme', 'beta'] },
];

describe('tenants: keys of one tenant neither see, follow, cancel, approve nor list what another created', () => {
  let h: ApiHarness;
  let parked: ParkedRun;
  beforeAll(async () => {
    h = await startApiHarness({ apiKeys: KEYS }, { WORKFLOWS_FILE: WORKFLOWS_FIXTURE });
    addCommonScenarios(h.sim);
    for (const s of WORKFLOW_SCENARIOS) h.sim.addScenario(s);
    parked = await startParkedRun(h, ACME, '/v1/runs', {
      agent: 'test_agent',
      input: 'acme internal: the margin is 41%',
    });
  });
  afterAll(async () => {
    await h?.close();
  });

  it("answers a full key of another tenant, and a key of no tenant, 404 on a run's every door, and lets its tenant's keys in", async () => {
    const { runId, toolCallId } = parked;
    for (const key of [BETA, FULL_KEY])
      for (const [method, path, body] of runDoors(parked)) {
        const res = await h.call(method, path, { key, ...(body ? { body } : {}) });
        expect(res.status, `${method} ${path}`).toBe(404);
        expect(res.json.error).toEqual({ code: 'NOT_FOUND', message: `run ${runId} not found` });
      }
    const mine = await h.call('GET', `/v1/runs/${runId}`, { key: ACME });
    expect(mine.json).toMatchObject({ tenant: 'acme', status: 'awaiting_approval', cancel_requested: false });
    const follow = await openEventStream(h.url, runId, { key: OPS });
    expect(follow.stream.status).toBe(200);
    follow.close();
    await follow.ended;
    // The operator of both tenants decides it, as a key of its tenant would.
    const decided = await h.call('POST', `/v1/runs/${runId}/approvals`, {
      key: OPS,
      body: { tool_call_id: toolCallId, decision: 'reject' },
    });
    expect(decided.status).toBe(200);
    expect(decided.json).toMatchObject({ decision: 'rejected', by: 'operator' });
  });

  it("lists and searches only the caller's tenants: an operator of both sees both", async () => {
    const beta = await h.call('POST', '/v1/runs', { key: BETA, body: { agent: 'test_agent', input: 'hi' } });
    expect(beta.json.tenant).toBe('beta');
    const ids = async (key: string, query: string) => {
      const res = await h.call('GET', `/v1/runs${query}`, { key });
      expect(res.status, query).toBe(200);
      return (res.json.runs as Array<{ run_id: string }>).map((r) => r.run_id);
    };
    for (const query of ['', '?agent=test_agent', `?trace_id=${parked.traceId}`, '?offset=1']) {
      expect(await ids(BETA, query), query).not.toContain(parked.runId);
      expect(await ids(FULL_KEY, query), query).not.toContain(parked.runId);
    }
    expect(await ids(ACME, '')).toEqual([parked.runId]);
    expect(await ids(BETA, '')).toEqual([beta.json.run_id]);
    expect(new Set(await ids(OPS, ''))).toEqual(new Set([parked.runId, beta.json.run_id]));
    const me = await fetch(`${h.url}/ui/api/me`, { headers: { authorization: `Bearer ${OPS}` } });
    expect(((await me.json()) as { tenants: string[] }).tenants).toEqual(['acme', 'beta']);
  });

  it('creates two runs for the same Idempotency-Key and body in two tenants, each in its own tenant', async () => {
    const body = { agent: 'test_agent', input: 'once per tenant' };
    const headers = { 'idempotency-key': 'order-42' };
    const a = await h.call('POST', '/v1/runs', { key: ACME, body, headers });
    const b = await h.call('POST', '/v1/runs', { key: BETA, body, headers });
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(a.json.run_id).not.toBe(b.json.run_id);
    expect([a.json.tenant, b.json.tenant]).toEqual(['acme', 'beta']);
    // A repeat in one tenant is that tenant's run, never the other's.
    const again = await h.call('POST', '/v1/runs', { key: BETA, body, headers });
    expect(again.status).toBe(200);
    expect(again.json.run_id).toBe(b.json.run_id);
  });

  it("keeps a tenant's sessions and workflows, and the workflow's node runs, from other tenants", async () => {
    const session = await h.call('POST', '/v1/sessions', { key: ACME, body: { session_id: 'acme-chat' } });
    expect(session.status).toBe(201);
    for (const key of [BETA, FULL_KEY]) {
      const read = await h.call('GET', '/v1/sessions/acme-chat', { key });
      expect(read.status).toBe(404);
      const post = await h.call('POST', '/v1/sessions/acme-chat/messages', {
        key,
        body: { agent: 'test_agent', input: 'what was said?' },
      });
      expect(post.status).toBe(404);
    }
    expect((await h.call('GET', '/v1/sessions/acme-chat', { key: OPS })).status).toBe(200);

    const started = await h.call('POST', '/v1/workflows', {
      key: ACME,
      body: { workflow: 'diamond', input: 'restock acme' },
    });
    expect(started.status).toBe(201);
    const id = started.json.workflow_id as string;
    await waitFor(
      async () => (await h.call('GET', `/v1/workflows/${id}`, { key: ACME })).json.status === 'succeeded',
      30_000,
      'the workflow to end',
    );
    for (const key of [BETA, FULL_KEY]) {
      expect((await h.call('GET', `/v1/workflows/${id}`, { key })).status).toBe(404);
      expect((await h.call('POST', `/v1/workflows/${id}/cancel`, { key })).status).toBe(404);
      const listed = (await h.call('GET', '/v1/workflows', { key })).json.workflows as Array<{
        workflow_id: string;
      }>;
      expect(listed.map((w) => w.workflow_id)).not.toContain(id);
      expect((await h.call('GET', `/v1/runs/${id}.a`, { key })).status).toBe(404);
    }
    const node = await h.call('GET', `/v1/runs/${id}.a`, { key: ACME });
    expect(node.json).toMatchObject({ tenant: 'acme', status: 'succeeded' });
  });

  /** Posts a message to a session with `key` and waits for its run to succeed; its run id. */
  async function say(key: string, sessionId: string, input: string): Promise<string> {
    const post = await h.call('POST', `/v1/sessions/${sessionId}/messages`, {
      key,
      body: { agent: 'test_agent', input, model: 'remember' },
    });
    expect(post.status, post.text).toBe(201);
    const runId = post.json.run_id as string;
    await waitFor(
      async () => (await h.call('GET', `/v1/runs/${runId}`, { key })).json.status === 'succeeded',
      30_000,
      'the session run to end',
    );
    return runId;
  }

  it('keeps session ids per tenant: two tenants each create session "s1", and each continues its own history', async () => {
    for (const key of [ACME, BETA]) {
      const made = await h.call('POST', '/v1/sessions', { key, body: { session_id: 's1' } });
      expect(made.status, made.text).toBe(201);
    }
    // Within one tenant an id is still taken once.
    const again = await h.call('POST', '/v1/sessions', { key: ACME, body: { session_id: 's1' } });
    expect(again.status).toBe(409);
    const acmeRun = await say(ACME, 's1', 'acme: the margin is 41%');
    const betaRun = await say(BETA, 's1', 'beta: ship on friday');
    expect((await h.call('GET', '/v1/sessions/s1', { key: ACME })).json.runs).toEqual([acmeRun]);
    expect((await h.call('GET', '/v1/sessions/s1', { key: BETA })).json.runs).toEqual([betaRun]);
    // The next run of each session reads its own tenant's history only.
    const acmeNext = await say(ACME, 's1', 'acme again');
    const asked = h.sim.requests.filter((r) => JSON.stringify(r.body).includes('acme again'));
    expect(asked.length).toBeGreaterThan(0);
    for (const r of asked) {
      expect(JSON.stringify(r.body)).toContain('the margin is 41%');
      expect(JSON.stringify(r.body)).not.toContain('ship on friday');
    }
    expect((await h.call('GET', `/v1/runs/${acmeNext}`, { key: ACME })).json.session_id).toBe('s1');
    expect((await h.call('GET', `/v1/runs/${acmeNext}`, { key: BETA })).status).toBe(404);
  });

  it('keeps a default-tenant session stored before session ids were per tenant readable and continued under its id', async () => {
    // As such a session was stored: the memory at <prefix>:session:<id>, its owner beside it.
    const memory = { sessionId: 'legacy-chat', messages: [], steps: [], runs: [], updatedAt: 1 };
    await h.producer.set(h.keys.session('legacy-chat'), JSON.stringify(memory), 'EX', 600);
    await h.producer.hset(`${h.keys.session('legacy-chat')}:owner`, { created_at: '1' });
    expect((await h.call('GET', '/v1/sessions/legacy-chat', { key: FULL_KEY })).status).toBe(200);
    expect((await h.call('GET', '/v1/sessions/legacy-chat', { key: ACME })).status).toBe(404);
    const first = await say(FULL_KEY, 'legacy-chat', 'default tenant: first words');
    await say(FULL_KEY, 'legacy-chat', 'default tenant: second words');
    const read = await h.call('GET', '/v1/sessions/legacy-chat', { key: FULL_KEY });
    expect(read.json.runs[0]).toBe(first);
    expect(read.json.runs).toHaveLength(2);
    const stored = JSON.parse((await h.producer.get(h.keys.session('legacy-chat')))!) as { runs: string[] };
    expect(stored.runs).toEqual(read.json.runs);
  });

  it('shows a run queued with enqueueRun for a tenant to keys of that tenant only', async () => {
    const { runId } = await enqueueRun({
      connection: h.producer as never,
      prefix: h.keys.prefix,
      agent: 'test_agent',
      input: 'queued straight onto the queue',
      tenant: 'beta',
    });
    const run = await waitFor(
      async () => {
        const r = await h.call('GET', `/v1/runs/${runId}`, { key: BETA });
        return r.json?.status === 'succeeded' ? r.json : undefined;
      },
      15_000,
      'the queued run to end',
    );
    expect(run.tenant).toBe('beta');
    expect((await h.call('GET', `/v1/runs/${runId}`, { key: ACME })).status).toBe(404);
    expect((await h.call('GET', `/v1/runs/${runId}`, { key: FULL_KEY })).status).toBe(404);
  });

  it("refuses the admin board to a full key of some tenants only, since it shows every tenant's jobs", async () => {
    const res = await fetch(`${h.url}/admin/queues`, { headers: { authorization: `Bearer ${ACME}` } });
    expect(res.status).toBe(403);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('FORBIDDEN');
  });

  it('keeps /metrics, which names every tenant and key, to a key of every tenant for every agent', async () => {
    for (const key of [ACME, BETA, OPS, FULL_KEY]) {
      const res = await h.call('GET', '/metrics', { key });
      expect(res.status, key).toBe(403);
      expect(res.json.error).toEqual({
        code: 'FORBIDDEN',
        message:
          "this key sees some tenants only; /metrics shows every tenant's names, quota figures and per-key costs",
      });
    }
    const read = await h.call('GET', '/metrics', { key: ROOT });
    expect(read.status).toBe(200);
    expect(read.text).toMatch(/^# HELP agent_reach_/m);
  });
});

describe('tenants in API_KEYS', () => {
  it('reads `name:key:agents:tenants`, `*` for every agent, and keeps old entries in no tenant field', () => {
    const config = loadConfig({
      API_KEYS:
        'ops:aaaaaaaaaaaaaaaa,desk:bbbbbbbbbbbbbbbb:weather_only,acme:cccccccccccccccc:*:acme,both:dddddddddddddddd:weather_only:acme|beta',
    });
    expect(config.api.keys).toEqual([
      { name: 'ops', key: 'aaaaaaaaaaaaaaaa' },
      { name: 'desk', key: 'bbbbbbbbbbbbbbbb', agents: ['weather_only'] },
      { name: 'acme', key: 'cccccccccccccccc', tenants: ['acme'] },
      { name: 'both', key: 'dddddddddddddddd', agents: ['weather_only'], tenants: ['acme', 'beta'] },
    ]);
  });

  it('refuses a tenant that is not a lower-case name, naming API_KEYS', () => {
    expect(() => loadConfig({ API_KEYS: 'acme:cccccccccccccccc:*:Acme Corp' })).toThrow(
      `API_KEYS must match pattern "${TENANT_PATTERN.source}"`,
    );
  });
});
