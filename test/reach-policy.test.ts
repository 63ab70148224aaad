import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handAddedJobs, seedRun } from './helpers/ledger.js';
import { startPlatform } from './helpers/platform.js';
import { TEST_AGENTS } from './helpers/processes.js';
import { startApiHarness, TEST_MODELS, type ApiHarness } from './helpers/api.js';
import { waitFor } from './helpers/redis.js';

type Platform = Awaited<ReturnType<typeof startPlatform>>;

/** The test agents plus agents with scopes, a tool that needs a grant, and a tool with aliases. */
const REACH_AGENTS = `
  - name: scoped_agent
    tools: [orders_read, orders_write, noop, get_full_result, granted_refund]
    scopes: [orders.read]
  - name: unscoped_agent
    tools: [orders_read, orders_write]
  - name: refund_agent
    tools: [granted_refund, orders_read]
  - name: city_agent
    tools: [city_weather]
  - name: asking_agent
    tools: [granted_refund, orders_read]
    grant_by_approval: true
`;

async function agentsFile(dir: string): Promise<string> {
  const file = path.join(dir, 'agents.yaml');
  await writeFile(file, `${await readFile(TEST_AGENTS, 'utf8')}${REACH_AGENTS}`);
  return file;
}

describe('the executor enforces scopes and grants where tools run, even for a job that passes verification', () => {
  let p: Platform;
  let dir: string;
  let forge: ReturnType<typeof handAddedJobs>;
  const executions = async (tool: string) => p.redis.hget(`${p.prefix}:test:reach`, tool);
  /** A job added by hand for a call the run's record holds, so that verification lets it through. */
  const forged = async (run: { agent: string; sessionId?: string; grants?: string[] }, name: string) => {
    const runId = `run-${randomUUID()}`;
    const call = { toolCallId: 'call_1', name, arguments: '{}' };
    await seedRun(p.producer, p.keys, { runId, ...run }, [call]);
    await forge.add({ runId, ...call, agent: run.agent });
    const reply = await forge.reply();
    expect(reply.run_id).toBe(runId);
    return { runId, result: reply.result };
  };

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'ar-reach-'));
    p = await startPlatform({ AGENTS_FILE: await agentsFile(dir) });
    forge = handAddedJobs(p);
  });
  afterAll(async () => {
    await forge.queue.close();
    await p.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("refuses a listed tool outside the agent's scopes as forbidden, naming the scope, and runs nothing", async () => {
    const { runId, result } = await forged({ agent: 'scoped_agent' }, 'orders_write');
    expect(result).toMatchObject({
      ok: false,
      attempts: 0,
      error: { kind: 'forbidden', reason: 'scope', retryable: false },
    });
    expect(result.error?.message).toContain('"orders_write" belongs to scope "orders.write"');
    expect(result.error?.message).toContain('its scopes: orders.read');
    expect(await executions('orders_write')).toBeNull();
    // The refusal is the call's recorded result: the model sees it once and it is not run later.
    expect(JSON.parse((await p.redis.hget(p.keys.results(runId), 'call_1'))!)).toMatchObject({
      error: { kind: 'forbidden' },
    });
  });

  it('runs tools of a scope the agent holds, tools without a scope, and the platform scope', async () => {
    const run = { runId: `run-${randomUUID()}`, agent: 'scoped_agent' };
    expect(await p.callIn(run, 'orders_read', {})).toMatchObject({ ok: true, content: { executions: 1 } });
    expect(await p.callIn(run, 'noop', { value: 'x' })).toMatchObject({ ok: true });
    const page = await p.callIn(run, 'get_full_result', { ref: `ref_${randomUUID()}` });
    expect(page).toMatchObject({ ok: true, no_result: true });
  });

  it('lets an agent without scopes reach every tool it lists, as before scopes existed', async () => {
    const run = { runId: `run-${randomUUID()}`, agent: 'unscoped_agent' };
    expect(await p.callIn(run, 'orders_write', {})).toMatchObject({ ok: true, content: { executions: 1 } });
  });

  it('refuses a tool that requires a grant in a session that was not granted it, and runs nothing', async () => {
    const { result } = await forged({ agent: 'refund_agent', sessionId: 'sess-no-grant' }, 'granted_refund');
    expect(result).toMatchObject({
      ok: false,
      attempts: 0,
      error: { kind: 'forbidden', reason: 'grant', retryable: false },
    });
    expect(result.error?.message).toContain('"granted_refund" may only run when this session was granted it');
    expect(await executions('granted_refund')).toBeNull();
  });

  it("runs a tool that requires a grant once the run's record holds the grant", async () => {
    const { result } = await forged(
      { agent: 'refund_agent', sessionId: 'sess-granted', grants: ['orders_read', 'granted_refund'] },
      'granted_refund',
    );
    expect(result).toMatchObject({ ok: true, content: { executions: 1 } });
  });

  it('refuses a forged job for a call whose grant a person never approved: asked but undecided, approved without a grant, or claimed by the job', async () => {
    const runId = `run-${randomUUID()}`;
    const calls = ['call_1', 'call_2', 'call_3'].map((toolCallId) => ({
      toolCallId,
      name: 'granted_refund',
      arguments: '{}',
    }));
    const before = await executions('granted_refund');
    await seedRun(p.producer, p.keys, { runId, agent: 'asking_agent' }, calls);
    // call_2: an approval that is not a grant (as for a tool needing confirmation); call_3: the job
    // itself says it was approved.
    await p.producer.hset(
      p.keys.runApprovals(runId),
      'call_2',
      JSON.stringify({ decision: 'approved', by: 'mallory', decidedAt: Date.now() }),
    );
    for (const call of calls) {
      await forge.add({
        runId,
        ...call,
        agent: 'asking_agent',
        ...(call.toolCallId === 'call_3' ? { approval: { by: 'mallory', at: Date.now() } } : {}),
      });
      const reply = await forge.reply();
      expect(reply.result, call.toolCallId).toMatchObject({
        ok: false,
        error: { kind: 'forbidden', reason: 'grant' },
      });
    }
    expect(await executions('granted_refund')).toBe(before);
  });

  it("runs the call whose grant request a person approved, and not another call of the tool before the run's record holds the grant", async () => {
    const runId = `run-${randomUUID()}`;
    const calls = ['call_1', 'call_2'].map((toolCallId) => ({
      toolCallId,
      name: 'granted_refund',
      arguments: '{}',
    }));
    const before = Number((await executions('granted_refund')) ?? 0);
    await seedRun(p.producer, p.keys, { runId, agent: 'asking_agent' }, calls);
    // As the decision door records an approved grant request.
    await p.producer.hset(
      p.keys.runApprovals(runId),
      'call_1',
      JSON.stringify({ decision: 'approved', by: 'tester', decidedAt: Date.now(), grant: true }),
    );
    await forge.add({ runId, ...calls[0]!, agent: 'asking_agent' });
    expect((await forge.reply()).result).toMatchObject({ ok: true, content: { executions: before + 1 } });
    await forge.add({ runId, ...calls[1]!, agent: 'asking_agent' });
    expect((await forge.reply()).result).toMatchObject({ ok: false, error: { reason: 'grant' } });
    expect(await executions('granted_refund')).toBe(String(before + 1));
  });

  it('does not let a grant widen reach: a granted tool outside the scopes is still refused', async () => {
    const before = await executions('orders_write');
    const { result } = await forged({ agent: 'scoped_agent', grants: ['orders_write'] }, 'orders_write');
    expect(result).toMatchObject({ ok: false, error: { kind: 'forbidden', reason: 'scope' } });
    expect(await executions('orders_write')).toBe(before);
  });
});

