import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunEvent } from '@agent-reach/protocol';
import { replayRun } from '@agent-reach/scheduler';
import { ROOT, startSchedulerChild, type Child } from './helpers/processes.js';
import { startRunsHarness, testEnv } from './helpers/runs.js';
import { waitFor } from './helpers/redis.js';

const HANDOFF_AGENTS = path.join(ROOT, 'test/fixtures/handoff-agents.yaml');
/** Short locks so that a killed scheduler's run is taken over within seconds. */
const FAST_TAKEOVER = { RUN_LOCK_DURATION_MS: '4000', RUN_STALLED_INTERVAL_MS: '1000' };
/** The fixture's agents name models of their own (llm-sim scenarios of those names). */
const FLEET = { AGENTS_FILE: HANDOFF_AGENTS, ALLOWED_MODELS: 'echo,handoff-technical,handoff-frontdesk' };

type Harness = Awaited<ReturnType<typeof startRunsHarness>>;
type Of<T extends RunEvent['type']> = Extract<RunEvent, { type: T }>;

describe('handoffs through the real fleet on llm-sim (real Redis, real processes)', () => {
  let h: Harness | undefined;
  const children: Child[] = [];
  afterEach(async () => {
    for (const c of children.splice(0)) {
      c.kill('SIGKILL');
      await c.exited;
    }
    await h?.close();
    h = undefined;
  });

  const eventsOf = async <T extends RunEvent['type']>(runId: string, type: T): Promise<Array<Of<T>>> =>
    (await h!.control.events(runId)).flatMap((e) => (e.event.type === type ? [e.event as Of<T>] : []));

  it('hands a run from triage to billing to technical, and a scheduler killed at the first handoff resumes it once with the right agent', async () => {
    h = await startRunsHarness({ ...FLEET, ...FAST_TAKEOVER }, { scheduler: false });
    h.sim.addScenario({
      name: 'handoff-twice',
      turns: [
        // triage: a slow call beside the transfer, so the scheduler can be killed between the two
        {
          tool_calls: [
            { name: 'slow', arguments: { ms: 1500 } },
            { name: 'transfer_to_billing', arguments: {} },
          ],
        },
        // billing: a call only billing's scopes reach, then the next handoff
        { tool_calls: [{ name: 'orders_write', arguments: {} }] },
        { tool_calls: [{ name: 'transfer_to_technical', arguments: {} }] },
        // technical
        { content: 'technical support: restart the router' },
      ],
    });
    const env = testEnv(h.prefix, h.sim, { ...FLEET, ...FAST_TAKEOVER });
    const first = startSchedulerChild(env);
    children.push(first);
    await first.ready;
    const runId = await h.control.start({
      agent: 'triage',
      input: 'I was charged twice and now my router does not connect',
      model: 'handoff-twice',
    });
    const startedKey = `${h.prefix}:test:slow:started`;
    await waitFor(async () => Number(await h!.redis.get(startedKey)) >= 1, 15_000, 'the slow call to start');
    // The transfer turn is recorded (its handoff pending); the slow call still runs.
    expect(await eventsOf(runId, 'handoff')).toHaveLength(0);
    first.kill('SIGKILL');
    await first.exited;
    const second = startSchedulerChild(env);
    children.push(second);
    await second.ready;

    const outcome = await h.control.wait(runId, 60_000);
    expect(outcome).toMatchObject({ status: 'succeeded', answer: 'technical support: restart the router' });
    const handoffs = await eventsOf(runId, 'handoff');
    expect(handoffs.map((e) => [e.from, e.to, e.filter, e.handoffs])).toEqual([
      ['triage', 'billing', 'all', 1],
      ['billing', 'technical', 'summary', 2],
    ]);
    const types = (await h.control.events(runId)).map((e) => e.event.type);
    expect(types.filter((t) => t === 'run_started')).toHaveLength(1);
    // Each turn was asked of the agent in charge: its own tools and its own handoffs offered.
    const turns = await eventsOf(runId, 'llm_request');
    expect(turns.map((t) => [...t.tools_offered].sort())).toEqual([
      ['needs_approval', 'slow', 'transfer_to_billing', 'transfer_to_technical'],
      ['orders_write', 'transfer_to_technical'],
      ['orders_write', 'transfer_to_technical'],
      ['noop'],
    ]);
    // orders_write passed the executor's reach and scope checks as billing's call, once.
    const results = await eventsOf(runId, 'tool_result');
    expect(results.find((r) => r.tool === 'orders_write')).toMatchObject({ ok: true });
    expect(await h.redis.hget(`${h.prefix}:test:reach`, 'orders_write')).toBe('1');
    // The transfer call is answered here, as the SDK answers it, and billing's model reads that answer.
    expect(results.find((r) => r.tool === 'transfer_to_billing')).toMatchObject({
      ok: true,
      answered: 'local',
    });
    const billingTurn = h.sim.requests.find((r) =>
      (r.body as { messages: Array<{ role: string; content?: unknown }> }).messages.some(
        (m) => m.role === 'tool' && String(m.content).includes('"assistant":"billing"'),
      ),
    );
    expect(billingTurn).toBeDefined();
    const record = await h.control.get(runId);
    expect(record?.state).toMatchObject({ agent: 'triage', inCharge: 'technical', handoffs: 2 });
    expect(record?.state?.pendingHandoff).toBeUndefined();
    // billing → technical kept a summary: the request, then technical's own turn.
    expect(handoffs[1]?.messages_after).toBe(1);
    expect(record?.state?.summary?.done.map((d) => d.tool)).toEqual([
      'slow',
      'transfer_to_billing',
      'orders_write',
      'transfer_to_technical',
    ]);
  }, 90_000);

  it("keeps only the last messages a handoff's last_n filter names, and the target answers on its own model", async () => {
    h = await startRunsHarness(FLEET);
    h.sim.addScenario({
      name: 'handoff-frontdesk',
      turns: [
        { tool_calls: [{ name: 'noop', arguments: {} }] },
        { tool_calls: [{ name: 'transfer_to_technical', arguments: {} }] },
      ],
    });
    // technical sees the request, the transfer call and its answer: one assistant message, turn 1.
    h.sim.addScenario({
      name: 'handoff-technical',
      turns: [{ content: 'technical saw the whole conversation' }, { content: 'technical saw {{ user }}' }],
    });
    const runId = await h.control.start({ agent: 'frontdesk', input: 'my screen is black' });
    const outcome = await h.control.wait(runId, 30_000);
    expect(outcome).toMatchObject({ status: 'succeeded', answer: 'technical saw my screen is black' });
    const [handoff] = await eventsOf(runId, 'handoff');
    expect(handoff).toMatchObject({
      from: 'frontdesk',
      to: 'technical',
      filter: 'last_n',
      last_n: 2,
      messages_before: 5,
      messages_after: 3,
    });
    const turns = await eventsOf(runId, 'llm_request');
    expect(turns.map((t) => t.model)).toEqual([
      'handoff-frontdesk',
      'handoff-frontdesk',
      'handoff-technical',
    ]);
  });

  it('stops a run that hands off more often than max_handoffs allows, naming the guard', async () => {
    h = await startRunsHarness(FLEET);
    h.sim.addScenario({
      name: 'ping-pong',
      turns: [
        { tool_calls: [{ name: 'transfer_to_pong', arguments: {} }] },
        { tool_calls: [{ name: 'transfer_to_ping', arguments: {} }] },
        { tool_calls: [{ name: 'transfer_to_pong', arguments: {} }] },
        { content: 'never reached' },
      ],
    });
    const runId = await h.control.start({ agent: 'ping', input: 'who answers?', model: 'ping-pong' });
    const outcome = await h.control.wait(runId, 30_000);
    expect(outcome).toMatchObject({ status: 'not_converged', reason: 'max_handoffs' });
    expect(outcome.report).toContain('max_handoffs 2');
    expect((await eventsOf(runId, 'handoff')).map((e) => e.to)).toEqual(['pong', 'ping']);
    expect(await eventsOf(runId, 'llm_request')).toHaveLength(3);
  });

  it("counts the turns before a handoff against the target's max_iterations: the run's budgets are the run's", async () => {
    h = await startRunsHarness(FLEET);
    h.sim.addScenario({
      name: 'budget',
      turns: [
        { tool_calls: [{ name: 'transfer_to_brief_desk', arguments: {} }] },
        { tool_calls: [{ name: 'noop', arguments: {} }] },
        { content: 'never reached: the third turn of the run' },
      ],
    });
    const runId = await h.control.start({ agent: 'ping', input: 'be brief', model: 'budget' });
    const outcome = await h.control.wait(runId, 30_000);
    expect(outcome).toMatchObject({ status: 'not_converged', reason: 'max_iterations', iterations: 2 });
    expect(await eventsOf(runId, 'handoff')).toHaveLength(1);
  });

  it('hands off only once a call of the same turn that waits for a person is decided, and runs that call as the agent that made it', async () => {
    h = await startRunsHarness(FLEET);
    h.sim.addScenario({
      name: 'approval-then-handoff',
      turns: [
        {
          tool_calls: [
            { name: 'needs_approval', arguments: {} },
            { name: 'transfer_to_billing', arguments: {} },
          ],
        },
        { content: 'billing: {{ results.needs_approval.content.done ?? "not done" }}' },
      ],
    });
    const runId = await h.control.start({ agent: 'triage', input: 'do it', model: 'approval-then-handoff' });
    const parked = await waitFor(
      async () => {
        const record = await h!.control.get(runId);
        return record?.state?.status === 'awaiting_approval' ? record.state : undefined;
      },
      15_000,
      'the run to park',
    );
    // Parked with the handoff pending: triage is still in charge.
    expect(parked.pendingHandoff).toMatchObject({ to: 'billing' });
    expect(parked.inCharge).toBeUndefined();
    const [toolCallId] = Object.keys(parked.approvals);
    await h.control.decide({ runId, toolCallId: toolCallId!, decision: 'approved' });
    const outcome = await h.control.wait(runId, 30_000);
    expect(outcome).toMatchObject({ status: 'succeeded', answer: 'billing: true' });
    expect((await eventsOf(runId, 'handoff')).map((e) => [e.from, e.to])).toEqual([['triage', 'billing']]);
    const results = await eventsOf(runId, 'tool_result');
    expect(results.find((r) => r.tool === 'needs_approval')).toMatchObject({
      ok: true,
      answered: 'dispatched',
    });
  });

  it('takes the first of two transfer calls in one turn and answers the other as ignored, as the Agents SDK does', async () => {
    h = await startRunsHarness(FLEET);
    h.sim.addScenario({
      name: 'two-transfers',
      turns: [
        {
          tool_calls: [
            { name: 'transfer_to_technical', arguments: {} },
            { name: 'transfer_to_billing', arguments: {} },
          ],
        },
        { content: 'technical took it' },
      ],
    });
    const runId = await h.control.start({ agent: 'triage', input: 'help', model: 'two-transfers' });
    const outcome = await h.control.wait(runId, 30_000);
    expect(outcome).toMatchObject({ status: 'succeeded', answer: 'technical took it' });
    expect((await eventsOf(runId, 'handoff')).map((e) => e.to)).toEqual(['technical']);
    const ignored = (await eventsOf(runId, 'tool_result')).find((r) => r.tool === 'transfer_to_billing');
    expect(ignored?.error?.message).toBe('Multiple handoffs detected, ignoring this one.');
    // A replay from the recording hands off as the run did and finds no difference.
    const replay = await replayRun(runId, { runner: h.schedulers[0]!.runner, store: h.control.store });
    expect(replay.outcome).toMatchObject({ status: 'succeeded', answer: 'technical took it' });
    expect(replay.differences).toEqual([]);
    expect((await eventsOf(replay.runId, 'handoff')).map((e) => [e.from, e.to])).toEqual([
      ['triage', 'technical'],
    ]);
  });
});
