import { DelayedError, Worker, type Job } from 'bullmq';
import type { Keys } from '@agent-reach/protocol';
import type { Logger, RedisClient } from '@agent-reach/shared';
import {
  SCHEDULE_BUFFER_RECHECK_MS,
  SCHEDULE_MISSED_FIRINGS_MAX,
  SCHEDULE_QUEUE,
  SCHEDULE_WORKER_CONCURRENCY,
} from './constants.js';
import { slotsBetween, type Schedule, type ScheduleFiring } from './schedule-spec.js';
import type { FiringJob, ScheduleStore } from './schedule-store.js';
import type { TriggerMetrics } from './trigger-metrics.js';

/** What a firing needs from the door that starts runs. */
export interface ScheduleFiringDeps {
  store: ScheduleStore;
  /**
   * Starts the run (or workflow) of a firing as `POST /v1/runs` (`POST /v1/workflows`) would for the schedule's key, its id derived from
   * `firingKey` (a repeat starts nothing new); the run's id.
   */
  startRun(schedule: Schedule, scheduledAt: number, firingKey: string): Promise<string>;
  /** True while the run (or workflow) a firing started has not ended. */
  isRunActive(id: string): Promise<boolean>;
  logger: Logger;
  metrics?: TriggerMetrics;
  /** How long a firing job is locked, and how often stalled ones are looked for (ms; BullMQ's default). */
  lockDurationMs?: number;
  stalledIntervalMs?: number;
}

/** A worker on `schedule-firings`: each job is one firing of one schedule. */
export interface ScheduleWorker {
  readonly worker: Worker<FiringJob>;
  close(): Promise<void>;
}

/**
 * Starts a worker on `schedule-firings`. `connection` must allow blocking commands (no command timeout);
 * every scheduler process may run one: BullMQ hands each firing job to one of them.
 */
export function createScheduleWorker(
  connection: RedisClient,
  keys: Keys,
  deps: ScheduleFiringDeps,
): ScheduleWorker {
  const log = deps.logger.child({ component: 'schedules' });
  const worker = new Worker<FiringJob>(
    SCHEDULE_QUEUE,
    (job, token) => fire({ ...deps, logger: log }, job, token),
    {
      connection,
      prefix: keys.queuePrefix(SCHEDULE_QUEUE),
      concurrency: SCHEDULE_WORKER_CONCURRENCY,
      ...(deps.lockDurationMs !== undefined ? { lockDuration: deps.lockDurationMs } : {}),
      ...(deps.stalledIntervalMs !== undefined ? { stalledInterval: deps.stalledIntervalMs } : {}),
    },
  );
  worker.on('error', (err) => log.warn({ err }, 'schedule worker error'));
  return { worker, close: () => worker.close() };
}

/** The slot of a job of the schedule's job scheduler, from its id `repeat:<schedule id>:<epoch ms>`. */
function schedulerSlotOf(job: Job<FiringJob>): number | undefined {
  const prefix = `repeat:${job.data.schedule_id}:`;
  const id = String(job.id);
  const slot = id.startsWith(prefix) ? Number(id.slice(prefix.length)) : NaN;
  return Number.isSafeInteger(slot) ? slot : undefined;
}

/**
 * The time a firing job stands for: a trigger's, a passed-over slot's, else the job scheduler's slot in
 * the job's id. Neither `prevMillis` (unset for an interval) nor the job's timestamp (the time the
 * previous firing was taken) is the slot.
 */
function scheduledAtOf(job: Job<FiringJob>): number {
  return job.data.manual_at ?? job.data.slot_at ?? schedulerSlotOf(job) ?? job.timestamp;
}

/**
 * Adds a firing job for each slot the job scheduler passed over while this firing waited to be taken
 * (BullMQ places the next slot after the time a firing is taken): those within the catch-up window, the
 * newest {@link SCHEDULE_MISSED_FIRINGS_MAX}. Only a job of the job scheduler does, before the next
 * slot it placed.
 */
