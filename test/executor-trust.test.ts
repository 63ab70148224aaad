import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toolJobId, type ToolResult } from '@agent-reach/protocol';
import { callLedgerEntry, callStartField, createLogger } from '@agent-reach/shared';
import { startApiHarness, TEST_MODELS, type ApiHarness } from './helpers/api.js';
import { handAddedJobs, seedCalls, seedDecision, seedRun } from './helpers/ledger.js';
import { startPlatform } from './helpers/platform.js';
import { TEST_AGENTS } from './helpers/processes.js';
import { waitFor } from './helpers/redis.js';

type Platform = Awaited<ReturnType<typeof startPlatform>>;

/** The executor's warnings, kept instead of printed. */
function capturedLogger() {
  const warnings: Array<Record<string, unknown>> = [];
  const logger = createLogger('executor', {
    level: 'warn',
    hooks: {
      logMethod(args) {
        const [first, second] = args as unknown[];
        warnings.push({ ...(typeof first === 'object' ? first : {}), msg: second ?? first });
      },
    },
  });
  return { logger, warnings };
}

async function metric(p: Platform, pattern: RegExp): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${p.executor.metricsPort}/metrics`)).text();
  const m = pattern.exec(text);
  return m ? Number(m[1]) : 0;
}

describe('the executor verifies every job against its run record before running anything', () => {
  let p: Platform;
  let forge: ReturnType<typeof handAddedJobs>;
  let log: ReturnType<typeof capturedLogger>;
  const effects = async () => p.redis.hgetall(`${p.prefix}:test:effects`);
  beforeAll(async () => {
    log = capturedLogger();
    p = await startPlatform({}, { logger: log.logger });
    forge = handAddedJobs(p);
  });
  afterAll(async () => {
    await forge.queue.close();
    await p.close();
  });

  /**
   * A job that was refused: one security warning naming it, failed without retry and then removed (it
   * must not hold the call's job id), nothing run, nothing replied.
   */
  const expectRefused = async (id: string, reason: string) => {
    await waitFor(() => log.warnings.some((w) => w.jobId === id), 10_000, `the refusal of ${id}`);
    await forge.settled(id);
    // Failed unrun, then removed by the executor so the id stays free.
    await waitFor(
      async () => (await forge.queue.getJobState(id)) === 'unknown',
      10_000,
      `${id} to be removed`,
    );
    expect(log.warnings.filter((w) => w.jobId === id)).toEqual([
      expect.objectContaining({
        security: true,
        reason,
        msg: 'refused a tool job that does not match its run record',
      }),
    ]);
    expect(await p.redis.llen(p.keys.replies('forger'))).toBe(0);
  };

  it('refuses a hand-added job whose call is not in the run ledger and writes nothing', async () => {
    const runId = `run-${randomUUID()}`;
    await seedRun(p.producer, p.keys, { runId, agent: 'test_agent' });
    const id = await forge.add({ runId, toolCallId: 'call_forged', name: 'counted_effect' });
    await expectRefused(id, 'not_in_ledger');
    expect(await effects()).toEqual({});
    expect(await p.redis.exists(p.keys.results(runId))).toBe(0);
    expect(await metric(p, /agent_reach_tool_jobs_refused_total\{reason="not_in_ledger"\} (\d+)/)).toBe(1);
  });

  it('refuses a job of an unknown wire version, naming the version, and runs nothing', async () => {
    const runId = `run-${randomUUID()}`;
    const call = { toolCallId: 'call_1', name: 'counted_effect', arguments: '{"ms":1}' };
    await seedRun(p.producer, p.keys, { runId, agent: 'test_agent' }, [call]);
    const id = await forge.add({ runId, ...call, v: 3 });
    await expectRefused(id, 'unsupported_version');
    expect(log.warnings.find((w) => w.jobId === id)?.problem).toBe(
      'tool-call job has wire version 3; this release reads versions 1 and 2',
    );
    expect(await effects()).toEqual({});
    expect(await p.redis.exists(p.keys.results(runId))).toBe(0);
  });

  it('runs a job of the previous release, camelCase and without a version, as version 1', async () => {
    const runId = `run-${randomUUID()}`;
    const call = { toolCallId: 'call_1', name: 'noop', arguments: '{"value":"old"}' };
    await seedRun(p.producer, p.keys, { runId, agent: 'test_agent' }, [call]);
    const id = await forge.add({ runId, ...call, replyTo: p.keys.replies('old-release'), v: 1 });
    await forge.settled(id);
    const reply = await p.redis.lpop(p.keys.replies('old-release'));
    expect(JSON.parse(reply ?? '{}')).toMatchObject({
      v: 2,
      run_id: runId,
      result: { tool_call_id: 'call_1', ok: true, content: { echo: 'old' } },
    });
  });

  it("a refused job does not hold the call's job id: the call the model makes later still runs", async () => {
    const runId = `run-${randomUUID()}`;
    await seedRun(p.producer, p.keys, { runId, agent: 'test_agent' });
    const call = { toolCallId: 'call_later', name: 'noop', arguments: '{"value":"later"}' };
    const squatted = await forge.add({ runId, ...call }, toolJobId(runId, call.toolCallId));
    await expectRefused(squatted, 'not_in_ledger');
    await seedCalls(p.producer, p.keys, { runId, agent: 'test_agent' }, [call]);
    const [result] = await p.dispatcher.dispatch({ runId, traceId: runId, agent: 'test_agent' }, [call]);
    expect(result).toMatchObject({ ok: true, content: { echo: 'later' } });
  });

  it('refuses a job whose arguments differ from the call the model made', async () => {
    const runId = `run-${randomUUID()}`;
    const call = { toolCallId: 'call_1', name: 'counted_effect', arguments: '{"ms":1}' };
    await seedRun(p.producer, p.keys, { runId, agent: 'test_agent' }, [call]);
    const id = await forge.add({ runId, ...call, arguments: '{"ms":2}' });
    await expectRefused(id, 'not_in_ledger');
    expect(await effects()).toEqual({});
    // The script that verifies a job also records its start: a refused job leaves no start behind.
    expect(await p.redis.hget(p.keys.runCalls(runId), callStartField('call_1'))).toBeNull();
  });

  it('runs a job whose ledger entry holds the same call with its fields in another order', async () => {
    const runId = `run-${randomUUID()}`;
    const call = { toolCallId: 'call_1', name: 'noop', arguments: '{"value":"reordered"}' };
    await seedRun(p.producer, p.keys, { runId, agent: 'test_agent' });
    const entry = JSON.parse(callLedgerEntry({ agent: 'test_agent', ...call })) as Record<string, string>;
    const reordered = JSON.stringify(Object.fromEntries(Object.entries(entry).reverse()));
    await p.producer.hset(p.keys.runCalls(runId), 'call_1', reordered);
    await forge.add({ runId, ...call });
    expect(await forge.reply()).toMatchObject({
      run_id: runId,
      result: { ok: true, content: { echo: 'reordered' } },
    });
    expect(await p.redis.hget(p.keys.runCalls(runId), callStartField('call_1'))).toMatch(/^started:\d+:./);
  });

  it('refuses a job claiming another agent than the run belongs to', async () => {
    const runId = `run-${randomUUID()}`;
    const call = { toolCallId: 'call_1', name: 'query_weather', arguments: '{"city":"北京"}' };
    await seedRun(p.producer, p.keys, { runId, agent: 'weather_only' }, [call]);
    const id = await forge.add({ runId, ...call, agent: 'test_agent' });
    await expectRefused(id, 'wrong_agent');
    expect(await p.redis.exists(p.keys.results(runId))).toBe(0);
  });

  it('refuses a job for a run that does not exist, and for a run that has ended', async () => {
    const call = { toolCallId: 'call_1', name: 'counted_effect', arguments: '{}' };
    const missing = await forge.add({ runId: `run-${randomUUID()}`, ...call });
    await expectRefused(missing, 'run_not_found');
    const ended = `run-${randomUUID()}`;
    await seedRun(p.producer, p.keys, { runId: ended, agent: 'test_agent', status: 'succeeded' }, [call]);
    const late = await forge.add({ runId: ended, ...call });
    await expectRefused(late, 'run_final');
    expect(log.warnings.find((w) => w.jobId === late)?.problem).toBe('the run is succeeded');
    expect(await effects()).toEqual({});
    expect(await p.redis.exists(p.keys.results(ended))).toBe(0);
    expect(await p.redis.hkeys(p.keys.runCalls(ended))).not.toContainEqual(expect.stringMatching(/:start$/));
  });

  it('ignores the approval a job carries: a confirmation tool without a recorded decision does not run', async () => {
    const runId = `run-${randomUUID()}`;
    const call = { toolCallId: 'call_1', name: 'needs_approval', arguments: '{}' };
    await seedRun(p.producer, p.keys, { runId, agent: 'test_agent' }, [call]);
    await forge.add({ runId, ...call, approval: { by: 'nobody', at: Date.now() } });
    const { result } = await forge.reply();
    expect(result).toMatchObject({ ok: false, attempts: 0, error: { kind: 'awaiting_confirmation' } });
    // Nothing is recorded: once a person approves, the call can still run.
    expect(await p.redis.hget(p.keys.results(runId), 'call_1')).toBeNull();
  });

  it('refuses a confirmation tool job whose recorded decision is a rejection', async () => {
    const runId = `run-${randomUUID()}`;
    const call = { toolCallId: 'call_1', name: 'needs_approval', arguments: '{}' };
    await seedRun(p.producer, p.keys, { runId, agent: 'test_agent' }, [call]);
    await seedDecision(p.producer, p.keys, runId, 'call_1', 'rejected');
    const id = await forge.add({ runId, ...call, approval: { by: 'forger', at: Date.now() } });
    await expectRefused(id, 'not_approved');
    expect(await p.redis.exists(p.keys.results(runId))).toBe(0);
    expect(await p.redis.hget(p.keys.runCalls(runId), callStartField('call_1'))).toBeNull();
  });

  it('runs a confirmation tool once a person approved the call in the run record', async () => {
    const runId = `run-${randomUUID()}`;
    const call = { toolCallId: 'call_1', name: 'needs_approval', arguments: '{}' };
    await seedRun(p.producer, p.keys, { runId, agent: 'test_agent' }, [call]);
    await seedDecision(p.producer, p.keys, runId, 'call_1', 'approved');
    await forge.add({ runId, ...call });
    expect(await forge.reply()).toMatchObject({
      v: 2,
      run_id: runId,
      result: { ok: true, content: { done: true } },
    });
    expect(JSON.parse((await p.redis.hget(p.keys.results(runId), 'call_1'))!)).toMatchObject({ ok: true });
  });

  it('refuses a job whose replyTo is not a dispatcher reply list and creates no key', async () => {
    const runId = `run-${randomUUID()}`;
    const call = { toolCallId: 'call_1', name: 'counted_effect', arguments: '{}' };
    await seedRun(p.producer, p.keys, { runId, agent: 'test_agent' }, [call]);
    for (const replyTo of [`${p.prefix}:victim`, p.keys.replies('../x'), `${p.keys.replies('a')}:b`]) {
      const id = await forge.add({ runId, ...call, replyTo });
      await expectRefused(id, 'reply_to');
      expect(await p.redis.exists(replyTo)).toBe(0);
    }
    expect(await effects()).toEqual({});
    expect(await p.redis.exists(p.keys.results(runId))).toBe(0);
  });

  it('refuses a job whose ids do not match their patterns before reading any key', async () => {
    const id = await forge.add({ runId: 'run:x', toolCallId: 'call_1', name: 'counted_effect' });
    await expectRefused(id, 'malformed');
  });

  it("never replaces another run's recorded result: a replayed job gets the recorded one back", async () => {
    const first = await p.call('counted_effect', {});
    const recorded = await p.redis.hget(p.keys.results(p.runId), first.tool_call_id);
    const id = await forge.add({
      runId: p.runId,
      toolCallId: first.tool_call_id,
      name: 'counted_effect',
      arguments: '{}',
    });
    expect(await forge.reply()).toEqual({ v: 2, run_id: p.runId, result: JSON.parse(recorded!) });
    expect((await forge.settled(id)).state).not.toBe('failed');
    expect(await p.redis.hget(p.keys.results(p.runId), first.tool_call_id)).toBe(recorded);
    expect(Object.values(await effects())).toEqual(['1']);
  });
});

describe('the first recorded result of a call wins', () => {
  let p: Platform;
  beforeAll(async () => {
    p = await startPlatform();
  });
  afterAll(async () => p.close());

  it('keeps the recorded result when a second execution finishes later, and replies the recorded one', async () => {
    const run = { runId: `run-${randomUUID()}`, agent: 'test_agent' };
    const pending = p.callIn(run, 'slow', { ms: 600 });
    await waitFor(async () => Number(await p.redis.get(`${p.prefix}:test:slow:started`)) === 1, 10_000);
    // Another execution of the same call (a redelivery) recorded its result while this one ran.
    // The ledger holds the call and, under `<id>:start`, its start.
    const [toolCallId] = (await p.redis.hkeys(p.keys.runCalls(run.runId))).filter(
      (k) => !k.endsWith(':start'),
    );
    const earlier: ToolResult = {
      tool_call_id: toolCallId!,
      name: 'slow',
      ok: true,
      status: 'ok',
      content: { slept_ms: 600, by: 'the first execution' },
      duration_ms: 600,
      attempts: 1,
    };
    await p.redis.hset(p.keys.results(run.runId), toolCallId!, JSON.stringify(earlier));
    const seen = await pending;
    expect(seen).toEqual(earlier);
    expect(Number(await p.redis.get(`${p.prefix}:test:slow:finished`))).toBe(1);
    expect(JSON.parse((await p.redis.hget(p.keys.results(run.runId), toolCallId!))!)).toEqual(earlier);
    expect(await metric(p, /agent_reach_tool_duplicate_results_total\{tool="slow"\} (\d+)/)).toBe(1);
  });
});

describe('refs belong to the run, agent and session that left them', () => {
  let p: Platform;
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'ar-refs-'));
    const agents = path.join(dir, 'agents.yaml');
    const fixture = await readFile(TEST_AGENTS, 'utf8');
    await writeFile(agents, `${fixture}\n  - name: other_agent\n    tools: [get_full_result]\n`);
    p = await startPlatform({ AGENTS_FILE: agents });
  });
  afterAll(async () => {
    await p.close();
    await rm(dir, { recursive: true, force: true });
  });

  const leaveRef = async (run: { runId: string; agent: string; sessionId?: string }) => {
    const r = await p.callIn(run, 'big_result', { items: 200 });
    expect(r).toMatchObject({ ok: true, truncated: true });
    return r.ref as string;
  };
  const read = (run: { runId: string; agent: string; sessionId?: string }, ref: string) =>
    p.callIn(run, 'get_full_result', { ref, limit: 100 });
  const served = (r: ToolResult) =>
    r.ok && !r.no_result && typeof (r.content as { page?: unknown }).page === 'string';
  const notFound = (r: ToolResult, ref: string) =>
    expect(r).toMatchObject({
      ok: true,
      no_result: true,
      content: { hint: `no stored result under ${ref}; it may have expired` },
    });
  const fresh = (agent: string, sessionId?: string) => ({
    runId: `run-${randomUUID()}`,
    agent,
    ...(sessionId ? { sessionId } : {}),
  });

  it('serves a ref to the run that left it and to a later run of the same agent in the same session', async () => {
    const owner = fresh('test_agent', 'sess-a');
    const ref = await leaveRef(owner);
    expect(served(await read(owner, ref))).toBe(true);
    expect(served(await read(fresh('test_agent', 'sess-a'), ref))).toBe(true);
    const owned = await p.redis.hgetall(p.keys.ref(ref));
    expect(owned).toMatchObject({ runId: owner.runId, agent: 'test_agent', sessionId: 'sess-a' });
  });

  it("answers another agent's ref exactly as a ref that does not exist", async () => {
    const ref = await leaveRef(fresh('test_agent'));
    notFound(await read(fresh('other_agent'), ref), ref);
  });

  it('answers a ref of another session of the same agent, or of no session, as not found', async () => {
    const ref = await leaveRef(fresh('test_agent', 'sess-b'));
    notFound(await read(fresh('test_agent', 'sess-c'), ref), ref);
    notFound(await read(fresh('test_agent'), ref), ref);
  });
});

describe("a forged job cannot void a person's decision", () => {
  const MODEL = 'refund-after-grant';
  let h: ApiHarness;
  let dir: string;
  let forge: ReturnType<typeof handAddedJobs>;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'ar-decision-'));
    const agents = path.join(dir, 'agents.yaml');
    const fixture = await readFile(TEST_AGENTS, 'utf8');
    await writeFile(
      agents,
      `${fixture}\n  - name: asking_agent\n    tools: [granted_refund]\n    grant_by_approval: true\n`,
    );
    h = await startApiHarness({ allowedModels: [...TEST_MODELS, MODEL] }, { AGENTS_FILE: agents });
    h.sim.addScenario({
      name: MODEL,
      turns: [{ tool_calls: [{ name: 'granted_refund', arguments: {} }] }, { content: 'refunded' }],
    });
    forge = handAddedJobs(h);
  });
  afterAll(async () => {
    await forge?.queue.close();
    await h?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("records nothing for a forged job of a call parked on a person's grant decision: once approved, the call runs and the model reads its result", async () => {
    const created = await h.call('POST', '/v1/runs', {
      body: { agent: 'asking_agent', input: 'refund my order', model: MODEL },
    });
    expect(created.status).toBe(201);
    const runId = created.json.run_id as string;
    const parked = await waitFor(
      async () => {
        const run = await h.client.getRun(runId);
        return run.status === 'awaiting_approval' ? run : undefined;
      },
      20_000,
      `run ${runId} to wait for a person`,
    );
    const pending = parked.pending_approvals[0]!;
    expect(pending).toMatchObject({ tool: 'granted_refund', grant: true });
    const args = pending.arguments as unknown;
    // The exact pending call, as anyone with Redis access could add it to the tool queue.
    await forge.add({
      runId,
      toolCallId: pending.tool_call_id,
      name: 'granted_refund',
      agent: 'asking_agent',
      arguments: typeof args === 'string' ? args : JSON.stringify(args),
    });
    expect((await forge.reply()).result).toMatchObject({
      ok: false,
      error: { kind: 'forbidden', reason: 'grant' },
    });
    expect(await h.producer.hget(h.keys.results(runId), pending.tool_call_id)).toBeNull();
    const decided = await h.call('POST', `/v1/runs/${runId}/approvals`, {
      body: { tool_call_id: pending.tool_call_id, decision: 'approve', reason: 'the customer asked' },
    });
    expect(decided.status).toBe(200);
    const run = await h.client.waitForRun(runId, { timeoutMs: 20_000 });
    expect(run).toMatchObject({ status: 'succeeded', answer: 'refunded' });
    expect(run.steps.map((s) => [s.tool, s.ok])).toEqual([['granted_refund', true]]);
    const last = h.sim.requests.filter((r) => r.scenario === MODEL).at(-1)!;
    const messages = (last.body as { messages: Array<{ role: string; content?: string }> }).messages;
    expect(JSON.parse(messages.find((m) => m.role === 'tool')!.content!)).toMatchObject({ ok: true });
  });

  it('still records the refusal of a call a person has decided on without a grant', async () => {
    const runId = `run-${randomUUID()}`;
    const call = { toolCallId: 'call_1', name: 'granted_refund', arguments: '{}' };
    await seedRun(h.producer, h.keys, { runId, agent: 'asking_agent' }, [call]);
    await seedDecision(h.producer, h.keys, runId, 'call_1', 'approved');
    await forge.add({ runId, ...call, agent: 'asking_agent' });
    expect((await forge.reply()).result).toMatchObject({ ok: false, error: { reason: 'grant' } });
    expect(JSON.parse((await h.producer.hget(h.keys.results(runId), 'call_1'))!)).toMatchObject({
      error: { kind: 'forbidden', reason: 'grant' },
    });
  });
});
