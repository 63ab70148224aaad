import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadAgents, loadWorkflows } from '@agent-reach/shared';
import type { WorkflowRecord } from '@agent-reach/scheduler/internal';
import { ROOT, TEST_AGENTS } from './helpers/processes.js';
import { startRunsHarness } from './helpers/runs.js';
import { tempDir, writeAgentsFile } from './helpers/mcp.js';
import { waitFor } from './helpers/redis.js';
import { WORKFLOW_SCENARIOS, WORKFLOWS_FIXTURE } from './helpers/workflows.js';

describe('workflow files are checked before anything starts', () => {
  it("refuses the seeds' three-agent cycle at load, naming the cycle in order", () => {
    const agents = loadAgents(path.join(ROOT, 'test/fixtures/workflow-cycle-agents.yaml'));
    const file = path.join(ROOT, 'test/fixtures/workflow-cycle.yaml');
    expect(() => loadWorkflows(file, agents.agents.keys())).toThrow(
      expect.objectContaining({
        code: 'WORKFLOWS_INVALID',
        details: [
          `${file}: workflow "purchase": depends_on has a cycle: procurement → inventory → finance → procurement (each waits on the next, so none could ever start)`,
        ],
      }),
    );
  });

  it('loads the test workflows with defaults for timeout and on_timeout', () => {
    const agents = loadAgents(TEST_AGENTS);
    const { workflows } = loadWorkflows(WORKFLOWS_FIXTURE, agents.agents.keys());
    const d = workflows.get('diamond')?.nodes.find((n) => n.id === 'd');
    expect(d).toMatchObject({ depends_on: ['b', 'c'], on_timeout: 'abort', timeout_ms: 600_000 });
    expect(workflows.get('diamond')?.nodes[0]?.input).toBe('{{request}}');
  });
});