async function addPassedOver(deps: ScheduleFiringDeps, schedule: Schedule, job: Job<FiringJob>) {
  const slot = schedulerSlotOf(job);
  if (slot === undefined) return;
  const next = await deps.store.next(schedule.id);
  if (next === undefined) return;
  const missed = slotsBetween(schedule, slot, next, Date.now() - schedule.catchup_window_ms).slice(
    -SCHEDULE_MISSED_FIRINGS_MAX,
  );
  if (missed.length === 0) return;
  deps.logger.info(
    { scheduleId: schedule.id, scheduledAt: slot, missed },
    'schedule firing taken late: the slots passed over fire now',
  );
  await deps.store.addMissed(schedule.id, missed);
}

/**
 * One firing: nothing for a schedule deleted or paused since; skipped when later than the catch-up
 * window; by the overlap policy while the last firing's run goes on (skipped; waited for by one buffered
 * firing; or started anyway); else the run is started and the firing recorded.
 */
async function fire(deps: ScheduleFiringDeps, job: Job<FiringJob>, token: string | undefined): Promise<void> {
  const { store, logger } = deps;
  const id = job.data.schedule_id;
  const schedule = await store.get(id);
  // A pause stops firings from being taken, not one taken before it (its scheduler died, or its try
  // failed): that one may have started its run already, which it goes on to record.
  const taken = job.stalledCounter > 0 || job.attemptsMade > 0;
  if (!schedule || (schedule.paused && job.data.manual_at === undefined && !taken)) return;
  const scheduledAt = scheduledAtOf(job);
  const jobId = String(job.id);
  const record = (firing: Omit<ScheduleFiring, 'scheduled_at' | 'fired_at'>) => {
    deps.metrics?.firings.inc({ outcome: firing.outcome });
    return store.recordFiring(id, { scheduled_at: scheduledAt, fired_at: Date.now(), ...firing });
  };
  // A passed-over slot its job scheduler's job fired in the meantime is done.
  if (job.data.slot_at !== undefined && (await store.wasRecorded(id, scheduledAt))) return;
  // The buffered firing waits for the last run, however long: the catch-up window is not its limit.
  const buffered = schedule.overlap === 'buffer_one' && (await store.holdsBuffer(id, jobId));
  if (!buffered) await addPassedOver(deps, schedule, job);
  if (
    !buffered &&
    job.data.manual_at === undefined &&
    Date.now() - scheduledAt > schedule.catchup_window_ms
  ) {
    logger.info({ scheduleId: id, scheduledAt }, 'schedule firing later than its catch-up window skipped');
    return record({ outcome: 'skipped_late' });
  }
  if (schedule.overlap !== 'allow_all') {
    const last = await store.lastRun(id);
    if (last && (await deps.isRunActive(last))) {
      if (schedule.overlap === 'buffer_one' && (await store.claimBuffer(id, jobId))) {
        await job.moveToDelayed(Date.now() + SCHEDULE_BUFFER_RECHECK_MS, token);
        throw new DelayedError();
      }
      logger.info(
        { scheduleId: id, scheduledAt, runId: last },
        'schedule firing skipped: its last run goes on',
      );
      return record({ outcome: 'skipped_overlap' });
    }
  }
  try {
    const runId = await deps.startRun(schedule, scheduledAt, `schedule:${id}:${scheduledAt}`);
    await record({ outcome: 'started', ...(schedule.workflow ? { workflow_id: runId } : { run_id: runId }) });
    logger.info({ scheduleId: id, scheduledAt, runId }, 'schedule fired');
  } catch (err) {
    const last = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
    logger.warn({ err, scheduleId: id, scheduledAt, last }, 'schedule firing failed');
    if (last) await record({ outcome: 'failed', error: (err as Error).message });
    throw err;
  } finally {
    if (schedule.overlap === 'buffer_one') await store.releaseBuffer(id, jobId);
  }
}
