import type { Redis } from 'ioredis';
import { callLedgerEntry, type Keys } from '@agent-reach/shared';

/** A run as executors verify jobs against it: its meta hash (status, agent, session). */
export interface SeededRun {
  runId: string;
  agent: string;
  /** Default `running`. */
  status?: string;
  sessionId?: string;
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
  redis: Redis,
  keys: Keys,
  run: SeededRun,
  calls: readonly SeededCall[] = [],
): Promise<void> {
  const pipe = redis.pipeline();
  pipe.hset(keys.runMeta(run.runId), {
    runId: run.runId,
    traceId: run.runId,
    agent: run.agent,
    status: run.status ?? 'running',
    ...(run.sessionId ? { sessionId: run.sessionId } : {}),
  });
  addCalls(pipe, keys, run, calls);
  await pipe.exec();
}

/** Adds calls to a seeded run's ledger. */
export async function seedCalls(
  redis: Redis,
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
  redis: Redis,
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
  pipe: ReturnType<Redis['pipeline']>,
  keys: Keys,
  run: Pick<SeededRun, 'runId' | 'agent'>,
  calls: readonly SeededCall[],
): void {
  if (calls.length === 0) return;
  pipe.hset(
    keys.runCalls(run.runId),
    ...calls.flatMap((c) => [c.toolCallId, callLedgerEntry({ agent: run.agent, ...c })]),
  );
}
