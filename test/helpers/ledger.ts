import { randomUUID } from 'node:crypto';
import { Queue, type Job } from 'bullmq';
import { WIRE_VERSION, type Keys, type ToolCallJob, type ToolReply } from '@agent-reach/protocol';
import { callLedgerEntry, type RedisClient } from '@agent-reach/shared';
import type { RunState } from '@agent-reach/scheduler';
import type { CheckpointWrite } from '@agent-reach/scheduler/internal';
import { waitFor } from './redis.js';

/** A run as executors verify jobs against it: its meta hash (status, agent, session). */
export interface SeededRun {
  runId: string;
  agent: string;
  /** Default `running`. */
  status?: string;
  sessionId?: string;
  /** Tools the run was granted, as the run's checkpoint records them. */
  grants?: readonly string[];
}

export interface SeededCall {
  toolCallId: string;
  name: string;
  arguments: string;
}

/**
 * Writes what the scheduler records before it publishes a model turn's calls: the run's meta (status,
 * agent, session) and each call in the run's ledger. Tests that publish tool jobs themselves call this
 * first, or the executor refuses the jobs as not matching any run.
 */
export async function seedRun(
  redis: RedisClient,
  keys: Keys,
  run: SeededRun,
  calls: readonly SeededCall[] = [],
): Promise<void> {
  const pipe = redis.pipeline();
  pipe.hset(keys.runMeta(run.runId), metaOf(run));
  addCalls(pipe, keys, run, calls);
  await pipe.exec();
}

/** A run's meta hash, as executors read it. */
function metaOf(run: SeededRun): Record<string, string> {
  return {
    runId: run.runId,
    traceId: run.runId,
    agent: run.agent,
    status: run.status ?? 'running',
    ...(run.sessionId ? { sessionId: run.sessionId } : {}),
    ...(run.grants ? { grants: run.grants.join(',') } : {}),
  };
}

/**
 * A checkpoint hook for runs driven in-process without a run store: it writes the part of a checkpoint
 * executors verify jobs against (the run, and the calls of its model turns in its ledger), snapshotted
 * when the step ends and written before the turn's calls are dispatched. Like the store's checkpoint, a
 * step writes only what changed: the run's meta when it differs from the last written, and new calls.
 */
export function recordingCheckpoint(redis: RedisClient, keys: Keys): (state: RunState) => CheckpointWrite {
  // What was written of each run (by its state object, so a finished run's entry goes with it).
  const written = new WeakMap<RunState, { meta: string; calls: Set<string> }>();
  return (state) => {
    const run = { runId: state.runId, agent: state.agent, status: state.status, sessionId: state.sessionId };
    const seen = written.get(state) ?? { meta: '', calls: new Set<string>() };
    written.set(state, seen);
    const meta = JSON.stringify(run);
    const writeMeta = meta !== seen.meta;
    seen.meta = meta;
    const calls: SeededCall[] = [];
    for (const m of state.messages) {
      if (m.role !== 'assistant') continue;
      for (const c of m.tool_calls ?? []) {
        if (c.type !== 'function' || seen.calls.has(c.id)) continue;
        seen.calls.add(c.id);
        calls.push({ toolCallId: c.id, name: c.function.name, arguments: c.function.arguments });
      }
    }
    // A guardrail's tool calls go in the ledger without a turn of the history, as the run store writes them.
    for (const c of state.guardrailCalls ?? []) {
      if (seen.calls.has(c.id)) continue;
      seen.calls.add(c.id);
      calls.push({ toolCallId: c.id, name: c.name, arguments: c.arguments });
    }
    // Commands, not a pipeline: they go out in order on the connection, ahead of the turn's dispatch.
    return async () => {
      await Promise.all([
        writeMeta ? redis.hset(keys.runMeta(run.runId), metaOf(run)) : undefined,
        calls.length > 0 ? redis.hset(keys.runCalls(run.runId), ...ledgerFields(run, calls)) : undefined,
      ]);
    };
  };
}

