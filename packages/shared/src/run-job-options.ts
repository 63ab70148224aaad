import type { JobsOptions } from 'bullmq';
import { DEFAULT_RUN_RETENTION_COUNT, RUN_JOB_ATTEMPTS, RUN_JOB_BACKOFF_MS } from './constants.js';

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
    // run resumes from its last good checkpoint after a backoff.
    attempts: RUN_JOB_ATTEMPTS,
    backoff: { type: 'exponential', delay: RUN_JOB_BACKOFF_MS },
    ...(retentionS === undefined
      ? {}
      : {
          removeOnComplete: { age: retentionS, count: DEFAULT_RUN_RETENTION_COUNT },
          removeOnFail: { age: retentionS },
        }),
  };
}
