import { Queue } from 'bullmq';
import type { Keys } from '@agent-reach/protocol';
import type { RedisClient } from '@agent-reach/shared';
import { SCHEDULE_FIRING_RECORD_TTL_S, SCHEDULE_FIRINGS_KEPT, SCHEDULE_QUEUE } from './constants.js';
import { nextFiring, type Schedule, type ScheduleFiring } from './schedule-spec.js';

/** The data of a firing job: which schedule, and for a manual trigger, the time it stands for. */
export interface FiringJob {
  schedule_id: string;
  /** Set by `trigger`: a firing out of the schedule's timing, at this time (epoch ms). */
  manual_at?: number;
  /** Set for a slot the job scheduler passed over while a late firing waited (epoch ms): see `addMissed`. */
  slot_at?: number;
}

/** How many times a firing job is tried when starting its run fails for a passing reason (Redis away). */
const FIRING_ATTEMPTS = 3;
/** Marks a slot recorded (KEYS[1]) and, the first time only, records its firing and its run. */
const RECORD_FIRING = `
if not redis.call('SET', KEYS[1], '1', 'EX', ARGV[1], 'NX') then return 0 end
redis.call('LPUSH', KEYS[2], ARGV[2])
redis.call('LTRIM', KEYS[2], 0, tonumber(ARGV[3]) - 1)
if ARGV[4] ~= '' then redis.call('SET', KEYS[3], ARGV[4]) end
return 1`;
const FIRING_JOB_OPTS = { attempts: FIRING_ATTEMPTS, removeOnComplete: 100, removeOnFail: 100 };

/**
 * Schedules in Redis (a record per schedule, an index by creation time, the last firings of each) and
 * their BullMQ job schedulers on the `schedule-firings` queue: one job scheduler per schedule, its id the
 * schedule's, so that however many scheduler processes run, each firing is one job
 * (`repeat:<schedule id>:<epoch ms>`).
 */
export class ScheduleStore {
  readonly queue: Queue<FiringJob>;
  readonly #redis: RedisClient;
  readonly #prefix: string;

  constructor(redis: RedisClient, keys: Keys) {
    this.#redis = redis;
    // One slot for every schedule key (a cluster runs their transactions).
    this.#prefix = `${keys.prefix}:{schedules}`;
    this.queue = new Queue<FiringJob>(SCHEDULE_QUEUE, {
      connection: redis,
      prefix: keys.queuePrefix(SCHEDULE_QUEUE),
    });
  }

