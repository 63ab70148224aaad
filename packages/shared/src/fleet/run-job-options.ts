import type { JobsOptions } from 'bullmq';
import {
  DEFAULT_RUN_RETENTION_COUNT,
  RUN_JOB_ATTEMPTS,
  RUN_JOB_BACKOFF_JITTER,
  RUN_JOB_BACKOFF_MAX_MS,
  RUN_JOB_BACKOFF_MS,
  RUN_JOB_BACKOFF_TYPE,
} from '../constants.js';

/**
 * Job options of a run: BullMQ's runtime settings, not part of the job's data (the wire contract). How
 * long finished run jobs are kept is the schedulers' `RUN_RETENTION_S` (their worker settings), the same
 * as the run's records, unless a caller sets `retentionS` for its own jobs.
 */
export function runJobOptions(runId: string, retentionS?: number): JobsOptions {
  return {
    jobId: runId,
    // A crashed scheduler is covered by stalled-job recovery and every other failure ends the run with
    // an outcome; attempts are for checkpoints that cannot be written (Redis away or out of memory): the
    // run resumes from its last good checkpoint after a backoff the schedulers compute (`runRetryDelayMs`).
    attempts: RUN_JOB_ATTEMPTS,
    backoff: { type: RUN_JOB_BACKOFF_TYPE },
    ...(retentionS === undefined
      ? {}
      : {
          removeOnComplete: { age: retentionS, count: DEFAULT_RUN_RETENTION_COUNT },
          removeOnFail: { age: retentionS },
        }),
  };
}

/**
 * The backoff before a run job's next attempt, in ms, after `attemptsMade` failed ones (1-based, as
 * BullMQ counts them): doubling from `RUN_JOB_BACKOFF_MS`, capped at `RUN_JOB_BACKOFF_MAX_MS`, minus up
 * to `RUN_JOB_BACKOFF_JITTER` of it at random. The schedulers' run workers give it to BullMQ as their
 * backoff strategy (`settings.backoffStrategy`) for jobs of type `RUN_JOB_BACKOFF_TYPE`; jobs queued
 * with `{ type: 'exponential' }` keep BullMQ's own.
 */
export function runRetryDelayMs(attemptsMade: number, random: () => number = Math.random): number {
  const exponent = Math.min(Math.max(attemptsMade, 1) - 1, 30);
  const ceiling = Math.min(RUN_JOB_BACKOFF_MS * 2 ** exponent, RUN_JOB_BACKOFF_MAX_MS);
  return Math.round(ceiling * (1 - RUN_JOB_BACKOFF_JITTER * random()));
}
