import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunEvent } from '@agent-reach/protocol';
import { replayRun } from '@agent-reach/scheduler';
import { FULL_KEY, request, startApiHarness, type ApiHarness } from './helpers/api.js';
import { ofType } from './helpers/agent-tools.js';
import { writeAgentsFile } from './helpers/mcp.js';
import { ROOT } from './helpers/processes.js';
import { waitFor } from './helpers/redis.js';
import { startRunsHarness } from './helpers/runs.js';

const HANDOFF_AGENTS = path.join(ROOT, 'test/fixtures/handoff-agents.yaml');
const MODELS = ['echo', 'handoff-technical', 'handoff-frontdesk', 'desk', 'ping-pong'];
const TRIAGE_KEY = 'triage-key-0123456789abcdef';
const DESKS_KEY = 'desks-key-0123456789abcdef';
const PING_KEY = 'ping-key-0123456789abcdef';
const PONG_KEY = 'pong-key-0123456789abcdef';

describe('handoffs at the API: the reach rule and sessions (real Redis, real fleet, llm-sim)', () => {
  let h: ApiHarness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  const start = () =>
    startApiHarness(
      {
        apiKeys: [
          { key: FULL_KEY, name: 'tester' },
          { key: TRIAGE_KEY, name: 'triage-only', agents: ['triage'] },
          { key: DESKS_KEY, name: 'desks', agents: ['triage', 'billing', 'technical'] },
          { key: PING_KEY, name: 'ping-only', agents: ['ping'] },
          { key: PONG_KEY, name: 'pong-only', agents: ['pong'] },
        ],
        allowedModels: MODELS,
      },
      { AGENTS_FILE: HANDOFF_AGENTS, ALLOWED_MODELS: MODELS.join(',') },
    );

  it("refuses a limited key a run whose handoffs reach an agent outside its list, unless the handing agent's handoff_reach is configured", async () => {
    h = await start();
    const triageOnly = await h.call('POST', '/v1/runs', {
      key: TRIAGE_KEY,
      body: { agent: 'triage', input: 'help', model: 'echo' },
    });
    expect(triageOnly.status).toBe(403);
    expect(triageOnly.json.error.code).toBe('FORBIDDEN');
    expect(triageOnly.json.error.message).toContain('triage → billing');
    expect(triageOnly.json.error.message).toContain('handoff_reach: configured on "triage"');
    // Every agent the handoffs reach is the key's own: allowed.
    const desks = await h.call('POST', '/v1/runs', {
      key: DESKS_KEY,
      body: { agent: 'triage', input: 'help', model: 'echo' },
    });
    expect(desks.status).toBe(201);
    // ping's handoff_reach is configured: its handoff to pong is the configuration's, not the key's.
    h.sim.addScenario({
      name: 'ping-pong',
      turns: [{ tool_calls: [{ name: 'transfer_to_pong', arguments: {} }] }, { content: 'pong answered' }],
    });
    const ping = await h.call('POST', '/v1/runs', {
      key: PING_KEY,
      body: { agent: 'ping', input: 'who answers?', model: 'ping-pong' },
    });
    expect(ping.status).toBe(201);
    const outcome = await h.control.wait(ping.json.run_id, 30_000);
    expect(outcome).toMatchObject({ status: 'succeeded', answer: 'pong answered' });
    // pong's is not: a key of pong alone may not start it, as its handoff reaches ping.
    const pong = await h.call('POST', '/v1/runs', {
      key: PONG_KEY,
      body: { agent: 'pong', input: 'who answers?', model: 'echo' },
    });
    expect(pong.status).toBe(403);
    expect(pong.json.error.message).toContain('pong → ping');
  });

  it("sends a session's next message to the agent that last answered unless the caller names one", async () => {
    h = await start();
    // One scenario for the whole session, by its turn count: triage hands off, billing answers twice,
    // and triage answers when named.
    h.sim.addScenario({
      name: 'desk',
      turns: [
        { tool_calls: [{ name: 'transfer_to_billing', arguments: {} }] },
        { content: 'billing: your refund is under way' },
        { content: 'billing again: it takes three days' },
        { content: 'triage again' },
      ],
    });
    const created = await h.call('POST', '/v1/sessions', { body: { agent: 'triage' } });
    expect(created.status).toBe(201);
    const sessionId = created.json.session_id as string;
    const send = async (body: Record<string, unknown>) => {
      const res = await h!.call('POST', `/v1/sessions/${sessionId}/messages`, {
        body: { model: 'desk', ...body },
      });
      expect(res.status).toBe(201);
      const runId = res.json.run_id as string;
      const outcome = await h!.control.wait(runId, 30_000);
      const offered = (await h!.control.events(runId)).flatMap((e) =>
        e.event.type === 'llm_request'
          ? [[...(e.event as Extract<RunEvent, { type: 'llm_request' }>).tools_offered].sort()]
          : [],
      );
      const view = (await h!.call('GET', `/v1/runs/${runId}`)).json;
      return { runId, outcome, offered, view };
    };
    const first = await send({ agent: 'triage', input: 'I want a refund' });
    expect(first.outcome.answer).toBe('billing: your refund is under way');
    // The run stays triage's; its view names the agent in charge and the handoffs.
    expect(first.view).toMatchObject({ agent: 'triage', in_charge: 'billing', handoffs: 1 });
    const session = await h.call('GET', `/v1/sessions/${sessionId}`);
    expect(session.json).toMatchObject({ agent: 'triage', last_agent: 'billing' });

    const second = await send({ input: 'how long does it take?' });
    expect(second.outcome.answer).toBe('billing again: it takes three days');
    // billing's tools and handoffs, not triage's: the run went on with billing.
    expect(second.offered).toEqual([['orders_write', 'transfer_to_technical']]);
    expect(second.view).toMatchObject({ agent: 'triage', in_charge: 'billing' });
    expect(second.view.handoffs).toBeUndefined();
    // Its replay starts with billing in charge too.
    const replay = await replayRun(second.runId, { runner: h.schedulers[0]!.runner, store: h.control.store });
    const replayed = (await h.control.events(replay.runId)).flatMap((e) =>
      e.event.type === 'llm_request' ? [[...e.event.tools_offered].sort()] : [],
    );
    expect(replayed).toEqual([['orders_write', 'transfer_to_technical']]);

    const third = await send({ agent: 'triage', input: 'something else' });
    expect(third.outcome.answer).toBe('triage again');
    expect(third.offered).toEqual([
      ['needs_approval', 'slow', 'transfer_to_billing', 'transfer_to_technical'],
    ]);
    expect((await h.call('GET', `/v1/sessions/${sessionId}`)).json.last_agent).toBeUndefined();
  });
});

