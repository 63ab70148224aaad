import { randomUUID } from 'node:crypto';
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readPublishedConfig } from '@agent-reach/shared';
import { startLlmSim, type LlmSim } from '@agent-reach/llm-sim';
import type { WorkflowView } from '@agent-reach/protocol';
import { runCli } from './helpers/cli.js';
import {
  atConfigVersion,
  startExecutorWith,
  startSchedulerChild,
  TEST_AGENTS,
  type Child,
} from './helpers/processes.js';
import { testRedis, waitFor } from './helpers/redis.js';
import { apiEnv, testEnv } from './helpers/runs.js';

const API_KEY = `wf-live-${randomUUID().replace(/-/g, '')}`;

/** A workflows file: `relay` (first → finish, finish's input saying which definition it is) and others. */
function workflowsYaml(relayVersion: string, others: string[] = []): string {
  return [
    'workflows:',
    '  - name: relay',
    '    nodes:',
    '      - id: first',
    '        agent: test_agent',
    // Its run asks for a person's approval: it waits for the test, not for a clock.
    '        model: lw-gated',
    '      - id: finish',
    '        agent: test_agent',
    '        model: lw-echo',
    '        depends_on: [first]',
    `        input: '${relayVersion} finish: {{nodes.first.output}}'`,
    ...others,
  ].join('\n');
}

const PAIR = [
  '  - name: pair',
  '    nodes:',
  '      - id: ask',
  '        agent: test_agent',
  '        model: lw-first',
  '      - id: answer',
  '        agent: test_agent',
  '        model: lw-echo',
  '        depends_on: [ask]',
  "        input: 'answer to {{nodes.ask.output}}'",
];

/** lookup's run fails (the model refuses); slow is still running then; report and after need lookup. */
const FAILS = [
  '  - name: fails',
  '    nodes:',
  '      - id: lookup',
  '        agent: test_agent',
  '        model: lw-refuses',
  '      - id: slow',
  '        agent: test_agent',
  '        model: lw-never',
  '      - id: report',
  '        agent: test_agent',
  '        model: lw-echo',
  '        depends_on: [lookup, slow]',
  "        input: 'report {{nodes.lookup.output}} and {{nodes.slow.output}}'",
  '      - id: after',
  '        agent: test_agent',
  '        model: lw-echo',
  '        depends_on: [report]',
  "        input: 'after {{nodes.report.output}}'",
];

/** A workflow whose nodes wait on each other in a ring: never startable. */
const CYCLE = [
  '  - name: ring',
  '    nodes:',
  '      - id: procurement',
  '        agent: test_agent',
  '        depends_on: [finance]',
  "        input: 'p {{nodes.finance.output}}'",
  '      - id: inventory',
  '        agent: test_agent',
  '        depends_on: [procurement]',
  "        input: 'i {{nodes.procurement.output}}'",
  '      - id: finance',
  '        agent: test_agent',
  '        depends_on: [inventory]',
  "        input: 'f {{nodes.inventory.output}}'",
];

