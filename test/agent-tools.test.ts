import { afterEach, describe, expect, it } from 'vitest';
import { replayRun } from '@agent-reach/scheduler';
import { constants } from '@agent-reach/shared';
import { addScenarios, AGENTS, MODELS, ofType } from './helpers/agent-tools.js';
import { FULL_KEY, startApiHarness, type ApiHarness } from './helpers/api.js';
import { writeAgentsFile } from './helpers/mcp.js';
import { startSchedulerChild, type Child } from './helpers/processes.js';
import { waitFor } from './helpers/redis.js';
import { startRunsHarness, testEnv } from './helpers/runs.js';

describe('agents as tools: a call runs a child agent on the fleet (real Redis, llm-sim, executor, schedulers)', () => {
  let h: ApiHarness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  const start = async () => {
    h = await startApiHarness({}, { AGENTS_FILE: writeAgentsFile(AGENTS), ...MODELS });
    addScenarios(h.sim);
    return h;
  };
  /** The child run a parent's call started, once its `child_run_started` event is stored. */
  const childOf = async (harness: ApiHarness, runId: string) =>
    waitFor(
      async () => ofType(await harness.control.events(runId), 'child_run_started')[0],
      15_000,
      'the child run to start',
    );
  const parkedChild = async (harness: ApiHarness, runId: string) =>
    waitFor(
      async () => {
        const r = (await harness.call('GET', `/v1/runs/${runId}`, { key: FULL_KEY })).json;
        return r.status === 'awaiting_approval' ? r : undefined;
      },
      15_000,
      'the child run to wait for a person',
    );

  it('answers the parent with the child run’s answer after a person approves the child’s call through the API, with both runs linked', async () => {
    const harness = await start();
    const posted = await harness.call('POST', '/v1/runs', {
      key: FULL_KEY,
      body: { agent: 'planner', input: 'plan it' },
    });
    expect(posted.status).toBe(201);
    const parentId = posted.json.run_id as string;
    const started = await childOf(harness, parentId);
    expect(started).toMatchObject({ tool: 'ask_researcher', agent: 'researcher', depth: 1 });
    const child = await parkedChild(harness, started.child_run_id);
    // The child is an ordinary run: it waits for a person like any other run, with its pending call.
    expect(child.pending_approvals[0]).toMatchObject({ tool: 'needs_approval' });
    // The waiting parent holds no worker slot: its job is parked (delayed) until the child answers.
    const parentJob = await harness.control.queue.getJob(parentId);
    expect(await parentJob?.isDelayed()).toBe(true);
    const decided = await harness.call('POST', `/v1/runs/${started.child_run_id}/approvals`, {
      key: FULL_KEY,
      body: { tool_call_id: child.pending_approvals[0].tool_call_id, decision: 'approve' },
    });
    expect(decided.status).toBeLessThan(300);
    const outcome = await harness.control.wait(parentId, 30_000);
    expect(outcome.status).toBe('succeeded');
    expect(outcome.answer).toBe('planner: researched ok=true');
    expect(outcome.steps[0]).toMatchObject({
      tool: 'ask_researcher',
      ok: true,
      child_run_id: started.child_run_id,
    });
    const childState = (await harness.control.get(started.child_run_id))?.state;
    expect(childState?.parent).toMatchObject({ runId: parentId, tool: 'ask_researcher', depth: 1 });
    expect(childState?.traceId).toBe((await harness.control.get(parentId))?.state?.traceId);
    expect(childState?.outcome?.answer).toBe('researched ok=true');
    // The child's deadline is never past its parent's.
    const parentState = (await harness.control.get(parentId))?.state;
    expect(childState!.deadlineAt).toBeLessThanOrEqual(parentState!.deadlineAt);
    const view = (await harness.call('GET', `/v1/runs/${parentId}`, { key: FULL_KEY })).json;
    expect(view.children).toEqual([
      {
        tool_call_id: started.tool_call_id,
        tool: 'ask_researcher',
        agent: 'researcher',
        run_id: started.child_run_id,
      },
    ]);
    expect(view.steps[0].child_run_id).toBe(started.child_run_id);
    // A replay answers the call with the child's recorded answer and starts no child run.
    const replay = await replayRun(parentId, {
      runner: harness.schedulers[0]!.runner,
      store: harness.control.store,
    });
    expect(replay.outcome).toMatchObject({ status: 'succeeded', answer: 'planner: researched ok=true' });
    expect(replay.calls).toEqual([
      { toolCallId: started.tool_call_id, tool: 'ask_researcher', source: 'recorded' },
    ]);
    expect((await harness.control.list()).filter((r) => r.agent === 'researcher')).toHaveLength(1);
    const childView = (await harness.call('GET', `/v1/runs/${started.child_run_id}`, { key: FULL_KEY })).json;
    expect(childView.parent).toEqual({
      run_id: parentId,
      tool_call_id: started.tool_call_id,
      tool: 'ask_researcher',
      depth: 1,
    });
  });

  it('runs the other calls of the turn while the child run waits, and answers the turn once the child has', async () => {
    const harness = await start();
    const parentId = await harness.control.start({ agent: 'busy_planner', input: 'plan and note' });
    const started = await childOf(harness, parentId);
    const child = await parkedChild(harness, started.child_run_id);
    const turn = ofType(await harness.control.events(parentId), 'llm_request')[0]!;
    const noopId = turn.message.tool_calls!.find((c) => c.name === 'noop')!.id;
    // The executor ran the other call while the child waits for a person.
    const recorded = await waitFor(
      async () => (await harness.redis.hget(harness.keys.results(parentId), noopId)) ?? undefined,
      10_000,
      "the other call's result",
    );
    expect(JSON.parse(recorded)).toMatchObject({ ok: true, content: { echo: 'beside' } });
    expect((await harness.control.get(parentId))?.state?.outcome).toBeUndefined();
    await harness.control.decide({
      runId: started.child_run_id,
      toolCallId: child.pending_approvals[0].tool_call_id,
      decision: 'approved',
    });
    const outcome = await harness.control.wait(parentId, 30_000);
    expect(outcome.answer).toBe('both answered');
    expect(outcome.steps.map((s) => [s.tool, s.ok, s.answered])).toEqual([
      ['ask_researcher', true, 'local'],
      ['noop', true, 'dispatched'],
    ]);
  });

  it('hands the parent the child run’s structured output as the call’s content when the child has an output schema', async () => {
    const harness = await start();
    const runId = await harness.control.start({ agent: 'clerk', input: 'may I refund order 7?' });
    const outcome = await harness.control.wait(runId, 30_000);
    expect(outcome.answer).toBe('allowed=true because damaged on arrival');
    const result = ofType(await harness.control.events(runId), 'tool_result')[0];
    expect(result?.result?.content).toEqual({ allowed: true, why: 'damaged on arrival' });
  });

  it('cancels the child when the parent is cancelled while it waits', async () => {
    const harness = await start();
    const parentId = await harness.control.start({ agent: 'planner', input: 'plan it' });
    const started = await childOf(harness, parentId);
    await parkedChild(harness, started.child_run_id);
    await harness.control.cancel(parentId);
    expect((await harness.control.wait(parentId, 20_000)).status).toBe('cancelled');
    const child = await harness.control.wait(started.child_run_id, 20_000);
    expect(child.status).toBe('cancelled');
  });

  it('answers the parent’s call with a structured error when the child alone is cancelled, and the parent goes on', async () => {
    const harness = await start();
    const parentId = await harness.control.start({ agent: 'planner', input: 'plan it' });
    const started = await childOf(harness, parentId);
    await parkedChild(harness, started.child_run_id);
    await harness.control.cancel(started.child_run_id);
    const outcome = await harness.control.wait(parentId, 20_000);
    expect(outcome.status).toBe('succeeded');
    expect(outcome.answer).toBe(
      'planner: the agent "researcher" ended cancelled (cancelled): the run was cancelled',
    );
    const result = ofType(await harness.control.events(parentId), 'tool_result')[0];
    expect(result?.error).toMatchObject({ kind: 'execution_error', type: 'agent_cancelled' });
    expect(result?.child_run_id).toBe(started.child_run_id);
  });

  it('stops waiting at the parent’s deadline, the call answered as failed, and the child, whose own deadline is the parent’s, ends too', async () => {
    const harness = await start();
    const parentId = await harness.control.start({ agent: 'hasty_planner', input: 'plan it fast' });
    const started = await childOf(harness, parentId);
    const parent = await harness.control.wait(parentId, 20_000);
    expect(parent).toMatchObject({ status: 'not_converged', reason: 'deadline' });
    // Both wake at the same deadline: the parent's own answer or the child's end, whichever is recorded first.
    const result = ofType(await harness.control.events(parentId), 'tool_result')[0];
    expect(result?.ok).toBe(false);
    expect(['unavailable', 'execution_error']).toContain(result?.error?.kind);
    const child = await harness.control.wait(started.child_run_id, 20_000);
    expect(['cancelled', 'not_converged']).toContain(child.status);
    const states = await Promise.all([parentId, started.child_run_id].map((id) => harness.control.get(id)));
    expect(states[1]!.state!.deadlineAt).toBeLessThanOrEqual(states[0]!.state!.deadlineAt);
  });

  it('answers a call without its input as invalid_arguments, starting no child run', async () => {
    const harness = await start();
    const runId = await harness.control.start({ agent: 'sloppy_planner', input: 'go' });
    const outcome = await harness.control.wait(runId, 20_000);
    expect(outcome.answer).toBe('refused: invalid_arguments at /input');
    expect(ofType(await harness.control.events(runId), 'child_run_started')).toEqual([]);
    expect((await harness.control.list()).filter((r) => r.agent === 'researcher')).toEqual([]);
  });

  it('starts at most MAX_CHILD_RUNS_PER_RUN child runs for one run and refuses the calls past it as forbidden', async () => {
    const harness = await start();
    const runId = await harness.control.start({ agent: 'greedy_clerk', input: 'go' });
    const outcome = await harness.control.wait(runId, 30_000);
    expect(outcome.answer).toBe('asked');
    const events = await harness.control.events(runId);
    expect(ofType(events, 'child_run_started')).toHaveLength(constants.MAX_CHILD_RUNS_PER_RUN);
    const refused = ofType(events, 'tool_result').filter((r) => r.error?.kind === 'forbidden');
    expect(refused).toHaveLength(10 - constants.MAX_CHILD_RUNS_PER_RUN);
    expect(refused[0]?.error?.message).toContain(`at most ${constants.MAX_CHILD_RUNS_PER_RUN} runs`);
    expect((await harness.control.list()).filter((r) => r.agent === 'judge')).toHaveLength(
      constants.MAX_CHILD_RUNS_PER_RUN,
    );
  });

  it('refuses a call past max_agent_depth as forbidden without starting a run, so a cycle of agents ends', async () => {
    const harness = await start();
    const rootId = await harness.control.start({ agent: 'ping', input: 'go' });
    const outcome = await harness.control.wait(rootId, 30_000);
    // ping (depth 0) → pong (1) → ping (2), whose call of pong would be depth 3 > 2: refused. A run whose
    // every call the platform refused does not count as a success, so pong reads ping's failure.
    expect(outcome.answer).toBe('at-ping<at-pong<execution_error>>');
    const pong = ofType(await harness.control.events(rootId), 'child_run_started')[0]!;
    const ping2 = ofType(await harness.control.events(pong.child_run_id), 'child_run_started')[0]!;
    expect(ping2.depth).toBe(2);
    expect(ofType(await harness.control.events(ping2.child_run_id), 'child_run_started')).toEqual([]);
    const refused = ofType(await harness.control.events(ping2.child_run_id), 'tool_result')[0];
    expect(refused?.error?.kind).toBe('forbidden');
    expect(refused?.error?.message).toContain('max_agent_depth');
    const ping2Run = await harness.control.wait(ping2.child_run_id, 5_000);
    expect(ping2Run).toMatchObject({ status: 'failed', answer: 'at-ping<forbidden>' });
    expect((await harness.control.list()).filter((r) => r.agent === 'pong')).toHaveLength(1);
  });
});