describe('workflows on real Redis: nodes as runs, the watchdog, cancellation', () => {
  let h: Awaited<ReturnType<typeof startRunsHarness>>;
  beforeAll(async () => {
    h = await startRunsHarness({ WORKFLOWS_FILE: WORKFLOWS_FIXTURE });
    for (const s of WORKFLOW_SCENARIOS) h.sim.addScenario(s);
  });
  afterAll(async () => {
    await h?.close();
  });

  const workflows = () => h.schedulers[0]!.workflows;
  const runTimes = async (runId: string) => {
    const events = await h.control.events(runId);
    const at = (type: string) => events.find((e) => e.event.type === type)?.event.at;
    return { started: at('run_started') ?? NaN, finished: at('run_finished') ?? NaN };
  };
  const node = (rec: WorkflowRecord, id: string) => rec.spec.nodes.find((n) => n.id === id)!;

  it('runs b and c of a diamond at the same time, and d sees both their outputs', async () => {
    const { workflowId } = await workflows().start({ workflow: 'diamond', input: 'restock the shop' });
    const rec = await workflows().wait(workflowId, 30_000);
    expect(rec.outcome).toMatchObject({ status: 'succeeded', reason: 'completed', low_confidence: false });
    const b = await runTimes(rec.started.get('b')!.run_id);
    const c = await runTimes(rec.started.get('c')!.run_id);
    const d = await runTimes(rec.started.get('d')!.run_id);
    // Overlap: each of b and c started before the other finished.
    expect(b.started).toBeLessThan(c.finished);
    expect(c.started).toBeLessThan(b.finished);
    // d started only once both had finished.
    expect(d.started).toBeGreaterThanOrEqual(Math.max(b.finished, c.finished));
    expect(rec.started.get('d')!.input).toBe(
      'combine (b saw [b task: a found 12 crates]) and (c saw [c task: a found 12 crates]) for restock the shop',
    );
    expect(rec.outcome?.output).toBe(`d saw [${rec.started.get('d')!.input}]`);
    expect(node(rec, 'd').depends_on).toEqual(['b', 'c']);
    // The event stream links each node's run.
    const started = (await workflows().events(workflowId)).flatMap((e) =>
      e.event.type === 'node_started' ? [[e.event.node, e.event.run_id]] : [],
    );
    expect(Object.fromEntries(started)).toEqual({
      a: `${workflowId}.a`,
      b: `${workflowId}.b`,
      c: `${workflowId}.c`,
      d: `${workflowId}.d`,
    });
    const run = await h.control.get(`${workflowId}.d`);
    expect(run?.state?.metadata).toEqual({ workflow_id: workflowId, workflow_node: 'd' });
  });

  it('gives a node past its timeout its default, marked low_confidence, and the next node sees it marked so', async () => {
    const { workflowId } = await workflows().start({ workflow: 'late_with_default', input: 'order paper' });
    const rec = await workflows().wait(workflowId, 30_000);
    expect(rec.outcome).toMatchObject({ status: 'succeeded', low_confidence: true });
    expect(rec.done.get('stock')).toMatchObject({
      status: 'defaulted',
      output: 'no stock data',
      low_confidence: true,
      reason: 'timeout',
    });
    const order = rec.started.get('order')!;
    expect(order.low_confidence_inputs).toEqual(['stock']);
    expect(order.input).toBe(
      'order with [low_confidence: node stock timed out after 1500 ms; this is its declared default] no stock data',
    );
    expect(rec.done.get('order')).toMatchObject({
      status: 'succeeded',
      low_confidence: true,
      low_confidence_from: ['stock'],
    });
    const fired = (await workflows().events(workflowId)).filter((e) => e.event.type === 'watchdog_fired');
    expect(fired.map((e) => e.event)).toMatchObject([
      { node: 'stock', action: 'default', timeout_ms: 1500, run_id: `${workflowId}.stock` },
    ]);
    // The late node's run is cancelled rather than left to answer into the void.
    await waitFor(
      async () => (await h.control.get(`${workflowId}.stock`))?.summary.status === 'cancelled',
      15_000,
      "the timed-out node's run to be cancelled",
    );
  });

  it('marks every node after a defaulted one low_confidence along a chain, each later node seeing its input marked so', async () => {
    const { workflowId } = await workflows().start({ workflow: 'chain', input: 'count' });
    const rec = await workflows().wait(workflowId, 30_000);
    expect(rec.outcome).toMatchObject({ status: 'succeeded', low_confidence: true });
    expect(rec.done.get('a')).toMatchObject({ status: 'defaulted', low_confidence: true });
    for (const id of ['b', 'c'])
      expect(rec.done.get(id), id).toMatchObject({
        status: 'succeeded',
        low_confidence: true,
        low_confidence_from: ['a'],
        note: `node ${id} answered from the declared default of a, not from an answer`,
      });
    expect(rec.started.get('c')).toMatchObject({ low_confidence_inputs: ['b'] });
    expect(rec.started.get('c')!.input).toBe(
      `c from [low_confidence: node b answered from the declared default of a, not from an answer] ${rec.done.get('b')!.output}`,
    );
    const finished = (await workflows().events(workflowId)).flatMap((e) =>
      e.event.type === 'node_finished' ? [[e.event.node, e.event.low_confidence]] : [],
    );
    expect(Object.fromEntries(finished)).toEqual({ a: true, b: true, c: true });
  });

  it('completes once the watchdog default made a slow abort node unneeded: its run is cancelled and it cannot abort the workflow', async () => {
    const { workflowId } = await workflows().start({ workflow: 'outlived', input: 'report' });
    const rec = await workflows().wait(workflowId, 60_000);
    expect(rec.outcome).toMatchObject({ status: 'succeeded', reason: 'completed', low_confidence: true });
    expect(rec.outcome?.output).toBe(
      'd saw [final with [low_confidence: node summary timed out after 1500 ms; this is its declared default] no summary]',
    );
    expect(rec.done.get('summary')).toMatchObject({ status: 'defaulted', reason: 'timeout' });
    expect(rec.done.get('slow')).toMatchObject({
      status: 'cancelled',
      low_confidence: false,
      reason: "unneeded: the watchdog gave summary its default, so nothing needs this node's output any more",
      unneeded_by: ['summary'],
    });
    const events = (await workflows().events(workflowId)).map((e) => e.event);
    expect(events.filter((e) => e.type === 'watchdog_fired')).toMatchObject([
      { node: 'summary', action: 'default' },
    ]);
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'node_finished', node: 'slow', status: 'cancelled' }),
    );
    await waitFor(
      async () => (await h.control.get(`${workflowId}.slow`))?.summary.status === 'cancelled',
      15_000,
      "the unneeded node's run to be cancelled",
    );
  });

  it('aborts with a report of who was waiting on whom, since when and why', async () => {
    const { workflowId } = await workflows().start({ workflow: 'late_aborts', input: 'order paper' });
    const rec = await workflows().wait(workflowId, 30_000);
    expect(rec.outcome).toMatchObject({ status: 'aborted', reason: 'timeout' });
    const report = rec.outcome!.report!;
    const stockRun = `${workflowId}.stock`;
    expect(report).toMatchObject({
      timed_out: 'stock',
      timeout_ms: 1500,
      waits: [
        {
          node: 'stock',
          state: 'running',
          waiting_on: [],
          run_id: stockRun,
          since: rec.started.get('stock')!.at,
          why: `its run ${stockRun} (agent test_agent) has not answered; timed out after 1500 ms (on_timeout: abort)`,
        },
        {
          node: 'order',
          state: 'waiting',
          waiting_on: ['stock'],
          since: rec.createdAt,
          why: `needs the output of stock: stock is running as run ${stockRun} since ${new Date(rec.started.get('stock')!.at).toISOString()}`,
        },
      ],
    });
    expect(report.text.split('\n')).toEqual([
      `stock running since ${new Date(rec.started.get('stock')!.at).toISOString()}: ${report.waits[0]!.why}`,
      `order waiting on stock since ${new Date(rec.createdAt).toISOString()}: ${report.waits[1]!.why}`,
    ]);
    expect(rec.started.has('order')).toBe(false);
    await waitFor(
      async () => (await h.control.get(stockRun))?.summary.status === 'cancelled',
      15_000,
      'the running node to be cancelled',
    );
  });

  it('cancels its running nodes when the workflow is cancelled', async () => {
    const { workflowId } = await workflows().start({ workflow: 'hangs', input: 'wait forever' });
    const runId = `${workflowId}.stuck`;
    // Its model never answers, so the run records nothing: its job being worked on is what shows.
    await waitFor(
      async () => (await (await h.control.queue.getJob(runId))?.isActive()) === true,
      15_000,
      'the node run to start',
    );
    await workflows().cancel(workflowId);
    const rec = await workflows().wait(workflowId, 15_000);
    expect(rec.outcome).toMatchObject({ status: 'cancelled', reason: 'cancel_requested' });
    await waitFor(
      async () => (await h.control.get(runId))?.summary.status === 'cancelled',
      15_000,
      'the node run to be cancelled',
    );
  });

  it('starts a workflow once for one id, however often it is started', async () => {
    const first = await workflows().start({ workflow: 'diamond', input: 'again', workflowId: 'wf_once' });
    const second = await workflows().start({ workflow: 'diamond', input: 'again', workflowId: 'wf_once' });
    expect([first.created, second.created]).toEqual([true, false]);
    const rec = await workflows().wait('wf_once', 30_000);
    expect(rec.status).toBe('succeeded');
    const types = (await workflows().events('wf_once')).map((e) => e.event.type);
    expect(types.filter((t) => t === 'workflow_started')).toHaveLength(1);
    expect(types.filter((t) => t === 'node_started')).toHaveLength(4);
  });

  // After the tests above: two diamonds, a default injected, an abort, a cancel.
  it('counts workflows by outcome, node waits and watchdog firings in the scheduler metrics', async () => {
    const registry = h.schedulers[0]!.metricsRegistry;
    const value = async (name: string, labels: Record<string, string>) =>
      (await registry.getSingleMetric(name)?.get())?.values.find((v) =>
        Object.entries(labels).every(([k, x]) => v.labels[k] === x),
      )?.value;
    expect(await value('agent_reach_workflows_total', { workflow: 'diamond', outcome: 'succeeded' })).toBe(2);
    expect(await value('agent_reach_workflows_total', { workflow: 'late_aborts', outcome: 'aborted' })).toBe(
      1,
    );
    expect(await value('agent_reach_workflows_total', { workflow: 'hangs', outcome: 'cancelled' })).toBe(1);
    expect(
      await value('agent_reach_workflow_watchdog_firings_total', {
        workflow: 'late_with_default',
        action: 'default',
      }),
    ).toBe(1);
    expect(
      await value('agent_reach_workflow_watchdog_firings_total', {
        workflow: 'late_aborts',
        action: 'abort',
      }),
    ).toBe(1);
    // Every node of both diamonds waited once.
    const waits = (
      await registry.getSingleMetric('agent_reach_workflow_node_wait_seconds')?.get()
    )?.values.find(
      (v) =>
        (v as { metricName?: string }).metricName === 'agent_reach_workflow_node_wait_seconds_count' &&
        v.labels.workflow === 'diamond',
    );
    expect(waits?.value).toBe(8);
  });

  it('refuses a workflow job added by hand whose id is not its workflow_id, touching no workflow', async () => {
    await workflows().queue.add('workflow', { v: 1, workflow_id: 'wf_other' }, { jobId: 'wf_forged' });
    const failed = await waitFor(
      async () => {
        // One read of the job: its state and its reason are written together when it fails (reading the
        // job, then asking whether it failed, could see it fail in between with the reason unread).
        const job = await workflows().queue.getJob('wf_forged');
        return job?.finishedOn !== undefined && job.failedReason ? job : undefined;
      },
      15_000,
      'the forged job to fail',
    );
    expect(failed?.failedReason).toBe(
      'invalid agent-workflows job wf_forged: its id must be its workflow_id',
    );
    expect(await workflows().get('wf_other')).toBeUndefined();
  });
});

