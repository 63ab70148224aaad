// How a run's job is queued, the same for every producer (the API, the CLI, the client's `enqueueRun`):
// BullMQ's runtime settings, not part of the job's data, but agreed on by everyone who adds one.

/**
 * Finished run jobs BullMQ keeps at most, besides their age, when a caller sets their retention: as many
 * as the run index keeps by default (the schedulers' `RUN_RETENTION_COUNT`).
 */
export const RUN_JOB_RETENTION_COUNT = 100_000;
/**
 * Attempts of a run job whose checkpoints cannot be written (each resumes from the last good one). With
 * the backoff below the 39 retries wait 4.5 to 6 minutes in all: a run outlasts that much Redis trouble
 * (an outage, `maxmemory`, a cluster failover) and is recorded `failed` after it.
 */
export const RUN_JOB_ATTEMPTS = 40;
/** First backoff between such attempts, doubled after each up to `RUN_JOB_BACKOFF_MAX_MS` (1, 2, 4, 8, 10, 10 … s), in ms. */
export const RUN_JOB_BACKOFF_MS = 1000;
/** Longest backoff between such attempts, in ms: a run is back within seconds of Redis being back. */
export const RUN_JOB_BACKOFF_MAX_MS = 10_000;
/** Share of each such backoff taken off at random (0.25: 7.5–10 s for 10 s), so runs failed together come back spread out. */
export const RUN_JOB_BACKOFF_JITTER = 0.25;
/** BullMQ backoff type of run jobs: the schedulers' workers compute it (`runRetryDelayMs`). */
export const RUN_JOB_BACKOFF_TYPE = 'ar-run';

/**
 * The options a run's job is added with: a subset of BullMQ's `JobsOptions`, written out here so the wire
 * contract needs no BullMQ (it is assignable to `JobsOptions`).
 */
export interface RunJobOptions {
  jobId: string;
  attempts: number;
  backoff: { type: string };
  removeOnComplete?: { age: number; count: number };
  removeOnFail?: { age: number };
}

/**
 * Job options of a run: BullMQ's runtime settings, not part of the job's data (the wire contract). How
 * long finished run jobs are kept is the schedulers' `RUN_RETENTION_S` (their worker settings), the same
 * as the run's records, unless a caller sets `retentionS` for its own jobs.
 */
export function runJobOptions(runId: string, retentionS?: number): RunJobOptions {
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
          removeOnComplete: { age: retentionS, count: RUN_JOB_RETENTION_COUNT },
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
