import { DelayedError, Worker, type Job } from 'bullmq';
import type { Keys } from '@agent-reach/protocol';
import type { Logger, RedisClient } from '@agent-reach/shared';
import { SCHEDULE_BUFFER_RECHECK_MS, SCHEDULE_QUEUE, SCHEDULE_WORKER_CONCURRENCY } from './constants.js';
import type { Schedule, ScheduleFiring } from './schedule-spec.js';
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

/** The time a firing job stands for: a trigger's, else the job scheduler's slot for it. */
function scheduledAtOf(job: Job<FiringJob>): number {
  return job.data.manual_at ?? job.opts.prevMillis ?? job.timestamp;
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
  if (!schedule || (schedule.paused && job.data.manual_at === undefined)) return;
  const scheduledAt = scheduledAtOf(job);
  const jobId = String(job.id);
  const record = (firing: Omit<ScheduleFiring, 'scheduled_at' | 'fired_at'>) => {
    deps.metrics?.firings.inc({ outcome: firing.outcome });
    return store.recordFiring(id, { scheduled_at: scheduledAt, fired_at: Date.now(), ...firing });
  };
  // The buffered firing waits for the last run, however long: the catch-up window is not its limit.
  const buffered = schedule.overlap === 'buffer_one' && (await store.holdsBuffer(id, jobId));
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