describe("a workflow hands a node's answer to the next node without the executor's attempts", () => {
  let h: Awaited<ReturnType<typeof startRunsHarness>>;
  beforeAll(async () => {
    const agents = writeAgentsFile({
      agents: [
        {
          // Its context provider and its own call both fail once, so the executor tries each twice.
          name: 'retried_reader',
          tools: ['flaky', 'noop'],
          context_providers: [{ tool: 'flaky', arguments: { key: 'context {{input}}', failures: 1 } }],
        },
        { name: 'plain_writer', tools: ['noop'] },
      ],
    });
    const workflowsFile = path.join(tempDir('workflows'), 'workflows.yaml');
    const document = {
      workflows: [
        {
          name: 'read_then_write',
          nodes: [
            { id: 'read', agent: 'retried_reader', model: 'wf-retried-read' },
            {
              id: 'write',
              agent: 'plain_writer',
              model: 'wf-plain-write',
              depends_on: ['read'],
              input: 'write up: {{nodes.read.output}}',
            },
          ],
        },
      ],
    };
    writeFileSync(workflowsFile, JSON.stringify(document));
    h = await startRunsHarness({ AGENTS_FILE: agents, WORKFLOWS_FILE: workflowsFile });
    h.sim.addScenario({
      name: 'wf-retried-read',
      turns: [
        { tool_calls: [{ name: 'flaky', arguments: { key: 'read call', failures: 1 } }] },
        // The node's answer is the result as the model read it, handed to the next node's input.
        { content: 'read {{last}}' },
      ],
    });
    h.sim.addScenario({ name: 'wf-plain-write', turns: [{ content: 'written: {{ user }}' }] });
  });
  afterAll(async () => {
    await h?.close();
  });

  it("shows no node's model the attempts and attempt_log of a context provider, a tool call or a handed-on result", async () => {
    const workflows = h.schedulers[0]!.workflows;
    const { workflowId } = await workflows.start({ workflow: 'read_then_write', input: 'the crates' });
    const rec = await workflows.wait(workflowId, 30_000);
    expect(rec.outcome).toMatchObject({ status: 'succeeded' });
    const read = await h.control.get(rec.started.get('read')!.run_id);
    // The record keeps the retries of both calls.
    expect(read?.state?.steps.map((s) => [s.tool, s.attempts])).toEqual([
      ['flaky', 2],
      ['flaky', 2],
    ]);
    expect(rec.started.get('write')!.input).toMatch(/^write up: read .*"attempts_seen":2/);
    const requests = h.sim.requests.filter((r) =>
      ['wf-retried-read', 'wf-plain-write'].includes(r.scenario ?? ''),
    );
    expect(requests.map((r) => r.scenario)).toEqual(['wf-retried-read', 'wf-retried-read', 'wf-plain-write']);
    for (const r of requests) {
      expect(JSON.stringify(r.body)).toContain('attempts_seen');
      expect(JSON.stringify(r.body)).not.toMatch(/"attempts"|attempt_log|executor_id/);
    }
  });
});