// Real processes: an executor and two schedulers (each serving the HTTP API) forked from their main.ts,
// the CLI as a process of its own, llm-sim over HTTP. Nothing is restarted between the steps.
describe('workflows as live configuration across running processes', { timeout: 180_000 }, () => {
  let t: ReturnType<typeof testRedis>;
  let sim: LlmSim;
  let dir: string;
  let env: Record<string, string>;
  let executor: Child;
  let schedulers: Child[];
  let apiUrl: string;
  /** `pair`, started under version 1 with this Idempotency-Key (before version 2 removes the definition). */
  const PAIR_KEY = `pair-${randomUUID()}`;
  let keyedPair: string;

  const cli = (...args: string[]) => runCli(env, args);
  const api = async (method: string, url: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${apiUrl}${url}`, {
      method,
      headers: {
        authorization: `Bearer ${API_KEY}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, json: (await res.json()) as Record<string, unknown> & WorkflowView };
  };
  const start = async (workflow: string, input: string) => {
    const res = await api('POST', '/v1/workflows', { workflow, input });
    expect(res.status, JSON.stringify(res.json)).toBe(201);
    return res.json.workflow_id;
  };
  const ended = (id: string) =>
    waitFor(
      async () => {
        const { json } = await api('GET', `/v1/workflows/${id}`);
        return json.status === 'running' ? undefined : json;
      },
      60_000,
      `workflow ${id} to end`,
    );
  const node = (wf: WorkflowView, id: string) => wf.nodes.find((n) => n.id === id);
  const getRun = async (runId: string) =>
    (await (
      await fetch(`${apiUrl}/v1/runs/${runId}`, { headers: { authorization: `Bearer ${API_KEY}` } })
    ).json()) as { status?: string; pending_approvals?: Array<{ tool_call_id: string }> };
  /** Waits until `runId` asks for a person's approval; returns a function that approves it. */
  const approvalOf = async (runId: string) => {
    const toolCallId = await waitFor(
      async () => {
        const run = await getRun(runId);
        return run.status === 'awaiting_approval' ? run.pending_approvals?.[0]?.tool_call_id : undefined;
      },
      30_000,
      `the approval request of ${runId}`,
    );
    return async () => {
      const res = await fetch(`${apiUrl}/v1/runs/${runId}/approvals`, {
        method: 'POST',
        headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ tool_call_id: toolCallId, decision: 'approve' }),
      });
      expect(res.status).toBe(200);
    };
  };
  const allAt = (version: number) => atConfigVersion([executor, ...schedulers], version);
  const write = async (name: string, text: string) => {
    const file = path.join(dir, name);
    await writeFile(file, text);
    return file;
  };

  beforeAll(async () => {
    t = testRedis();
    dir = await mkdtemp(path.join(tmpdir(), 'live-workflows-'));
    // The local files: agents, and workflows.yaml beside them (found there, as in config/).
    await copyFile(TEST_AGENTS, path.join(dir, 'agents.yaml'));
    await write('workflows.yaml', workflowsYaml('v0'));
    sim = await startLlmSim({
      scenarios: [
        { name: 'echo', turns: [{ content: 'hello' }] },
        { name: 'lw-first', turns: [{ content: 'first answered' }] },
        {
          name: 'lw-gated',
          turns: [
            { tool_calls: [{ name: 'needs_approval', arguments: {} }] },
            { content: 'first answered after approval' },
          ],
        },
        { name: 'lw-echo', turns: [{ content: 'saw [{{ user }}]' }] },
        { name: 'lw-refuses', turns: [{ refusal: 'I cannot look that up' }] },
        // Answers long after the test (the simulator cuts it short when it closes).
        { name: 'lw-never', latency_ms: 600_000, turns: [{ content: 'too late' }] },
      ],
    });
    env = testEnv(t.prefix, sim, {
      AGENTS_FILE: path.join(dir, 'agents.yaml'),
      ...apiEnv(API_KEY),
      LOG_LEVEL: 'warn',
      // config apply checks each node's model against the models allowed.
      ALLOWED_MODELS: 'echo,lw-first,lw-gated,lw-echo,lw-refuses,lw-never',
    });
    executor = startExecutorWith(env);
    await executor.ready;
    schedulers = [startSchedulerChild(env), startSchedulerChild(env)];
    const ready = await Promise.all(schedulers.map((s) => s.ready));
    apiUrl = String(ready[0]?.apiUrl).replace('://0.0.0.0:', '://127.0.0.1:');
  });
  afterAll(async () => {
    for (const c of [executor, ...(schedulers ?? [])]) c?.kill('SIGKILL');
    await Promise.all([executor?.exited, ...(schedulers ?? []).map((s) => s.exited)]);
    await sim?.close();
    await rm(dir, { recursive: true, force: true });
    await t.cleanup();
  });

  it('answers 422 naming a workflow the configuration in force does not declare', async () => {
    const res = await api('POST', '/v1/workflows', { workflow: 'pair', input: 'hello' });
    expect(res.status).toBe(422);
    expect(res.json).toMatchObject({
      error: {
        code: 'UNKNOWN_WORKFLOW',
        message: 'unknown workflow "pair" (not in configuration version 0); declared: relay',
      },
    });
  });

  it('applies a config adding a new workflow: it starts over HTTP and completes, with no process restarted', async () => {
    const v1 = await write('v1.yaml', workflowsYaml('v1', [...PAIR, ...FAILS]));
    const applied = await cli('config', 'apply', path.join(dir, 'agents.yaml'), '--workflows', v1);
    expect(applied.stderr).toBe('');
    expect(applied.stdout).toBe(`published configuration version 1 with 3 workflows (${v1})\n`);
    expect(applied.code).toBe(0);
    await allAt(1);
    const id = await start('pair', 'hello');
    const done = await ended(id);
    expect(done).toMatchObject({ workflow: 'pair', status: 'succeeded', config_version: 1 });
    expect(done.output).toBe('saw [answer to first answered]');
    expect((await readPublishedConfig(t.redis, t.keys))?.version).toBe(1);
    for (const s of schedulers) expect(s.proc.exitCode).toBeNull();
  });

  it('refuses a config whose workflow has a cycle, naming it in order, and the previous workflows still start', async () => {
    const bad = await write('cycle.yaml', workflowsYaml('v9', [...PAIR, ...CYCLE]));
    const refused = await cli('config', 'apply', path.join(dir, 'agents.yaml'), '--workflows', bad);
    expect(refused.code).toBe(4);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toContain(
      `problem: ${bad}: workflow "ring": depends_on has a cycle: procurement → finance → inventory → procurement`,
    );
    expect(refused.stderr).toContain('refused: configuration version 1 stays in force');
    // Every problem at once: an unknown agent and the cycle, in one apply.
    const worse = await write(
      'worse.yaml',
      workflowsYaml('v9', [...CYCLE, '  - name: lost', '    nodes:', '      - { id: x, agent: nobody }']),
    );
    const both = await cli('config', 'apply', path.join(dir, 'agents.yaml'), '--workflows', worse);
    expect(both.code).toBe(4);
    expect(both.stderr).toContain('workflow "ring": depends_on has a cycle');
    expect(both.stderr).toContain(
      'workflow "lost": node "x": agent "nobody" is not declared in the agents file',
    );
    expect((await readPublishedConfig(t.redis, t.keys))?.version).toBe(1);
    const done = await ended(await start('pair', 'again'));
    expect(done).toMatchObject({ status: 'succeeded', config_version: 1 });
    expect((await api('POST', '/v1/workflows', { workflow: 'ring', input: 'x' })).status).toBe(422);
  });

  it('starts a workflow once for an Idempotency-Key: the repeat answers 200 with the same workflow', async () => {
    const first = await api(
      'POST',
      '/v1/workflows',
      { workflow: 'pair', input: 'keyed' },
      { 'idempotency-key': PAIR_KEY },
    );
    expect(first.status, JSON.stringify(first.json)).toBe(201);
    keyedPair = first.json.workflow_id;
    const repeat = await api(
      'POST',
      '/v1/workflows',
      { workflow: 'pair', input: 'keyed' },
      { 'idempotency-key': PAIR_KEY },
    );
    expect(repeat.status).toBe(200);
    expect(repeat.json.workflow_id).toBe(keyedPair);
    expect(await ended(keyedPair)).toMatchObject({
      workflow: 'pair',
      status: 'succeeded',
      config_version: 1,
    });
  });

  it('finishes a running workflow with the definition it started with when a new one is applied mid-run', async () => {
    const id = await start('relay', 'say hello');
    // The first node's run waits for a person's approval: the workflow is mid-run until the test decides.
    const approve = await approvalOf(`${id}.first`);
    const v2 = await write('v2.yaml', workflowsYaml('v2', FAILS));
    const applied = await cli('config', 'apply', path.join(dir, 'agents.yaml'), '--workflows', v2);
    expect(applied.stdout).toBe(`published configuration version 2 with 2 workflows (${v2})\n`);
    await allAt(2);
    await approve();
    const done = await ended(id);
    expect(done).toMatchObject({ status: 'succeeded', config_version: 1 });
    expect(done.output).toBe('saw [v1 finish: first answered after approval]');
    // A workflow started now runs the new definition.
    const next = await start('relay', 'say hello');
    await (
      await approvalOf(`${next}.first`)
    )();
    const second = await ended(next);
    expect(second).toMatchObject({ status: 'succeeded', config_version: 2 });
    expect(second.output).toBe('saw [v2 finish: first answered after approval]');
  });

  it('refuses to start a workflow the new configuration removed, over HTTP and in the CLI, naming it', async () => {
    const res = await api('POST', '/v1/workflows', { workflow: 'pair', input: 'hello' });
    expect(res.status).toBe(422);
    expect(res.json.error).toMatchObject({
      code: 'UNKNOWN_WORKFLOW',
      message: 'unknown workflow "pair" (not in configuration version 2); declared: relay, fails',
    });
    const started = await cli('workflows', 'start', 'pair', 'hello');
    expect(started.code).toBe(3);
    expect(started.stderr).toBe(
      'not found: unknown workflow "pair" (not in configuration version 2); declared: relay, fails\n',
    );
  });

  it('answers a repeated Idempotency-Key with the workflow it started after its definition was removed; another body is 409, a new key 422', async () => {
    const body = { workflow: 'pair', input: 'keyed' };
    const repeat = await api('POST', '/v1/workflows', body, { 'idempotency-key': PAIR_KEY });
    expect(repeat.status, JSON.stringify(repeat.json)).toBe(200);
    expect(repeat.json).toMatchObject({
      workflow_id: keyedPair,
      workflow: 'pair',
      status: 'succeeded',
      config_version: 1,
      output: 'saw [answer to first answered]',
    });
    const other = await api(
      'POST',
      '/v1/workflows',
      { ...body, input: 'another' },
      { 'idempotency-key': PAIR_KEY },
    );
    expect(other.status).toBe(409);
    expect(other.json.error).toMatchObject({
      code: 'CONFLICT',
      message: 'this Idempotency-Key was already used with a different body',
    });
    const freshKey = { 'idempotency-key': `pair-${randomUUID()}` };
    const fresh = await api('POST', '/v1/workflows', body, freshKey);
    expect(fresh.status).toBe(422);
    expect(fresh.json.error).toMatchObject({
      code: 'UNKNOWN_WORKFLOW',
      message: 'unknown workflow "pair" (not in configuration version 2); declared: relay, fails',
    });
    // Refused with nothing created: the new key is still free for a body that names a declared workflow.
    const later = await api('POST', '/v1/workflows', { workflow: 'fails', input: 'x' }, freshKey);
    expect(later.status, JSON.stringify(later.json)).toBe(201);
    expect(await ended(later.json.workflow_id)).toMatchObject({ workflow: 'fails', status: 'failed' });
  });

  it('keeps the workflows in force when config apply names none', async () => {
    const applied = await cli('config', 'apply', path.join(dir, 'agents.yaml'));
    expect(applied.stdout).toBe('published configuration version 3 with 2 workflows (kept from version 2)\n');
    expect(applied.code).toBe(0);
    const shown = await cli('config', 'show');
    const document = JSON.parse(shown.stdout.slice(shown.stdout.indexOf('\n') + 1)) as {
      workflows: Array<{ name: string }>;
    };
    expect(document.workflows.map((w) => w.name)).toEqual(['relay', 'fails']);
    await allAt(3);
    expect((await api('POST', '/v1/workflows', { workflow: 'fails', input: 'x' })).status).toBe(201);
  });

  it('fails a workflow whose node run failed: names the node and its error, cancels the running sibling, skips the dependants', async () => {
    const id = await start('fails', 'look it up');
    const done = await ended(id);
    const lookupRun = `${id}.lookup`;
    const error = `run ${lookupRun} ended failed (refused): the model declined to answer: I cannot look that up`;
    expect(done).toMatchObject({
      status: 'failed',
      reason: 'node_failed',
      failed_node: 'lookup',
      error: `node lookup (agent test_agent) failed: ${error}`,
    });
    expect(done.nodes.map((n) => [n.id, n.status, n.reason])).toEqual([
      ['lookup', 'failed', 'run_failed'],
      ['slow', 'cancelled', 'node lookup failed'],
      ['report', 'skipped', 'node lookup failed'],
      ['after', 'skipped', 'node lookup failed'],
    ]);
    expect(node(done, 'lookup')?.error).toBe(error);
    expect(node(done, 'report')?.run_id).toBeUndefined();
    // The sibling's run is cancelled rather than left to answer into a workflow that ended.
    await waitFor(
      async () => (await getRun(`${id}.slow`)).status === 'cancelled',
      30_000,
      "the running sibling's run to be cancelled",
    );
    const shown = await cli('workflows', 'show', id);
    expect(shown.stdout).toContain(`status failed (node_failed)  config version 3`);
    expect(shown.stdout).toMatch(/ {2}lookup +failed +test_agent +run \S+\.lookup {2}\(run_failed\)/);
    expect(shown.stdout).toMatch(
      / {2}report +skipped +test_agent after lookup, slow {2}\(node lookup failed\)/,
    );
    expect(shown.stdout).toContain(`error: node lookup (agent test_agent) failed: ${error}`);
  });

  it('applies one file that holds both agents and workflows, and refuses it together with --workflows', async () => {
    const agents = await readFile(TEST_AGENTS, 'utf8');
    const fleet = await write('fleet.yaml', `${agents}\n${workflowsYaml('v4', PAIR)}\n`);
    const applied = await cli('config', 'apply', fleet);
    expect(applied.stdout).toBe(`published configuration version 4 with 2 workflows (${fleet})\n`);
    expect(applied.code).toBe(0);
    const v2 = path.join(dir, 'v2.yaml');
    const both = await cli('config', 'apply', fleet, '--workflows', v2);
    expect(both.code).toBe(4);
    expect(both.stderr).toContain(
      `problem: ${fleet}: declares workflows, and ${v2} is given too: use one of them`,
    );
    expect(both.stderr).toContain('refused: configuration version 4 stays in force');
    await allAt(4);
    const done = await ended(await start('pair', 'from one file'));
    expect(done).toMatchObject({ status: 'succeeded', config_version: 4 });
  });
});
