import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Keys, RunJobData } from '@agent-reach/shared';

export { RUN_ID_PATTERN, RESERVED_RUN_IDS, isValidRunId, runJobOptions } from '@agent-reach/shared';
export type { RunJobData } from '@agent-reach/shared';

export function createRunQueue(connection: Redis, keys: Keys): Queue<RunJobData> {
  return new Queue<RunJobData>(keys.runsQueue, { connection, prefix: keys.prefix });
}
