import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { Queue } from 'bullmq';
import { Gauge, type Registry } from 'prom-client';
import { type Keys } from '@agent-reach/protocol';
import {
  constants,
  METRIC_PREFIX,
  redisScripts,
  type Logger,
  type RedisClient,
  type RedisScripts,
} from '@agent-reach/shared';

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

/** The options with every default filled in. */
export type ResolvedQueueSamplerOptions = Required<QueueSamplerOptions>;

/** Fills in the sampler's defaults; a lease that would not outlast an interval is a RangeError. */
export function resolveQueueSamplerOptions(o: QueueSamplerOptions): ResolvedQueueSamplerOptions {
  const intervalMs = o.intervalMs ?? constants.DEFAULT_QUEUE_SAMPLE_INTERVAL_MS;
  const leaseMs = o.leaseMs ?? constants.QUEUE_SAMPLER_LEASE_INTERVALS * intervalMs;
  if (!(intervalMs > 0) || !(leaseMs > intervalMs)) {
    throw new RangeError(`queue sampler: leaseMs (${leaseMs}) must exceed intervalMs (${intervalMs}) > 0`);
  }
  return { ...o, intervalMs, leaseMs, id: o.id ?? newQueueSamplerId() };
}

/** A sampler's id as the lease key holds it: host, pid and a random suffix, so an operator finds it. */
export function newQueueSamplerId(): string {
  return `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
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
  const ctx = createSamplerContext(resolveQueueSamplerOptions(options));
  schedule(ctx, 0);
  return {
    isLeader: () => ctx.leader,
    stop: () => stopSampler(ctx),
  };
}

/** A sampler's gauges, queues, lease and timer: what its steps share. */
interface SamplerContext {
  readonly options: ResolvedQueueSamplerOptions;
  readonly leaseKey: string;
  readonly scripts: RedisScripts;
  readonly log: Logger;
  readonly jobs: Gauge<'queue' | 'state'>;
  readonly leaderGauge: Gauge;
  /** A BullMQ queue per sampled name, made on first use (counts need no worker). */
  readonly queues: Map<string, Queue>;
  leader: boolean;
  stopped: boolean;
  timer: NodeJS.Timeout | undefined;
  /** The tick in progress (or the last one): `stop` waits for it. */
  running: Promise<void>;
}

function createSamplerContext(options: ResolvedQueueSamplerOptions): SamplerContext {
  const { redis, keys, registry, logger } = options;
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
  return {
    options,
    leaseKey: queueSamplerLeaseKey(keys),
    scripts: redisScripts(redis),
    log: logger.child({ component: 'queue-sampler' }),
    jobs,
    leaderGauge,
    queues: new Map(),
    leader: false,
    stopped: false,
    timer: undefined,
    running: Promise.resolve(),
  };
}

function queueOf(ctx: SamplerContext, name: string): Queue {
  let queue = ctx.queues.get(name);
  if (!queue) {
    const { redis, keys } = ctx.options;
    queue = new Queue(name, { connection: redis, prefix: keys.queuePrefix(name) });
    ctx.queues.set(name, queue);
  }
  return queue;
}

/** Not (or no longer) the leader: expose no series. */
function follow(ctx: SamplerContext): void {
  if (ctx.leader) ctx.log.info({ leaseKey: ctx.leaseKey }, 'queue sampler lease lost');
  ctx.leader = false;
  ctx.jobs.reset();
  ctx.leaderGauge.set(0);
}

/** Renews the lease this sampler holds, or takes it when free; whether this sampler leads now. */
async function lead(ctx: SamplerContext): Promise<boolean> {
  const { redis, id, leaseMs } = ctx.options;
  if (ctx.leader) {
    const renewed = await ctx.scripts.renewLease([ctx.leaseKey], [id, leaseMs]);
    if (renewed === 1) return true;
    follow(ctx);
  }
  const taken = await redis.set(ctx.leaseKey, id, 'PX', leaseMs, 'NX');
  if (taken !== 'OK') return false;
  ctx.leader = true;
  ctx.log.info({ leaseKey: ctx.leaseKey, leaseMs }, 'queue sampler lease taken');
  return true;
}

async function sample(ctx: SamplerContext): Promise<void> {
  const { jobs } = ctx;
  const names = [...new Set(ctx.options.queues())];
  const counts = await Promise.all(
    names.map((name) =>
      queueOf(ctx, name).getJobCounts('waiting', 'prioritized', 'active', 'delayed', 'failed'),
    ),
  );
  // The lease may have lapsed while counting (a long pause): never expose values as a non-leader.
  if (ctx.stopped || !ctx.leader) return;
  // Reset and refill in one synchronous stretch, so a scrape never sees a half-written sample.
  jobs.reset();
  names.forEach((name, i) => {
    const c = counts[i] ?? {};
    const n = (state: string) => c[state] ?? 0;
    jobs.set({ queue: name, state: 'waiting' }, n('waiting') + n('prioritized'));
    jobs.set({ queue: name, state: 'active' }, n('active'));
    jobs.set({ queue: name, state: 'delayed' }, n('delayed'));
    jobs.set({ queue: name, state: 'failed' }, n('failed'));
    if (name === ctx.options.keys.runsQueue) jobs.set({ queue: name, state: 'parked' }, n('delayed'));
  });
  ctx.leaderGauge.set(1);
}

async function tick(ctx: SamplerContext): Promise<void> {
  try {
    if (await lead(ctx)) await sample(ctx);
    else follow(ctx);
  } catch (err) {
    // Without Redis no value can be trusted: expose none rather than stale ones.
    ctx.log.warn({ err }, 'queue sample failed');
    ctx.jobs.reset();
    ctx.leaderGauge.set(0);
  }
}

function schedule(ctx: SamplerContext, delayMs: number): void {
  if (ctx.stopped) return;
  ctx.timer = setTimeout(() => {
    ctx.running = tick(ctx).finally(() => schedule(ctx, ctx.options.intervalMs));
  }, delayMs);
  ctx.timer.unref();
}

async function stopSampler(ctx: SamplerContext): Promise<void> {
  if (ctx.stopped) return;
  ctx.stopped = true;
  clearTimeout(ctx.timer);
  await ctx.running;
  if (ctx.leader) {
    // Hand over at once instead of leaving the fleet blind until the lease lapses.
    await ctx.scripts.releaseLease([ctx.leaseKey], [ctx.options.id]).catch((err: unknown) => {
      ctx.log.warn({ err }, 'could not release the queue sampler lease');
    });
  }
  ctx.leader = false;
  ctx.jobs.reset();
  ctx.leaderGauge.set(0);
  const { registry } = ctx.options;
  registry.removeSingleMetric(QUEUE_JOBS_METRIC);
  registry.removeSingleMetric(QUEUE_SAMPLER_LEADER_METRIC);
  await Promise.all([...ctx.queues.values()].map((q) => q.close().catch(() => undefined)));
}