describe('the reach rule at each call of a live run, after the agents file changed (real scheduler, llm-sim)', () => {
  const DESK_KEY = 'desk-key-0123456789abcdef';
  /** `desk` vouches for its targets (handoff_reach: configured) until the file is changed. */
  const deskAgents = (reach: Record<string, string>) => ({
    agents: [
      {
        name: 'desk',
        tools: ['needs_approval'],
        model: 'reach-desk',
        handoffs: ['billing'],
        agent_tools: ['researcher'],
        ...reach,
      },
      { name: 'billing', tools: [], model: 'echo' },
      { name: 'researcher', tools: [], model: 'echo' },
    ],
  });
  let h: Awaited<ReturnType<typeof startRunsHarness>> | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  const rule = (to: string, edge: string) =>
    `this run's API key may not use agent "${to}", and the ${edge} from "desk" reaches it only with ` +
    'handoff_reach: configured on "desk" (the configuration in force)';
  const refusal = (tool: string, to: string, edge: string) =>
    `"${tool}" was not run: ${rule(to, edge)}; go on without it`;

  /**
   * Starts a run of `desk` for its key (desk only) while desk vouches for its targets; once its first turn
   * waits for a person, desk stops vouching (the file changes and the scheduler takes it up: a new run is
   * refused at the door now), and the call is approved. Returns the run's outcome and stored events.
   */
  const runAcrossTheChange = async (turns: Array<Record<string, unknown>>) => {
    const file = writeAgentsFile(deskAgents({ handoff_reach: 'configured' }));
    const harness = await startRunsHarness({
      AGENTS_FILE: file,
      ALLOWED_MODELS: 'echo,reach-desk',
      // The scheduler serves the API: it knows each key's agents.
      API_KEYS: `tester:${FULL_KEY},desk:${DESK_KEY}:desk`,
      API_PORT: '0',
      API_HOST: '127.0.0.1',
    });
    h = harness;
    const scheduler = harness.schedulers[0]!;
    const url = scheduler.apiUrl!.replace('://0.0.0.0:', '://127.0.0.1:');
    harness.sim.addScenario({ name: 'reach-desk', turns });
    const start = () =>
      request(url, 'POST', '/v1/runs', { key: DESK_KEY, body: { agent: 'desk', input: 'help' } });
    const started = await start();
    expect(started.status).toBe(201);
    const runId = started.json.run_id as string;
    const parked = await waitFor(
      async () => {
        const run = (await request(url, 'GET', `/v1/runs/${runId}`, { key: DESK_KEY })).json;
        return run?.pending_approvals?.[0] ? run : undefined;
      },
      20_000,
      'the run to wait for its approval',
    );
    writeFileSync(file, JSON.stringify(deskAgents({})));
    await waitFor(
      () => scheduler.config.agents.agents.get('desk')?.handoff_reach === undefined,
      10_000,
      'the scheduler to take up the changed file',
    );
    expect((await start()).status).toBe(403);
    await harness.control.decide({
      runId,
      toolCallId: parked.pending_approvals[0].tool_call_id,
      decision: 'approved',
    });
    const outcome = await harness.control.wait(runId, 30_000);
    const stored = await harness.control.events(runId);
    // Neither ran: no child run was started and desk stayed in charge.
    const types = stored.map((e) => e.event.type);
    expect(types.filter((t) => t === 'child_run_started' || t === 'handoff')).toEqual([]);
    expect((await harness.control.list({ agent: 'researcher' })).length).toBe(0);
    return { outcome, stored };
  };

  it('refuses forbidden, naming the rule, a handoff and an agent-tool call that the changed configuration no longer lets the key reach, and runs neither', async () => {
    const { outcome, stored } = await runAcrossTheChange([
      { tool_calls: [{ name: 'needs_approval', arguments: {} }] },
      { tool_calls: [{ name: 'ask_researcher', arguments: { input: 'find it' } }] },
      { tool_calls: [{ name: 'transfer_to_billing', arguments: {} }] },
      { content: 'desk: {{ last.error.message }}' },
    ]);
    expect(outcome).toMatchObject({
      status: 'succeeded',
      answer: `desk: ${refusal('transfer_to_billing', 'billing', 'handoff')}`,
    });
    const refused = ofType(stored, 'tool_result').filter((e) => e.tool !== 'needs_approval');
    expect(refused.map((e) => [e.tool, e.error?.kind, e.error?.message])).toEqual([
      ['ask_researcher', 'forbidden', refusal('ask_researcher', 'researcher', 'agent tool ask_researcher')],
      ['transfer_to_billing', 'forbidden', refusal('transfer_to_billing', 'billing', 'handoff')],
    ]);
  });

  it('does not make a handoff taken before the change once its turn is answered after it: the agent goes on, told why', async () => {
    // The transfer is taken with the turn; the turn waits for a person across the change.
    const { outcome } = await runAcrossTheChange([
      {
        tool_calls: [
          { name: 'needs_approval', arguments: {} },
          { name: 'transfer_to_billing', arguments: {} },
        ],
      },
      { content: 'desk went on' },
    ]);
    expect(outcome).toMatchObject({ status: 'succeeded', answer: 'desk went on' });
    const last = h!.sim.requests.filter((r) => r.scenario === 'reach-desk').at(-1)!;
    const { messages } = last.body as { messages: Array<{ role: string; content: string }> };
    const system = messages.filter((m) => m.role === 'system');
    expect(system.map((m) => m.content)).toContain(
      `Guard: the handoff to "billing" was not made: ${rule('billing', 'handoff')}. Go on yourself.`,
    );
  });
});
