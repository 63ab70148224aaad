import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@agent-reach/shared';
import { FULL_KEY, startApiHarness, startParkedRun, type ApiHarness } from './helpers/api.js';
import { waitFor } from './helpers/redis.js';
import { addCommonScenarios } from './helpers/scenarios.js';
import { WORKFLOW_SCENARIOS, WORKFLOWS_FIXTURE } from './helpers/workflows.js';

const ACME = 'acme-key-0123456789abcdef';
const BETA = 'beta-key-0123456789abcdef';
const GAMMA = 'gamma-key-0123456789abcdef';
/** The operator's key: /metrics shows every tenant's figures, so it needs a key of every tenant. */
const ROOT = 'root-key-0123456789abcdef';
const KEYS = [
  { key: FULL_KEY, name: 'tester' },
  { key: ROOT, name: 'root', tenants: ['default', 'acme', 'beta', 'gamma'] },
  { key: ACME, name: 'acme-desk', tenants: ['acme'] },
  { key: BETA, name: 'beta-desk', tenants: ['beta'] },
  { key: GAMMA, name: 'gamma-desk', tenants: ['gamma'] },
];

describe('tenant quotas: runs in flight and tokens per day, refused with 429 at every door', () => {
  let h: ApiHarness;
  const metric = async (line: string) => {
    const text = await (
      await fetch(`${h.url}/metrics`, { headers: { authorization: `Bearer ${ROOT}` } })
    ).text();
    return text.split('\n').find((l) => l.startsWith(line));
  };
  const status = async (runId: string, key: string) =>
    (await h.call('GET', `/v1/runs/${runId}`, { key })).json?.status as string | undefined;
  beforeAll(async () => {
    h = await startApiHarness(
      {
        apiKeys: KEYS,
        tenantQuotas: [
          { tenant: 'acme', maxRunsInFlight: 1 },
          { tenant: 'gamma', maxTokensPerDay: 1 },
        ],
      },
      { WORKFLOWS_FILE: WORKFLOWS_FIXTURE },
    );
    addCommonScenarios(h.sim);
    for (const s of WORKFLOW_SCENARIOS) h.sim.addScenario(s);
  });
  afterAll(async () => {
    await h?.close();
  });

  it("refuses a tenant's run, session message and workflow past its runs in flight, naming tenant, limit and figure, and admits again once the run ends", async () => {
    const parked = await startParkedRun(h, ACME, '/v1/runs', { agent: 'test_agent', input: 'wait for me' });
    expect((await h.call('POST', '/v1/sessions', { key: ACME, body: { session_id: 'acme-s' } })).status).toBe(
      201,
    );
    const refusal = {
      code: 'QUOTA_EXCEEDED',
      message: 'tenant "acme" has 1 runs in flight, its limit is 1; start another when one ends',
    };
    const doors = [
      ['/v1/runs', { agent: 'test_agent', input: 'one more' }],
      ['/v1/sessions/acme-s/messages', { agent: 'test_agent', input: 'one more' }],
      ['/v1/workflows', { workflow: 'diamond', input: 'one more' }],
    ] as const;
    for (const [path, body] of doors) {
      const res = await h.call('POST', path, { key: ACME, body });
      expect(res.status, path).toBe(429);
      expect(res.json.error, path).toEqual(refusal);
    }
    // Another tenant is not held back by this one.
    expect(
      (await h.call('POST', '/v1/runs', { key: BETA, body: { agent: 'test_agent', input: 'hi' } })).status,
    ).toBe(201);
    expect(
      await metric('agent_reach_tenant_quota_refusals_total{tenant="acme",quota="runs_in_flight"}'),
    ).toMatch(/ 3$/);
    expect(await metric('agent_reach_tenant_runs_in_flight{tenant="acme"}')).toMatch(/ 1$/);

    expect((await h.call('POST', `/v1/runs/${parked.runId}/cancel`, { key: ACME })).status).toBe(202);
    await waitFor(async () => (await status(parked.runId, ACME)) === 'cancelled', 15_000, 'the cancel');
    const next = await h.call('POST', '/v1/runs', { key: ACME, body: { agent: 'test_agent', input: 'now' } });
    expect(next.status).toBe(201);
    await waitFor(async () => (await status(next.json.run_id, ACME)) === 'succeeded', 15_000, 'the run');
  });

  it("refuses a tenant's runs once its tokens of the day are used, with Retry-After until UTC midnight", async () => {
    const first = await h.call('POST', '/v1/runs', {
      key: GAMMA,
      body: { agent: 'test_agent', input: 'count me' },
    });
    expect(first.status).toBe(201);
    await waitFor(async () => (await status(first.json.run_id, GAMMA)) === 'succeeded', 15_000, 'the run');
    const used = await waitFor(
      async () => {
        const line = await metric('agent_reach_tenant_tokens_used_today{tenant="gamma"}');
        const n = Number(line?.split(' ')[1]);
        return n > 0 ? n : undefined;
      },
      15_000,
      "the run's tokens to be counted",
    );
    const refused = await h.call('POST', '/v1/runs', {
      key: GAMMA,
      body: { agent: 'test_agent', input: 'more' },
    });
    expect(refused.status).toBe(429);
    expect(refused.json.error).toEqual({
      code: 'QUOTA_EXCEEDED',
      message: `tenant "gamma" used ${used} tokens today (UTC), its limit is 1 a day`,
    });
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(86_400);
    expect(await metric('agent_reach_tenant_tokens_per_day_limit{tenant="gamma"}')).toBe(
      'agent_reach_tenant_tokens_per_day_limit{tenant="gamma"} 1',
    );
    expect(await metric('agent_reach_tenant_runs_in_flight_limit{tenant="acme"}')).toBe(
      'agent_reach_tenant_runs_in_flight_limit{tenant="acme"} 1',
    );
  });

  it('frees a slot held by a run that vanished or ended without leaving the count, so the count cannot leak', async () => {
    const key = h.keys.tenantInFlight('acme');
    // A run admitted long ago whose job and record are gone (a scheduler and its Redis writes lost).
    await h.producer.zadd(key, Date.now() - 10 * 60_000, 'run_vanished');
    const ok = await h.call('POST', '/v1/runs', { key: ACME, body: { agent: 'test_agent', input: 'again' } });
    expect(ok.status).toBe(201);
    expect(await h.producer.zscore(key, 'run_vanished')).toBeNull();
    await waitFor(async () => (await status(ok.json.run_id, ACME)) === 'succeeded', 15_000, 'the run');
    // An ended run left in the set (its end never reached it) is reconciled away at the next admission.
    await h.producer.zadd(key, Date.now(), ok.json.run_id);
    const again = await h.call('POST', '/v1/runs', {
      key: ACME,
      body: { agent: 'test_agent', input: 'and again' },
    });
    expect(again.status).toBe(201);
    expect(await h.producer.zscore(key, ok.json.run_id)).toBeNull();
  });
});

describe('TENANT_QUOTAS', () => {
  it('reads `tenant:runs=N:tokens=N` entries, either limit optional, and refuses an unknown limit', () => {
    expect(loadConfig({ TENANT_QUOTAS: 'acme:runs=20:tokens=2000000,beta:runs=5' }).tenantQuotas).toEqual([
      { tenant: 'acme', maxRunsInFlight: 20, maxTokensPerDay: 2_000_000 },
      { tenant: 'beta', maxRunsInFlight: 5 },
    ]);
    expect(() => loadConfig({ TENANT_QUOTAS: 'acme:cpu=3' })).toThrow(
      'TENANT_QUOTAS must NOT have additional properties',
    );
  });
});