describe('argument aliases are applied by the executor before validation and recorded on the call', () => {
  let p: Platform;
  let dir: string;
  const run = () => ({ runId: `run-${randomUUID()}`, agent: 'city_agent' });
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'ar-alias-'));
    p = await startPlatform({ AGENTS_FILE: await agentsFile(dir) });
  });
  afterAll(async () => {
    await p.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('runs a call whose enum value is an alias with the value it stands for, and records both forms', async () => {
    const r = run();
    const result = await p.callIn(r, 'city_weather', { city: ' 成都 ' });
    expect(result).toMatchObject({
      ok: true,
      content: { city: 'Chengdu' },
      normalized_arguments: { city: 'Chengdu' },
    });
    // The run's record keeps the normalised form with the result.
    const recorded = JSON.parse((await p.redis.hget(p.keys.results(r.runId), result.tool_call_id))!);
    expect(recorded.normalized_arguments).toEqual({ city: 'Chengdu' });
  });

  it('records the normalised arguments with a call that was refused after them', async () => {
    const result = await p.callIn({ ...run(), agent: 'scoped_agent' }, 'city_weather', { city: '成都' });
    expect(result).toMatchObject({
      ok: false,
      error: { kind: 'forbidden' },
      normalized_arguments: { city: 'Chengdu' },
    });
  });

  it('matches aliases ignoring case', async () => {
    expect(await p.callIn(run(), 'city_weather', { city: 'PEKING' })).toMatchObject({
      ok: true,
      content: { city: 'Beijing' },
    });
  });

  it('leaves a value that needs no alias alone and records no normalised arguments', async () => {
    const result = await p.callIn(run(), 'city_weather', { city: 'Beijing' });
    expect(result).toMatchObject({ ok: true, content: { city: 'Beijing' } });
    expect(result).not.toHaveProperty('normalized_arguments');
  });

  it('still refuses a value that is neither allowed nor an alias, naming the allowed values', async () => {
    expect(await p.callIn(run(), 'city_weather', { city: 'Xian' })).toMatchObject({
      ok: false,
      error: { kind: 'invalid_arguments', field: '/city', expected: 'one of ["Chengdu","Beijing"]' },
    });
  });
});

