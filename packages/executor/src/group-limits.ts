import { Queue } from 'bullmq';
import type { Keys } from '@agent-reach/protocol';
import type { Logger, RedisClient, ToolGroupLimits } from '@agent-reach/shared';

export interface GroupLimiter {
  /** Writes each served group's limits (or their absence) to its queue; BullMQ enforces them fleet-wide. */
  apply(limits: ReadonlyMap<string, ToolGroupLimits>): Promise<void>;
  close(): Promise<void>;
}

/**
 * Fleet-wide limits of the tool groups this process serves, kept in each queue's BullMQ metadata (global
 * concurrency and global rate limit), which every worker of the queue obeys whatever process it runs in.
 * Every executor writes the same values for the version it holds, so the limits follow the configuration
 * within a poll interval of a change; a group whose limit was removed gets it removed.
 */
export function createGroupLimiter(options: {
  connection: RedisClient;
  keys: Keys;
  groups: readonly string[];
  logger: Logger;
}): GroupLimiter {
  const { connection, keys, logger } = options;
  const queues = new Map<string, Queue>();
  // Read at each application: the groups served may grow (a reload brought tools in a new group).
  const addQueues = () => {
    for (const group of options.groups) {
      if (!queues.has(group))
        queues.set(
          group,
          new Queue(keys.toolQueue(group), { connection, prefix: keys.queuePrefix(keys.toolQueue(group)) }),
        );
    }
  };
  addQueues();
  // Applications run one after another, so an older version never lands after a newer one.
  let chain: Promise<void> = Promise.resolve();
  return {
    apply(limits) {
      chain = chain.then(async () => {
        addQueues();
        for (const [group, queue] of queues) {
          const l = limits.get(group);
          try {
            await (l?.concurrency === undefined
              ? queue.removeGlobalConcurrency()
              : queue.setGlobalConcurrency(l.concurrency));
            await (l?.rate === undefined
              ? queue.removeGlobalRateLimit()
              : queue.setGlobalRateLimit(l.rate.max, l.rate.per_ms));
          } catch (err) {
            logger.warn({ err, group }, 'could not apply the tool group limits');
          }
        }
      });
      return chain;
    },
    async close() {
      await chain;
      await Promise.all([...queues.values()].map((q) => q.close()));
    },
  };
}
