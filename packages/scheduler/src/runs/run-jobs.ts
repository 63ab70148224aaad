import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Keys, RunJobData } from '@agent-reach/protocol';

export function createRunQueue(connection: Redis, keys: Keys): Queue<RunJobData> {
  return new Queue<RunJobData>(keys.runsQueue, {
    connection,
    prefix: keys.queuePrefix(keys.runsQueue),
  });
}
