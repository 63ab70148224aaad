import { afterEach, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { FULL_KEY, startApiHarness, type ApiHarness } from './helpers/api.js';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { tempDir, writeAgentsFile } from './helpers/mcp.js';

/**
 * The reach rule of agents called as tools, the same as handoffs': a key limited to some agents may not
 * start a run that could start a child run of an agent outside its list unless an agent on the way says
 * `handoff_reach: configured`. Checked at every door, against the real fleet (Redis, llm-sim, executor).
 */
const AGENTS = {
  agents: [
    { name: 'planner', tools: [], model: 'reach-planner', agent_tools: ['researcher'] },
    {
      name: 'vouching_planner',
      tools: [],
      model: 'reach-planner',
      agent_tools: ['researcher'],
      handoff_reach: 'configured',
    },
    // Reaches the researcher through a handoff to the planner, then the planner's agent tool.
    { name: 'front', tools: [], model: 'echo', handoffs: ['planner'] },
    // Reaches the researcher through the vouching planner, which it calls as a tool.
    { name: 'chief', tools: [], model: 'reach-chief', agent_tools: ['vouching_planner'] },
    { name: 'researcher', tools: [], model: 'reach-researcher' },
  ],
};
/** One workflow whose only node is the planner. */
function workflowsFile(): string {
  const file = path.join(tempDir('reach-workflows'), 'workflows.json');
  writeFileSync(
    file,
    JSON.stringify({ workflows: [{ name: 'plan_flow', nodes: [{ id: 'plan', agent: 'planner' }] }] }),
  );
  return file;
}
const MODELS = 'echo,reach-planner,reach-chief,reach-researcher';
const KEY = 'planners-key-0123456789abcdef';

describe('agents as tools: the reach rule at every door (real Redis, real fleet, llm-sim)', () => {
  let h: ApiHarness | undefined;
  const clients: Client[] = [];
  afterEach(async () => {
    for (const c of clients.splice(0)) await c.close().catch(() => undefined);
    await h?.close();
    h = undefined;
  });

  const start = async () => {
    h = await startApiHarness(
      {
        apiKeys: [
          { key: FULL_KEY, name: 'tester' },
          { key: KEY, name: 'planners', agents: ['planner', 'vouching_planner', 'front', 'chief'] },
        ],
        allowedModels: MODELS.split(','),
      },
      { AGENTS_FILE: writeAgentsFile(AGENTS), ALLOWED_MODELS: MODELS, WORKFLOWS_FILE: workflowsFile() },
    );
    h.sim.addScenario({
      name: 'reach-planner',
      turns: [
        { tool_calls: [{ name: 'ask_researcher', arguments: { input: 'find it' } }] },
        { content: 'planner: {{ last.content ?? last.error.message }}' },
      ],
    });
    h.sim.addScenario({
      name: 'reach-chief',
      turns: [
        { tool_calls: [{ name: 'ask_vouching_planner', arguments: { input: 'plan it' } }] },
        { content: 'chief: {{ last.content ?? last.error.message }}' },
      ],
    });
    h.sim.addScenario({ name: 'reach-researcher', turns: [{ content: 'found it' }] });
    return h;
  };

  it('refuses a limited key a run whose agent tools reach an agent outside its list, naming the path, directly and through a handoff', async () => {
    const harness = await start();
    const direct = await harness.call('POST', '/v1/runs', {
      key: KEY,
      body: { agent: 'planner', input: 'plan it' },
    });
    expect(direct.status).toBe(403);
    expect(direct.json.error.code).toBe('FORBIDDEN');
    expect(direct.json.error.message).toBe(
      'this key may not use agent "researcher", which a run of "planner" may reach as an agent tool ' +
        '(ask_researcher) (planner → researcher); the agent tool ask_researcher from "planner" reaches it ' +
        'only with handoff_reach: configured on "planner"',
    );
    const handedOff = await harness.call('POST', '/v1/runs', {
      key: KEY,
      body: { agent: 'front', input: 'plan it' },
    });
    expect(handedOff.status).toBe(403);
    expect(handedOff.json.error.message).toContain('(front → planner → researcher)');
    // Nothing started: no run of any of them is listed.
    expect(await harness.control.list()).toEqual([]);
    // A key of every agent is never refused.
    const full = await harness.call('POST', '/v1/runs', { body: { agent: 'planner', input: 'plan it' } });
    expect(full.status).toBe(201);
    expect(await harness.control.wait(full.json.run_id, 30_000)).toMatchObject({
      status: 'succeeded',
      answer: 'planner: found it',
    });
  });

  it('lets a limited key start a run whose agent tools reach further only through an agent with handoff_reach: configured, and the child runs answer', async () => {
    const harness = await start();
    const vouched = await harness.call('POST', '/v1/runs', {
      key: KEY,
      body: { agent: 'vouching_planner', input: 'plan it' },
    });
    expect(vouched.status).toBe(201);
    expect(await harness.control.wait(vouched.json.run_id, 30_000)).toMatchObject({
      status: 'succeeded',
      answer: 'planner: found it',
    });
    // chief → vouching_planner (the key's own) → researcher (vouched for): a grandchild answers.
    const chief = await harness.call('POST', '/v1/runs', { key: KEY, body: { agent: 'chief', input: 'go' } });
    expect(chief.status).toBe(201);
    expect(await harness.control.wait(chief.json.run_id, 30_000)).toMatchObject({
      status: 'succeeded',
      answer: 'chief: planner: found it',
    });
    // The schedulers count the child runs by calling and called agent, and how each answered.
    const counted = async (name: string) => {
      const rows = new Map<string, number>();
      for (const s of harness.schedulers)
        for (const v of (await s.metricsRegistry.getSingleMetric(name)?.get())?.values ?? []) {
          const key = Object.values(v.labels).join('/');
          rows.set(key, (rows.get(key) ?? 0) + v.value);
        }
      return Object.fromEntries(rows);
    };
    expect(await counted('agent_reach_child_runs_started_total')).toEqual({
      'vouching_planner/researcher': 2,
      'chief/vouching_planner': 1,
    });
    expect(await counted('agent_reach_child_runs_total')).toEqual({
      'vouching_planner/researcher/succeeded': 2,
      'chief/vouching_planner/succeeded': 1,
    });
  });

  it('refuses the same run at the session, workflow, schedule, OpenAI and MCP doors', async () => {
    const harness = await start();
    const route = 'planner → researcher';
    const session = await harness.call('POST', '/v1/sessions', { key: KEY, body: { agent: 'planner' } });
    expect(session.status).toBe(201);
    const message = await harness.call('POST', `/v1/sessions/${session.json.session_id}/messages`, {
      key: KEY,
      body: { input: 'plan it' },
    });
    expect(message.status).toBe(403);
    expect(message.json.error.message).toContain(route);

    const workflow = await harness.call('POST', '/v1/workflows', {
      key: KEY,
      body: { workflow: 'plan_flow', input: 'plan it' },
    });
    expect(workflow.status).toBe(403);
    expect(workflow.json.error.message).toContain(route);
    const workflowSchedule = await harness.call('POST', '/v1/schedules', {
      key: KEY,
      body: { workflow: 'plan_flow', input: 'plan it', every_ms: 3_600_000 },
    });
    expect(workflowSchedule.status).toBe(403);
    expect(workflowSchedule.json.error.message).toContain(route);

    const schedule = await harness.call('POST', '/v1/schedules', {
      key: KEY,
      body: { agent: 'planner', input: 'plan it', every_ms: 3_600_000 },
    });
    expect(schedule.status).toBe(403);
    expect(schedule.json.error.message).toContain(route);

    const completion = await harness.call('POST', '/v1/chat/completions', {
      key: KEY,
      body: { model: 'planner', messages: [{ role: 'user', content: 'plan it' }] },
    });
    expect(completion.status).toBe(403);
    expect(completion.json.error).toMatchObject({ code: 'forbidden' });
    expect(completion.json.error.message).toContain(route);

    const client = new Client({ name: 'reach-test', version: '1.0.0' });
    clients.push(client);
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${harness.url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${KEY}` } },
      }),
    );
    const result = (await client.callTool({
      name: 'planner',
      arguments: { input: 'plan it' },
    })) as CallToolResult;
    expect(result.isError).toBe(true);
    expect(JSON.stringify(result.content)).toContain(route);
    expect(await harness.control.list()).toEqual([]);
  });
});
