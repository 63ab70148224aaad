import { QueueKeys, type JobsOptions } from 'bullmq';
import { DEFAULT_RUN_RETENTION_COUNT, RUN_JOB_ATTEMPTS, RUN_JOB_BACKOFF_MS } from './constants.js';

/**
 * Data of a job on the `agent-runs` queue: what any service (in any language, with its own BullMQ
 * client) adds to start a run. The job id must be the run id.
 */
export interface RunJobData {
  /** Wire version; 1. */
  v: 1;
  runId: string;
  agent: string;
  input: string;
  sessionId?: string;
  /** The model to use instead of the scheduler's default. */
  model?: string;
  traceId?: string;
  metadata?: Record<string, string>;
}

/** Run ids (and so job ids): no `:`, which BullMQ refuses in custom ids. */
export const RUN_ID_PATTERN = /^[A-Za-z0-9_.-]{1,128}$/;

/**
 * Names BullMQ gives its own keys beside the jobs of a queue (`events`, `meta`, `wait`, …): a job id
 * equal to one would read the wrong kind of key, so no run may have one.
 */
export const RESERVED_RUN_IDS: ReadonlySet<string> = new Set(
  Object.keys(new QueueKeys().getKeys('q')).filter(Boolean),
);

export function isValidRunId(runId: string): boolean {
  return RUN_ID_PATTERN.test(runId) && !RESERVED_RUN_IDS.has(runId) && !PROTOTYPE_KEYS.has(runId);
}

/**
 * Names that change an object's prototype (or reach it) when used as a plain object's key. No id may be
 * one: ids key records, and a record keyed by `__proto__` once polluted `Object.prototype` process-wide.
 */
export const PROTOTYPE_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

/** Tool call ids as the platform records them (the loop rewrites any other id a model sends). */
export const TOOL_CALL_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** Session ids: the same alphabet as run ids (they name Redis keys). */
export const SESSION_ID_PATTERN = RUN_ID_PATTERN;

/** Whether `id` matches `pattern` and is not a prototype key: the check every door applies to ids. */
export function isSafeId(id: unknown, pattern: RegExp): id is string {
  return typeof id === 'string' && pattern.test(id) && !PROTOTYPE_KEYS.has(id);
}

/**
 * Job options of a run. How long finished run jobs are kept is the schedulers' `RUN_RETENTION_S` (their
 * worker settings), the same as the run's records, unless a caller sets `retentionS` for its own jobs.
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
