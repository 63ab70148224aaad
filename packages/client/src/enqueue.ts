import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import {
  constants,
  createKeys,
  isValidRunId,
  RESERVED_RUN_IDS,
  RUN_ID_PATTERN,
  runJobOptions,
  type RunJobData,
} from '@agent-reach/shared';

/** What a job on `agent-runs` carries besides its version and run id (the README's job schema). */
export type RunJobFields = Omit<RunJobData, 'v' | 'runId'>;

export interface EnqueueRunOptions extends RunJobFields {
  /** A connection to reuse (left open), or… */
  connection?: Redis;
  /** …a Redis URL to connect to for this call. */
  redisUrl?: string;
  /** The platform's key prefix (`AR_KEY_PREFIX`), which is also BullMQ's prefix. Default `ar`. */
  prefix?: string;
  /** The run id and job id. Default `run_<uuid>`. */
  runId?: string;
  /** How long BullMQ keeps the finished job, in seconds. Default: the platform's run retention (7 days). */
  retentionS?: number;
}

export { RUN_ID_PATTERN, RESERVED_RUN_IDS, runJobOptions };

/**
 * Starts a run without the HTTP API: adds its job straight onto the `agent-runs` queue, exactly as the
 * API does. Adding the same run id twice starts it once. Returns the run id.
 */
export async function enqueueRun(o: EnqueueRunOptions): Promise<{ runId: string }> {
  const runId = o.runId ?? `run_${randomUUID()}`;
  if (!isValidRunId(runId))
    throw new TypeError(`runId must match ${RUN_ID_PATTERN} and not be one of BullMQ's key names`);
  if (typeof o.agent !== 'string' || !o.agent) throw new TypeError('agent is required');
  if (typeof o.input !== 'string' || !o.input.trim()) throw new TypeError('input must be a non-empty string');
  if (!o.connection && !o.redisUrl) throw new TypeError('pass a connection or a redisUrl');
  const keys = createKeys(o.prefix ?? constants.DEFAULT_KEY_PREFIX);
  const connection = o.connection ?? new Redis(o.redisUrl as string, { maxRetriesPerRequest: 1 });
  const queue = new Queue(keys.runsQueue, { connection, prefix: keys.prefix });
  try {
    const data = {
      v: 1 as const,
      runId,
      agent: o.agent,
      input: o.input,
      ...(o.sessionId ? { sessionId: o.sessionId } : {}),
      ...(o.model ? { model: o.model } : {}),
      ...(o.traceId ? { traceId: o.traceId } : {}),
      ...(o.metadata ? { metadata: o.metadata } : {}),
    };
    await queue.add('run', data, runJobOptions(runId, o.retentionS));
    return { runId };
  } finally {
    await queue.close();
    if (!o.connection) await connection.quit().catch(() => undefined);
  }
}
