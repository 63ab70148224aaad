import { Queue } from 'bullmq';
import type { Keys, RunJobData } from '@agent-reach/protocol';
import type { RedisClient } from '@agent-reach/shared';

export function createRunQueue(connection: RedisClient, keys: Keys): Queue<RunJobData> {
  return new Queue<RunJobData>(keys.runsQueue, {
    connection,
    prefix: keys.queuePrefix(keys.runsQueue),
  });
}
