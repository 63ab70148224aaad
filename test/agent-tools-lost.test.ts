import { afterEach, describe, expect, it } from 'vitest';
import { addScenarios, AGENTS, MODELS, ofType } from './helpers/agent-tools.js';
import { FULL_KEY, startApiHarness, type ApiHarness } from './helpers/api.js';
import { writeAgentsFile } from './helpers/mcp.js';
import { waitFor } from './helpers/redis.js';

/**
 * A child run whose job is lost (removed from the queue) does not leave its parent waiting until its
 * deadline: the parked parent looks after its children at the run worker's stalled-job interval and
 * queues a child with no job again under the same id. Real Redis, BullMQ, executor, llm-sim.
 */
describe('agents as tools: a child run whose job is lost (real Redis, real fleet, llm-sim)', () => {
  let h: ApiHarness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  const start = async () => {
    h = await startApiHarness(
      {},
      { AGENTS_FILE: writeAgentsFile(AGENTS), ...MODELS, RUN_STALLED_INTERVAL_MS: '500' },
    );
    addScenarios(h.sim);
    return h;
  };
  const pendingApproval = async (harness: ApiHarness, runId: string) =>
    waitFor(
      async () => {
        const r = (await harness.call('GET', `/v1/runs/${runId}`, { key: FULL_KEY })).json;
        return r.status === 'awaiting_approval' && r.pending_approvals?.[0] ? r : undefined;
      },
      20_000,
      'the child run to wait for a person',
    );
  const parkedChildOf = async (harness: ApiHarness, parentId: string) => {
    const started = await waitFor(
      async () => ofType(await harness.control.events(parentId), 'child_run_started')[0],
      15_000,
      'the child run to start',
    );
    await pendingApproval(harness, started.child_run_id);
    return started.child_run_id;
  };
  const approveAndFinish = async (harness: ApiHarness, parentId: string, childId: string) => {
    const child = await pendingApproval(harness, childId);
    await harness.control.decide({
      runId: childId,
      toolCallId: child.pending_approvals[0].tool_call_id,
      decision: 'approved',
    });
    return harness.control.wait(parentId, 30_000);
  };

  it('starts a child that has neither a job nor a record again under the same id, and the parent gets its answer', async () => {
    const harness = await start();
    const parentId = await harness.control.start({ agent: 'planner', input: 'plan it' });
    const childId = await parkedChildOf(harness, parentId);
    // The child's job and its whole record vanish (as a queue cleaned by hand, or Redis losing data).
    await (await harness.control.queue.getJob(childId))!.remove();
    const k = harness.keys;
    await harness.redis.del(
      k.runState(childId),
      k.runMessages(childId),
      k.runApprovals(childId),
      k.runMeta(childId),
      k.runEvents(childId),
    );
    // The parked parent notices and starts it again: a fresh run of the child, with the same id.
    await waitFor(
      async () => (await harness.control.queue.getJob(childId)) ?? undefined,
      15_000,
      'the child to be queued again',
    );
    const outcome = await approveAndFinish(harness, parentId, childId);
    expect(outcome).toMatchObject({ status: 'succeeded', answer: 'planner: researched ok=true' });
    expect(ofType(await harness.control.events(parentId), 'child_run_started')).toHaveLength(1);
    expect(ofType(await harness.control.events(childId), 'run_started')).toHaveLength(1);
    expect((await harness.control.get(childId))?.state?.parent).toMatchObject({ runId: parentId });
  });

  it('queues again a child whose job alone was removed, which resumes from its record without asking its approval twice', async () => {
    const harness = await start();
    const parentId = await harness.control.start({ agent: 'planner', input: 'plan it' });
    const childId = await parkedChildOf(harness, parentId);
    await (await harness.control.queue.getJob(childId))!.remove();
    await waitFor(
      async () => (await harness.control.queue.getJob(childId)) ?? undefined,
      15_000,
      'the child to be queued again',
    );
    const outcome = await approveAndFinish(harness, parentId, childId);
    expect(outcome).toMatchObject({ status: 'succeeded', answer: 'planner: researched ok=true' });
    const childEvents = await harness.control.events(childId);
    expect(ofType(childEvents, 'run_started')).toHaveLength(1);
    expect(ofType(childEvents, 'approval_requested')).toHaveLength(1);
  });
});