describe('a result cut for the model says so and is summarised first', () => {
  let p: Platform;
  beforeAll(async () => {
    p = await startPlatform();
  });
  afterAll(async () => p.close());

  it('marks a cut result truncated, with a notice naming get_full_result and its ref, and summarises the list', async () => {
    const r = await p.call('big_result', { items: 200 });
    expect(r).toMatchObject({ ok: true, truncated: true });
    expect(r.notice).toContain(`get_full_result({"ref":"${r.ref}","offset":0})`);
    expect(r.notice).toContain('the result was cut to fit 1000 of');
    expect(r.content).toMatchObject({
      rows: { summary: 'array', count: 200, item_keys: ['id', 'text'] },
    });
    expect((r.content as { rows: { first_items: unknown[] } }).rows.first_items[0]).toMatchObject({ id: 0 });
  });
});

describe('through the API, a scheduler and an executor: grants, aliases and retries as the model sees them', () => {
  let h: ApiHarness;
  let dir: string;
  const REFUND = 'refund-once';
  const ASK = 'refund-asking';
  const ASK_REFUSED = 'refund-asking-refused';
  const CITY = 'city-alias';
  const FLAKY = 'flaky-retried';
  const OFFERED = 'scoped-offer';
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'ar-grants-'));
    h = await startApiHarness(
      { allowedModels: [...TEST_MODELS, REFUND, CITY, FLAKY, OFFERED, ASK, ASK_REFUSED] },
      { AGENTS_FILE: await agentsFile(dir) },
    );
    // A session's later runs carry its history: the simulator plays on from the turns already made.
    const refund = [{ tool_calls: [{ name: 'granted_refund', arguments: {} }] }, { content: 'done' }];
    h.sim.addScenario({ name: REFUND, turns: [...refund, ...refund, ...refund] });
    h.sim.addScenario({
      name: CITY,
      turns: [{ tool_calls: [{ name: 'city_weather', arguments: { city: '成都' } }] }, { content: 'sunny' }],
    });
    h.sim.addScenario({ name: OFFERED, turns: [{ content: 'nothing to do' }] });
    // The tool twice, in two turns: the second call runs on the grant the first one's approval gave.
    h.sim.addScenario({ name: ASK, turns: [...refund.slice(0, 1), ...refund] });
    h.sim.addScenario({ name: ASK_REFUSED, turns: [...refund.slice(0, 1), { content: 'understood' }] });
    h.sim.addScenario({
      name: FLAKY,
      turns: [
        { tool_calls: [{ name: 'flaky', arguments: { key: randomUUID(), failures: 1 } }] },
        { content: 'fine' },
      ],
    });
  });
  afterAll(async () => {
    await h.close();
    await rm(dir, { recursive: true, force: true });
  });

  const refundStep = async (runId: string) => {
    const run = await h.client.waitForRun(runId, { timeoutMs: 20_000 });
    return run.steps.find((s) => s.tool === 'granted_refund');
  };
  const message = (sessionId: string) =>
    h.call('POST', `/v1/sessions/${sessionId}/messages`, {
      body: { agent: 'refund_agent', input: 'refund my order', model: REFUND },
    });

  it('refuses the call in a run nobody granted the tool', async () => {
    const created = await h.call('POST', '/v1/runs', {
      body: { agent: 'refund_agent', input: 'refund my order', model: REFUND },
    });
    expect(created.status).toBe(201);
    expect(await refundStep(created.json.run_id)).toMatchObject({ ok: false, error_kind: 'forbidden' });
  });

  it('runs the call in a run whose request granted the tool', async () => {
    const created = await h.call('POST', '/v1/runs', {
      body: { agent: 'refund_agent', input: 'refund my order', model: REFUND, grants: ['granted_refund'] },
    });
    expect(await refundStep(created.json.run_id)).toMatchObject({ ok: true });
  });

  it('runs the call in every run of a session created with the grant', async () => {
    const session = await h.call('POST', '/v1/sessions', {
      body: { agent: 'refund_agent', grants: ['granted_refund'] },
    });
    expect(session.status).toBe(201);
    for (let i = 0; i < 2; i += 1) {
      const sent = await message(session.json.session_id);
      expect(sent.status).toBe(201);
      expect(await refundStep(sent.json.run_id)).toMatchObject({ ok: true });
    }
  });

  it('keeps a grant given with one message of a session for the later runs of that session', async () => {
    const session = await h.call('POST', '/v1/sessions', { body: { agent: 'refund_agent' } });
    const sessionId = session.json.session_id as string;
    const granted = await h.call('POST', `/v1/sessions/${sessionId}/messages`, {
      body: { agent: 'refund_agent', input: 'refund', model: REFUND, grants: ['granted_refund'] },
    });
    expect(await refundStep(granted.json.run_id)).toMatchObject({ ok: true });
    const later = await message(sessionId);
    expect(await refundStep(later.json.run_id)).toMatchObject({ ok: true });
  });

  /** A run of the agent that asks a person for grants, parked on its first call's grant request. */
  const parkedForGrant = async (model: string) => {
    const created = await h.call('POST', '/v1/runs', {
      body: { agent: 'asking_agent', input: 'refund my order', model },
    });
    expect(created.status).toBe(201);
    const runId = created.json.run_id as string;
    const parked = await waitFor(
      async () => {
        const run = await h.client.getRun(runId);
        return run.status === 'awaiting_approval' ? run : undefined;
      },
      20_000,
      `run ${runId} parked`,
    );
    return { runId, parked };
  };
  const refunds = async () =>
    Number((await h.producer.hget(`${h.keys.prefix}:test:reach`, 'granted_refund')) ?? 0);
  const decide = (runId: string, toolCallId: string, decision: 'approve' | 'reject', reason: string) =>
    h.call('POST', `/v1/runs/${runId}/approvals`, { body: { tool_call_id: toolCallId, decision, reason } });

  it('parks a call of a tool the run was not granted for a person; approving grants the tool to the run, records who, and the later call runs without asking again', async () => {
    const before = await refunds();
    const { runId, parked } = await parkedForGrant(ASK);
    expect(parked.pending_approvals).toEqual([
      expect.objectContaining({ tool: 'granted_refund', grant: true }),
    ]);
    expect(await refunds()).toBe(before);
    const asked = parked.pending_approvals[0]!.tool_call_id;
    expect((await decide(runId, asked, 'approve', 'the customer confirmed')).status).toBe(200);
    const run = await h.client.waitForRun(runId, { timeoutMs: 20_000 });
    expect(run.status).toBe('succeeded');
    expect(run.steps.map((s) => [s.tool, s.ok])).toEqual([
      ['granted_refund', true],
      ['granted_refund', true],
    ]);
    expect(await refunds()).toBe(before + 2);
    expect(run.granted_by_approval).toEqual([
      {
        tool: 'granted_refund',
        tool_call_id: asked,
        by: 'tester',
        reason: 'the customer confirmed',
        granted_at: expect.any(Number),
      },
    ]);
    const events = [];
    for await (const e of h.client.streamEvents(runId)) events.push(e);
    const asks = events.filter((e) => e.type === 'approval_requested').map((e) => e.data);
    expect(asks).toEqual([expect.objectContaining({ tool_call_id: asked, grant: true })]);
    expect(events.find((e) => e.type === 'approval_decided')?.data).toMatchObject({
      decision: 'approved',
      by: 'tester',
      grant: true,
    });
  });

  it('answers a refused grant with a refusal the model can act on, and runs nothing', async () => {
    const before = await refunds();
    const { runId, parked } = await parkedForGrant(ASK_REFUSED);
    const asked = parked.pending_approvals[0]!.tool_call_id;
    expect((await decide(runId, asked, 'reject', 'not without a receipt')).status).toBe(200);
    const run = await h.client.waitForRun(runId, { timeoutMs: 20_000 });
    expect(run).toMatchObject({ status: 'succeeded', answer: 'understood' });
    expect(run.steps[0]).toMatchObject({ tool: 'granted_refund', ok: false, error_kind: 'forbidden' });
    expect(run.granted_by_approval).toBeUndefined();
    expect(await refunds()).toBe(before);
    const last = h.sim.requests.filter((r) => r.scenario === ASK_REFUSED).at(-1)!;
    const messages = (last.body as { messages: Array<{ role: string; content?: string }> }).messages;
    const seen = JSON.parse(messages.find((m) => m.role === 'tool')!.content!);
    expect(seen.error).toMatchObject({ kind: 'forbidden', decided_by: 'tester', retryable: false });
    expect(seen.error.message).toBe(
      'a person refused to grant "granted_refund" to this run: not without a receipt; the call was not ' +
        'run and "granted_refund" will not run in this run: answer without it, or tell the user it needs ' +
        'their grant',
    );
  });

  it('still refuses the call outright for an agent that does not ask for grants', async () => {
    const created = await h.call('POST', '/v1/runs', {
      body: { agent: 'refund_agent', input: 'refund my order', model: REFUND },
    });
    const run = await h.client.waitForRun(created.json.run_id, { timeoutMs: 20_000 });
    expect(run.pending_approvals).toEqual([]);
    expect(run.steps[0]).toMatchObject({ ok: false, error_kind: 'forbidden' });
  });

  it("shows an aliased call's arguments as the model sent them and as they ran, in the run and its events", async () => {
    const created = await h.call('POST', '/v1/runs', {
      body: { agent: 'city_agent', input: 'weather in Chengdu?', model: CITY },
    });
    const run = await h.client.waitForRun(created.json.run_id, { timeoutMs: 20_000 });
    expect(run.steps[0]).toMatchObject({ tool: 'city_weather', ok: true, arguments: '{"city":"成都"}' });
    const events = [];
    for await (const e of h.client.streamEvents(run.run_id)) events.push(e);
    const result = events.find((e) => e.type === 'tool_result')?.data;
    expect(result).toMatchObject({
      arguments: '{"city":"成都"}',
      result: { normalized_arguments: { city: 'Chengdu' } },
    });
  });

  it("does not offer the model a listed tool outside the agent's scopes", async () => {
    const created = await h.call('POST', '/v1/runs', {
      body: { agent: 'scoped_agent', input: 'what can you do?', model: OFFERED },
    });
    await h.client.waitForRun(created.json.run_id, { timeoutMs: 20_000 });
    const body = h.sim.requests.find((r) => r.scenario === OFFERED)!.body as {
      tools: Array<{ function: { name: string } }>;
    };
    expect(body.tools.map((t) => t.function.name).sort()).toEqual([
      'get_full_result',
      'granted_refund',
      'noop',
      'orders_read',
    ]);
  });

  it('keeps executor retries out of the tool message the model reads, and in the run, its events and record', async () => {
    const created = await h.call('POST', '/v1/runs', {
      body: { agent: 'test_agent', input: 'try the flaky upstream', model: FLAKY },
    });
    const run = await h.client.waitForRun(created.json.run_id, { timeoutMs: 20_000 });
    expect(run.steps[0]).toMatchObject({ tool: 'flaky', ok: true, attempts: 2 });
    const second = h.sim.requests.filter((r) => r.scenario === FLAKY).at(-1)!;
    const messages = (second.body as { messages: Array<{ role: string; content?: string }> }).messages;
    const seen = JSON.parse(messages.find((m) => m.role === 'tool')!.content!);
    expect(seen).toMatchObject({ ok: true, content: { attempts_seen: 2 } });
    expect(seen).not.toHaveProperty('attempts');
    expect(seen).not.toHaveProperty('attempt_log');
    expect(run.steps[0]!.attempt_log?.map((t) => [t.attempt, t.outcome])).toEqual([
      [1, 'transient'],
      [2, 'ok'],
    ]);
    const events = [];
    for await (const e of h.client.streamEvents(run.run_id)) events.push(e);
    expect(events.find((e) => e.type === 'tool_result')?.data).toMatchObject({
      attempts: 2,
      result: { attempts: 2 },
    });
    // The record keeps them in the call's step: the run's end dropped the results-hash entry its tool message repeats.
    const stored = JSON.parse((await h.producer.get(h.keys.runState(run.run_id)))!) as {
      steps: Array<{ attempts?: number; attempt_log?: unknown }>;
    };
    expect(stored.steps[0]).toMatchObject({ attempts: 2, attempt_log: run.steps[0]!.attempt_log });
    expect(await h.producer.exists(h.keys.results(run.run_id))).toBe(0);
  });

  it('refuses to grant a tool the agent does not list, naming it (403, nothing started)', async () => {
    const refused = await h.call('POST', '/v1/runs', {
      body: { agent: 'refund_agent', input: 'x', model: REFUND, grants: ['orders_write'] },
    });
    expect(refused.status).toBe(403);
    expect(refused.json.error).toMatchObject({ code: 'FORBIDDEN' });
    expect(refused.json.error.message).toContain('may not grant "orders_write"');
    const session = await h.call('POST', '/v1/sessions', { body: { grants: ['granted_refund'] } });
    expect(session.status).toBe(400);
    expect(session.json.error.message).toContain("grants need the session's agent");
  });
});
