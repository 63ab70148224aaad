import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { Queue } from 'bullmq';
import { Gauge, type Registry } from 'prom-client';
import { type Keys } from '@agent-reach/protocol';
import { constants, METRIC_PREFIX, redisScripts, type Logger, type RedisClient } from '@agent-reach/shared';

/** Gauge: jobs per queue and state, exposed by the lease holder only. */
export const QUEUE_JOBS_METRIC = `${METRIC_PREFIX}queue_jobs`;
/** Gauge: 1 while this process holds the lease and exposes queue depths, else 0. */
export const QUEUE_SAMPLER_LEADER_METRIC = `${METRIC_PREFIX}queue_sampler_leader`;

export interface QueueSamplerOptions {
  /** Connection for the lease and the counts (shared, never closed here). */
  redis: RedisClient;
  keys: Keys;
  /** Registry the gauges are registered on: the scheduler's `/metrics` registry. */
  registry: Registry;
  /** BullMQ names of the queues to sample, asked before every sample (the catalog's groups can grow). */
  queues: () => readonly string[];
  /** Time between two samples (and two lease renewals), in ms. Default 15 000. */
  intervalMs?: number;
  /** Lease time of the leadership, in ms; must exceed `intervalMs`. Default three intervals. */
  leaseMs?: number;
  logger: Logger;
  /** Identifies this sampler in the lease key's value. Default: host, pid and a random suffix. */
  id?: string;
}

export interface QueueSampler {
  /** Whether this process holds the lease now. */
  isLeader(): boolean;
  /** Stops sampling, waits for a sample in progress, gives the lease up and clears the gauges. */
  stop(): Promise<void>;
}

/** The lease key of the fleet's queue sampler. */
export function queueSamplerLeaseKey(keys: Keys): string {
  return `${keys.prefix}:queue-sampler:leader`;
}

/**
 * Queue depth gauges for the whole fleet, sampled by one scheduler only. Every scheduler runs a sampler;
 * they contend for a lease in Redis (`SET NX PX`), the holder renews it on every sample, and another takes
 * over once it lapses. Only the leader exposes `agent_reach_queue_jobs`; the others expose no series at
 * all, so a sum over every scraped scheduler counts each queue once and a dead leader's values vanish with
 * its target instead of lingering.
 *
 * `parked` is the `delayed` count of the runs queue: the run worker parks a run awaiting a person's
 * approval by moving its job to delayed, and run jobs are never retried with a backoff (one attempt), so
 * nothing else delays them. It is reported for the runs queue only; `waiting` counts jobs ready to be
 * taken (BullMQ's wait and prioritized sets; a paused queue keeps its jobs there).
 */
export function startQueueSampler(options: QueueSamplerOptions): QueueSampler {
  const { redis, keys, registry, logger } = options;
  const intervalMs = options.intervalMs ?? constants.DEFAULT_QUEUE_SAMPLE_INTERVAL_MS;
  const leaseMs = options.leaseMs ?? constants.QUEUE_SAMPLER_LEASE_INTERVALS * intervalMs;
  if (!(intervalMs > 0) || !(leaseMs > intervalMs)) {
    throw new RangeError(`queue sampler: leaseMs (${leaseMs}) must exceed intervalMs (${intervalMs}) > 0`);
  }
  const id = options.id ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  const leaseKey = queueSamplerLeaseKey(keys);
  const scripts = redisScripts(redis);
  const log = logger.child({ component: 'queue-sampler' });

  const jobs = new Gauge({
    name: QUEUE_JOBS_METRIC,
    help: 'Jobs per queue and state, sampled by the one scheduler holding the sampler lease (parked: runs awaiting approval).',
    labelNames: ['queue', 'state'] as const,
    registers: [registry],
  });
  const leaderGauge = new Gauge({
    name: QUEUE_SAMPLER_LEADER_METRIC,
    help: 'Whether this process holds the queue sampler lease (1) and exposes the queue depths, or not (0).',
    registers: [registry],
  });
  leaderGauge.set(0);

  const queues = new Map<string, Queue>();
  const queueOf = (name: string) => {
    let queue = queues.get(name);
    if (!queue) {
      queue = new Queue(name, { connection: redis, prefix: keys.queuePrefix(name) });
      queues.set(name, queue);
    }
    return queue;
  };

  let leader = false;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();

  const follow = () => {
    if (leader) log.info({ leaseKey }, 'queue sampler lease lost');
    leader = false;
    jobs.reset();
    leaderGauge.set(0);
  };

  const lead = async (): Promise<boolean> => {
    if (leader) {
      const renewed = await scripts.renewLease([leaseKey], [id, leaseMs]);
      if (renewed === 1) return true;
      follow();
    }
    const taken = await redis.set(leaseKey, id, 'PX', leaseMs, 'NX');
    if (taken !== 'OK') return false;
    leader = true;
    log.info({ leaseKey, leaseMs }, 'queue sampler lease taken');
    return true;
  };

  const sample = async () => {
    const names = [...new Set(options.queues())];
    const counts = await Promise.all(
      names.map((name) =>
        queueOf(name).getJobCounts('waiting', 'prioritized', 'active', 'delayed', 'failed'),
      ),
    );
    // The lease may have lapsed while counting (a long pause): never expose values as a non-leader.
    if (stopped || !leader) return;
    // Reset and refill in one synchronous stretch, so a scrape never sees a half-written sample.
    jobs.reset();
    names.forEach((name, i) => {
      const c = counts[i] ?? {};
      const n = (state: string) => c[state] ?? 0;
      jobs.set({ queue: name, state: 'waiting' }, n('waiting') + n('prioritized'));
      jobs.set({ queue: name, state: 'active' }, n('active'));
      jobs.set({ queue: name, state: 'delayed' }, n('delayed'));
      jobs.set({ queue: name, state: 'failed' }, n('failed'));
      if (name === keys.runsQueue) jobs.set({ queue: name, state: 'parked' }, n('delayed'));
    });
    leaderGauge.set(1);
  };

  const tick = async () => {
    try {
      if (await lead()) await sample();
      else follow();
    } catch (err) {
      // Without Redis no value can be trusted: expose none rather than stale ones.
      log.warn({ err }, 'queue sample failed');
      jobs.reset();
      leaderGauge.set(0);
    }
  };

  const schedule = (delayMs: number) => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = tick().finally(() => schedule(intervalMs));
    }, delayMs);
    timer.unref();
  };
  schedule(0);

  return {
    isLeader: () => leader,
    async stop() {
      if (stopped) return;
      stopped = true;
      clearTimeout(timer);
      await running;
      if (leader) {
        // Hand over at once instead of leaving the fleet blind until the lease lapses.
        await scripts.releaseLease([leaseKey], [id]).catch((err: unknown) => {
          log.warn({ err }, 'could not release the queue sampler lease');
        });
      }
      leader = false;
      jobs.reset();
      leaderGauge.set(0);
      registry.removeSingleMetric(QUEUE_JOBS_METRIC);
      registry.removeSingleMetric(QUEUE_SAMPLER_LEADER_METRIC);
      await Promise.all([...queues.values()].map((q) => q.close().catch(() => undefined)));
    },
  };
}