describe('agents as tools: a scheduler killed while the child runs (real processes)', () => {
  const children: Child[] = [];
  let close: (() => Promise<void>) | undefined;
  afterEach(async () => {
    for (const c of children.splice(0)) {
      c.kill('SIGKILL');
      await c.exited;
    }
    await close?.();
    close = undefined;
  });

  it('resumes parent and child on another scheduler, the child run started and its tool run exactly once', async () => {
    const agentsFile = writeAgentsFile(AGENTS);
    const h = await startRunsHarness({ AGENTS_FILE: agentsFile, ...MODELS }, { scheduler: false });
    close = () => h.close();
    addScenarios(h.sim);
    const env = testEnv(h.prefix, h.sim, {
      AGENTS_FILE: agentsFile,
      ...MODELS,
      RUN_LOCK_DURATION_MS: '1500',
      RUN_STALLED_INTERVAL_MS: '500',
    });
    const first = startSchedulerChild(env);
    children.push(first);
    await first.ready;
    const parentId = await h.control.start({ agent: 'slow_planner', input: 'plan slowly' });
    const started = await waitFor(
      async () => ofType(await h.control.events(parentId), 'child_run_started')[0],
      20_000,
      'the child run to start',
    );
    // The child's slow tool is running: the scheduler that owns the child is killed now.
    await waitFor(
      async () => ofType(await h.control.events(started.child_run_id), 'tool_dispatched')[0],
      20_000,
      'the child to dispatch its tool',
    );
    first.kill('SIGKILL');
    await first.exited;
    const second = startSchedulerChild(env);
    children.push(second);
    await second.ready;
    const outcome = await h.control.wait(parentId, 60_000);
    expect(outcome.status).toBe('succeeded');
    expect(outcome.answer).toBe('planner: slow research done');
    const childEvents = await h.control.events(started.child_run_id);
    expect(ofType(childEvents, 'run_started')).toHaveLength(1);
    expect(ofType(await h.control.events(parentId), 'child_run_started')).toHaveLength(1);
    const runs = await h.control.list();
    expect(runs.filter((r) => r.agent === 'slow_researcher')).toHaveLength(1);
    expect(Number(await h.redis.get(`${h.prefix}:test:slow:started`))).toBe(1);
  });
});
