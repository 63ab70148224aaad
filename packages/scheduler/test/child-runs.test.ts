import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Queue } from 'bullmq';
import { callLedgerEntry, createLogger, parseAgents } from '@agent-reach/shared';
import type { RunOutcome } from '@agent-reach/protocol';
import {
  ChildRunControl,
  childResult,
  childRunId,
  createRunState,
  RunStore,
} from '@agent-reach/scheduler/internal';
import { testRedis } from '@agent-reach/testing';

const AGENTS = parseAgents(
  [
    'agents:',
    '  - {name: planner, tools: [], agent_tools: [researcher]}',
    '  - {name: researcher, tools: []}',
  ].join('\n'),
  'agents.yaml',
);

describe('child runs of agent tools on the run queue (real Redis, real BullMQ)', () => {
  let t: ReturnType<typeof testRedis>;
  let children: ChildRunControl;
  beforeEach(() => {
    t = testRedis();
    children = new ChildRunControl(t.redis, t.keys, AGENTS, createLogger('test', { level: 'silent' }));
  });
  afterEach(async () => {
    await children.close();
    await t.cleanup();
  });

  const request = {
    parentRunId: 'run_parent',
    callId: 'call_1',
    tool: 'ask_researcher',
    agent: 'researcher',
    input: 'find it',
    traceId: 'a'.repeat(32),
    depth: 1,
    maxDepth: 3,
    deadlineAt: Date.now() + 60_000,
  };
  /** A finished child of `request`'s call, with `outcome`. */
  const endedChild = (outcome: Partial<RunOutcome>, runId = childRunId('run_parent', 'call_1')) => {
    const state = createRunState({ runId, agent: 'researcher', input: 'find it', deadlineMs: 60_000 });
    state.parent = { runId: 'run_parent', callId: 'call_1', tool: 'ask_researcher', depth: 1, maxDepth: 3 };
    state.outcome = {
      status: 'succeeded',
      reason: 'final_answer',
      usage: state.usage,
      iterations: 1,
      steps: [],
      ...outcome,
    };
    return state;
  };
  const parentResult = async () => t.redis.hget(t.keys.results('run_parent'), 'call_1');

  it('starts the child of one call once however often it is asked, under an id derived from the parent and the call', async () => {
    const first = await children.start(request);
    const again = await children.start(request);
    expect(again).toBe(first);
    expect(first).toBe(childRunId('run_parent', 'call_1'));
    expect(first).not.toBe(childRunId('run_parent', 'call_2'));
    const queue = new Queue(t.keys.runsQueue, {
      connection: t.redis,
      prefix: t.keys.queuePrefix(t.keys.runsQueue),
    });
    const jobs = await queue.getJobs(['waiting', 'delayed', 'active']);
    await queue.close();
    expect(jobs.map((j) => j.id)).toEqual([first]);
    expect(jobs[0]!.data.parent).toEqual({
      run_id: 'run_parent',
      call_id: 'call_1',
      tool: 'ask_researcher',
      depth: 1,
      max_depth: 3,
      deadline_at: request.deadlineAt,
    });
    const listed = await new RunStore(t.redis, t.keys).list();
    expect(listed.map((r) => [r.runId, r.status])).toEqual([[first, 'queued']]);
  });

  it("answers the parent's call with the child's answer, first answer wins, only for a call the parent's ledger holds", async () => {
    await children.answerParent(endedChild({ answer: 'found it' }));
    expect(await parentResult()).toBeNull();
    await t.redis.hset(
      t.keys.runCalls('run_parent'),
      'call_1',
      callLedgerEntry({ agent: 'planner', name: 'ask_researcher', arguments: '{"input":"find it"}' }),
    );
    await children.answerParent(endedChild({ answer: 'found it' }));
    await children.answerParent(endedChild({ answer: 'a second answer' }));
    expect(JSON.parse((await parentResult())!)).toMatchObject({
      ok: true,
      content: 'found it',
      name: 'ask_researcher',
    });
  });

  it('answers nothing for a run whose id is not the one its parent link derives', async () => {
    await t.redis.hset(
      t.keys.runCalls('run_parent'),
      'call_1',
      callLedgerEntry({ agent: 'planner', name: 'ask_researcher', arguments: '{}' }),
    );
    await children.answerParent(endedChild({ answer: 'forged' }, 'run_forged'));
    expect(await parentResult()).toBeNull();
  });

  it('turns a failed child into an execution_error naming how it ended, and cuts a long answer saying so', () => {
    const failed = childResult(
      endedChild({ status: 'failed', reason: 'failed_rounds', report: '3 tool rounds in a row failed' }),
      'call_1',
      'ask_researcher',
    );
    expect(failed.error).toEqual({
      kind: 'execution_error',
      type: 'agent_failed',
      message: 'the agent "researcher" ended failed (failed_rounds): 3 tool rounds in a row failed',
      retryable: true,
    });
    const long = childResult(endedChild({ answer: 'x'.repeat(25_000) }), 'call_1', 'ask_researcher');
    expect(long).toMatchObject({ ok: true, truncated: true });
    expect((long.content as string).length).toBe(20_000);
    expect(long.notice).toContain('20000 of 25000 characters');
  });
});
