import { afterEach, describe, expect, it } from 'vitest';
import { ofType } from './helpers/agent-tools.js';
import { startApiHarness, type ApiHarness } from './helpers/api.js';
import { writeAgentsFile } from './helpers/mcp.js';
import { waitFor } from './helpers/redis.js';

/**
 * Child runs and the tenant's quota of runs in flight: a child counts like any run; a caller whose
 * tenant is at its limit still gets one child at a time (it never waits on its own tenant), and further
 * calls of the same turn are refused with an error the model can act on. Real Redis, fleet, llm-sim.
 */
const AGENTS = {
  agents: [
    { name: 'fanout', tools: [], model: 'quota-fanout', agent_tools: ['helper'] },
    { name: 'helper', tools: ['slow'], model: 'quota-helper' },
  ],
};

describe('agents as tools: child runs and the tenant quota (real Redis, real fleet, llm-sim)', () => {
  let h: ApiHarness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  const start = async (quota: { maxRunsInFlight?: number; maxTokensPerDay?: number }, env: string) => {
    h = await startApiHarness(
      { tenantQuotas: [{ tenant: 'default', ...quota }] },
      {
        AGENTS_FILE: writeAgentsFile(AGENTS),
        ALLOWED_MODELS: 'echo,quota-fanout,quota-helper',
        TENANT_QUOTAS: env,
      },
    );
    h.sim.addScenario({
      name: 'quota-fanout',
      turns: [
        {
          tool_calls: [
            { name: 'ask_helper', arguments: { input: 'first' } },
            { name: 'ask_helper', arguments: { input: 'second' } },
          ],
        },
        { tool_calls: [{ name: 'ask_helper', arguments: { input: 'second, again' } }] },
        { content: 'fanout: {{ last.content ?? last.error.type }}' },
      ],
    });
    h.sim.addScenario({
      name: 'quota-helper',
      turns: [{ tool_calls: [{ name: 'slow', arguments: { ms: 300 } }] }, { content: 'helped' }],
    });
    return h;
  };

  it('admits one child of a caller whose tenant is at its limit, refuses the other calls of the turn as quota_exceeded, and admits the call again once the first child answered', async () => {
    const harness = await start({ maxRunsInFlight: 1 }, 'default:runs=1');
    const started = await harness.call('POST', '/v1/runs', { body: { agent: 'fanout', input: 'go' } });
    expect(started.status).toBe(201);
    const parentId = started.json.run_id as string;
    // The tenant is at its limit with the caller alone: another run is refused at the door...
    const child = await waitFor(
      async () => ofType(await harness.control.events(parentId), 'child_run_started')[0],
      15_000,
      'the first child to start',
    );
    const inFlight = await harness.redis.zrange(harness.keys.tenantInFlight('default'), 0, -1);
    // ... while the caller's one child runs past it, counted.
    expect(inFlight.sort()).toEqual([parentId, child.child_run_id].sort());
    const refusedAtDoor = await harness.call('POST', '/v1/runs', { body: { agent: 'helper', input: 'x' } });
    expect(refusedAtDoor.status).toBe(429);

    const outcome = await harness.control.wait(parentId, 30_000);
    expect(outcome).toMatchObject({ status: 'succeeded', answer: 'fanout: helped' });
    const results = ofType(await harness.control.events(parentId), 'tool_result');
    expect(results.map((r) => [r.ok, r.error?.type])).toEqual([
      [true, undefined],
      [false, 'quota_exceeded'],
      [true, undefined],
    ]);
    expect(results[1]?.error).toMatchObject({ kind: 'unavailable', retryable: true });
    expect(results[1]?.error?.message).toBe(
      '"ask_helper" was not called: tenant "default" has 2 runs in flight, its limit is 1, and 1 other ' +
        'agent call(s) of this run are still running; call it again once they have answered',
    );
    expect(ofType(await harness.control.events(parentId), 'child_run_started')).toHaveLength(2);
    // Every run ended leaves the tenant's runs in flight.
    await waitFor(
      async () =>
        (await harness.redis.zcard(harness.keys.tenantInFlight('default'))) === 0 ? true : undefined,
      10_000,
      'the tenant to have no run in flight',
    );
  });

  it('refuses every agent call of a tenant that used its tokens of the day, starting no child run', async () => {
    const harness = await start({ maxTokensPerDay: 5 }, 'default:tokens=5');
    const day = new Date().toISOString().slice(0, 10);
    await harness.redis.set(harness.keys.tenantTokens('default', day), 10);
    // Started past the door (as enqueueRun does): the door would refuse the run itself.
    const parentId = await harness.control.start({ agent: 'fanout', input: 'go' });
    const outcome = await harness.control.wait(parentId, 30_000);
    expect(outcome.answer).toBe('fanout: quota_exceeded');
    const results = ofType(await harness.control.events(parentId), 'tool_result');
    expect(results).toHaveLength(3);
    for (const r of results) {
      expect(r.error).toMatchObject({ kind: 'unavailable', type: 'quota_exceeded', retryable: false });
      expect(r.error?.message).toContain('tenant "default" used 10 tokens today (UTC), its limit is 5 a day');
    }
    expect(ofType(await harness.control.events(parentId), 'child_run_started')).toEqual([]);
  });
});