  #key(id: string, part = 'record'): string {
    return `${this.#prefix}:${id}:${part}`;
  }

  /** Stores a new schedule and starts its timing. */
  async create(schedule: Schedule): Promise<void> {
    await this.#redis
      .multi()
      .set(this.#key(schedule.id), JSON.stringify(schedule))
      .zadd(`${this.#prefix}:index`, schedule.created_at, schedule.id)
      .exec();
    await this.#arm(schedule);
  }

  async get(id: string): Promise<Schedule | undefined> {
    const text = await this.#redis.get(this.#key(id));
    return text ? (JSON.parse(text) as Schedule) : undefined;
  }

  /** Every schedule, oldest first. */
  async list(): Promise<Schedule[]> {
    const ids = await this.#redis.zrange(`${this.#prefix}:index`, 0, -1);
    if (ids.length === 0) return [];
    const texts = await this.#redis.mget(ids.map((id) => this.#key(id)));
    return texts.flatMap((t) => (t ? [JSON.parse(t) as Schedule] : []));
  }

  /** Pauses (no firing until resumed) or resumes a schedule; the updated schedule. */
  async setPaused(schedule: Schedule, paused: boolean): Promise<Schedule> {
    const next = { ...schedule, paused };
    await this.#redis.set(this.#key(schedule.id), JSON.stringify(next));
    if (paused) await this.queue.removeJobScheduler(schedule.id);
    else await this.#arm(next);
    return next;
  }

  /** Deletes a schedule, its timing and its firings; the runs it started stay. */
  async delete(id: string): Promise<void> {
    await this.queue.removeJobScheduler(id);
    await this.#redis
      .multi()
      .del(this.#key(id), this.#key(id, 'firings'), this.#key(id, 'last-run'), this.#key(id, 'buffered'))
      .zrem(`${this.#prefix}:index`, id)
      .exec();
  }

  /** A firing now, out of the schedule's timing (its job id derives from the schedule and the time). */
  async trigger(id: string, at: number): Promise<void> {
    await this.queue.add(
      'fire',
      { schedule_id: id, manual_at: at },
      { jobId: `manual:${id}:${at}`, ...FIRING_JOB_OPTS },
    );
  }

  /**
   * A firing job for each slot the job scheduler passed over: BullMQ places the next slot after the time
   * a firing is taken, so a firing taken more than an interval late leaves the slots between without a
   * job. Each job's id derives from the schedule and the slot, so that every scheduler that notices adds
   * one job.
   */
  async addMissed(id: string, slots: readonly number[]): Promise<void> {
    if (slots.length === 0) return;
    await this.queue.addBulk(
      slots.map((at) => ({
        name: 'fire',
        data: { schedule_id: id, slot_at: at },
        opts: { jobId: `missed:${id}:${at}`, ...FIRING_JOB_OPTS },
      })),
    );
  }

  /** When the schedule fires next, as its job scheduler says; undefined when paused or gone. */
  async next(id: string): Promise<number | undefined> {
    const scheduler = await this.queue.getJobScheduler(id);
    return scheduler?.next ?? undefined;
  }

  /**
   * A schedule as the API and the CLI show it: without its key's id, with its next firing (none while
   * paused) and its last firings, newest first.
   */
  async view(s: Schedule) {
    const { id, key_id: _keyId, ...rest } = s;
    const next = s.paused ? undefined : ((await this.next(id)) ?? nextFiring(s, Date.now()));
    return {
      schedule_id: id,
      ...rest,
      ...(next !== undefined ? { next_firing_at: next } : {}),
      firings: await this.firings(id),
    };
  }

  /**
   * Records what became of a firing (the last {@link SCHEDULE_FIRINGS_KEPT} are kept), once per slot: a
   * firing job taken again (its scheduler died while it ran, or a command timed out) records nothing
   * more. The mark and the record are one script: a mark without its record would lose the firing.
   */
  async recordFiring(id: string, firing: ScheduleFiring): Promise<void> {
    await this.#redis.eval(
      RECORD_FIRING,
      3,
      this.#key(id, `recorded:${firing.scheduled_at}`),
      this.#key(id, 'firings'),
      this.#key(id, 'last-run'),
      SCHEDULE_FIRING_RECORD_TTL_S,
      JSON.stringify(firing),
      SCHEDULE_FIRINGS_KEPT,
      firing.run_id ?? firing.workflow_id ?? '',
    );
  }

  /** True once a firing of the slot is recorded. */
  async wasRecorded(id: string, scheduledAt: number): Promise<boolean> {
    return (await this.#redis.exists(this.#key(id, `recorded:${scheduledAt}`))) === 1;
  }

  /** The last firings, newest first. */
  async firings(id: string): Promise<ScheduleFiring[]> {
    const texts = await this.#redis.lrange(this.#key(id, 'firings'), 0, -1);
    return texts.map((t) => JSON.parse(t) as ScheduleFiring);
  }

  /** The run the schedule's last started firing started. */
  lastRun(id: string): Promise<string | null> {
    return this.#redis.get(this.#key(id, 'last-run'));
  }

  /**
   * Claims the schedule's one buffered firing (overlap policy `buffer_one`) for `jobId`: true when this
   * job holds it (now or already), false when another firing does.
   */
  async claimBuffer(id: string, jobId: string): Promise<boolean> {
    const key = this.#key(id, 'buffered');
    await this.#redis.set(key, jobId, 'NX');
    return (await this.#redis.get(key)) === jobId;
  }

  /** True when `jobId` is the schedule's buffered firing. */
  async holdsBuffer(id: string, jobId: string): Promise<boolean> {
    return (await this.#redis.get(this.#key(id, 'buffered'))) === jobId;
  }

  async releaseBuffer(id: string, jobId: string): Promise<void> {
    const key = this.#key(id, 'buffered');
    if ((await this.#redis.get(key)) === jobId) await this.#redis.del(key);
  }

  /** (Re)starts a schedule's job scheduler: its cron in its time zone, or its interval. */
  async #arm(schedule: Schedule): Promise<void> {
    await this.queue.upsertJobScheduler(
      schedule.id,
      schedule.every_ms !== undefined
        ? { every: schedule.every_ms }
        : { pattern: schedule.cron, tz: schedule.timezone ?? 'UTC' },
      {
        name: 'fire',
        data: { schedule_id: schedule.id },
        opts: FIRING_JOB_OPTS,
      },
    );
  }

  close(): Promise<void> {
    return this.queue.close();
  }
}