/** Adds calls to a seeded run's ledger. */
export async function seedCalls(
  redis: RedisClient,
  keys: Keys,
  run: Pick<SeededRun, 'runId' | 'agent'>,
  calls: readonly SeededCall[],
): Promise<void> {
  const pipe = redis.pipeline();
  addCalls(pipe, keys, run, calls);
  await pipe.exec();
}

/** Records a person's decision on a call, as the approvals door does. */
export async function seedDecision(
  redis: RedisClient,
  keys: Keys,
  runId: string,
  toolCallId: string,
  decision: 'approved' | 'rejected',
): Promise<void> {
  await redis.hset(
    keys.runApprovals(runId),
    toolCallId,
    JSON.stringify({ decision, by: 'tester', decidedAt: Date.now() }),
  );
}

function addCalls(
  pipe: ReturnType<RedisClient['pipeline']>,
  keys: Keys,
  run: Pick<SeededRun, 'runId' | 'agent'>,
  calls: readonly SeededCall[],
): void {
  if (calls.length === 0) return;
  pipe.hset(keys.runCalls(run.runId), ...ledgerFields(run, calls));
}

/** Ledger fields and values of calls: each call's id, then its entry. */
function ledgerFields(run: Pick<SeededRun, 'agent'>, calls: readonly SeededCall[]): string[] {
  return calls.flatMap((c) => [c.toolCallId, callLedgerEntry({ agent: run.agent, ...c })]);
}

/**
 * Adds tool jobs to the default tool queue by hand, as anything with Redis access can (replies go to
 * `keys.replies('forger')` unless the job says otherwise). Close `queue` after use.
 */
export function handAddedJobs(t: { redis: RedisClient; prefix: string; keys: Keys }) {
  const queue = new Queue<ToolCallJob>('tools-default', {
    connection: t.redis,
    prefix: t.keys.queuePrefix('tools-default'),
  });
  const add = async (
    call: {
      runId: string;
      toolCallId: string;
      name: string;
      arguments?: string;
      deadline?: number;
      replyTo?: string;
      agent?: string;
      /** What an older release's job said of approval (executors ignore it). */
      approval?: ToolCallJob['approval'];
      /** The wire version to write; 1 writes the previous release's camelCase job without a `v`. */
      v?: number;
    },
    jobId = `hand-${randomUUID()}`,
  ) => {
    const fields = {
      run_id: call.runId,
      trace_id: call.runId,
      agent: call.agent ?? 'test_agent',
      tool_call_id: call.toolCallId,
      name: call.name,
      arguments: call.arguments ?? '{}',
      deadline: call.deadline ?? Date.now() + 30_000,
      reply_to: call.replyTo ?? t.keys.replies('forger'),
      enqueued_at: Date.now(),
      ...(call.approval ? { approval: call.approval } : {}),
    };
    const job =
      call.v === 1
        ? {
            runId: fields.run_id,
            traceId: fields.trace_id,
            agent: fields.agent,
            toolCallId: fields.tool_call_id,
            name: fields.name,
            arguments: fields.arguments,
            deadline: fields.deadline,
            replyTo: fields.reply_to,
            enqueuedAt: fields.enqueued_at,
          }
        : { v: call.v ?? WIRE_VERSION, ...fields };
    const added = await queue.add(call.name, job as ToolCallJob, { jobId, attempts: 3 });
    return added.id as string;
  };
  /** The job once the executor is done with it (state 'unknown' when it was removed on completion). */
  const settled = (id: string) =>
    waitFor(
      async () => {
        const state = await queue.getJobState(id);
        if (!['failed', 'completed', 'unknown'].includes(state)) return undefined;
        // Read after the state: a job read before may predate its move to failed.
        return { state, job: (await queue.getJob(id)) as Job<ToolCallJob> | undefined };
      },
      10_000,
      `job ${id} to settle`,
    );
  /** The next reply pushed to the default reply list, parsed (waits up to `seconds`). */
  const reply = async (seconds = 10) => {
    const popped = await t.redis.blpop(t.keys.replies('forger'), seconds);
    if (!popped) throw new Error(`no reply within ${seconds} s`);
    return JSON.parse(popped[1]) as ToolReply;
  };
  return { queue, add, settled, reply };
}
