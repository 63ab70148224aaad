import { afterEach, describe, expect, it } from 'vitest';
import { WorkflowControl } from '@agent-reach/scheduler';
import { loadAgents, loadWorkflows } from '@agent-reach/shared';
import { startSchedulerChild, TEST_AGENTS, type Child } from './helpers/processes.js';
import { startRunsHarness, testEnv } from './helpers/runs.js';
import { waitFor } from './helpers/redis.js';
import { WORKFLOW_SCENARIOS, WORKFLOWS_FIXTURE } from './helpers/workflows.js';

type Harness = Awaited<ReturnType<typeof startRunsHarness>>;

describe('workflow durability: a scheduler killed mid-workflow (real processes, real Redis)', () => {
  let h: Harness | undefined;
  let workflows: WorkflowControl | undefined;
  const children: Child[] = [];
  afterEach(async () => {
    for (const c of children.splice(0)) {
      c.kill('SIGKILL');
      await c.exited;
    }
    await workflows?.close();
    await h?.close();
    h = undefined;
  });

  it('completes the workflow after kill -9 of the scheduler coordinating it, each node run exactly once', async () => {
    h = await startRunsHarness({}, { scheduler: false });
    for (const s of WORKFLOW_SCENARIOS) h.sim.addScenario(s);
    // Short locks, so that the killed scheduler's jobs stall and are taken over within seconds.
    const env = testEnv(h.prefix, h.sim, {
      WORKFLOWS_FILE: WORKFLOWS_FIXTURE,
      RUN_LOCK_DURATION_MS: '3000',
      RUN_STALLED_INTERVAL_MS: '1000',
    });
    const defs = loadWorkflows(WORKFLOWS_FIXTURE, loadAgents(TEST_AGENTS).agents.keys());
    workflows = new WorkflowControl(h.producer, h.keys, defs);
    const first = startSchedulerChild(env);
    children.push(first);
    await first.ready;
    const { workflowId } = await workflows.start({ workflow: 'diamond', input: 'restock the shop' });
    // Killed while b and c, the slow middle nodes, run on it: their runs and the workflow's job stall.
    await waitFor(
      async () => {
        const started = (await workflows!.events(workflowId)).filter((e) => e.event.type === 'node_started');
        return started.length >= 3;
      },
      20_000,
      'b and c to start',
    );
    first.kill('SIGKILL');
    await first.exited;
    expect((await workflows.get(workflowId))?.status).toBe('running');
    const second = startSchedulerChild(env);
    children.push(second);
    await second.ready;
    const rec = await workflows.wait(workflowId, 60_000);
    expect(rec.outcome).toMatchObject({ status: 'succeeded', reason: 'completed' });
    expect(rec.started.get('d')?.input).toBe(
      'combine (b saw [b task: a found 12 crates]) and (c saw [c task: a found 12 crates]) for restock the shop',
    );
    const events = (await workflows.events(workflowId)).map((e) => e.event);
    const per = (type: string) =>
      events.flatMap((e) => (e.type === type && 'node' in e ? [e.node] : [])).sort();
    expect(per('node_started')).toEqual(['a', 'b', 'c', 'd']);
    expect(per('node_finished')).toEqual(['a', 'b', 'c', 'd']);
    expect(events.filter((e) => e.type === 'workflow_finished')).toHaveLength(1);
    for (const node of ['a', 'b', 'c', 'd']) {
      const runId = `${workflowId}.${node}`;
      const types = (await h.control.events(runId)).map((e) => e.event.type);
      expect({ node, started: types.filter((t) => t === 'run_started').length }).toEqual({
        node,
        started: 1,
      });
      expect({ node, finished: types.filter((t) => t === 'run_finished').length }).toEqual({
        node,
        finished: 1,
      });
    }
    // No run of the workflow besides its four nodes' runs.
    const runs = await h.control.list({ limit: 100 });
    expect(runs.map((r) => r.runId).sort()).toEqual(['a', 'b', 'c', 'd'].map((n) => `${workflowId}.${n}`));
  }, 120_000);
});
