/** Defaults of schedules and inbound events, each with its unit in its name. */

/** BullMQ queue of schedule firings (one job scheduler per schedule). */
export const SCHEDULE_QUEUE = 'schedule-firings';
/** How late a firing may start after its time (a scheduler down, a queue behind) before it is skipped. */
export const DEFAULT_SCHEDULE_CATCHUP_WINDOW_MS = 5 * 60_000;
/** The shortest interval of an interval schedule. */
export const MIN_SCHEDULE_INTERVAL_MS = 1_000;
/** How many of its last firings a schedule records. */
export const SCHEDULE_FIRINGS_KEPT = 20;
/** How long a slot's firing is remembered as recorded, so that a firing job taken again records it once. */
export const SCHEDULE_FIRING_RECORD_TTL_S = 24 * 60 * 60;
/** How long a buffered firing (overlap policy `buffer_one`) waits before it looks at the previous run again. */
export const SCHEDULE_BUFFER_RECHECK_MS = 500;
/**
 * The most slots a late firing catches up at once: the slots BullMQ's job scheduler passed over while the
 * firing waited to be taken (within the catch-up window), newest kept.
 */
export const SCHEDULE_MISSED_FIRINGS_MAX = 100;
/** How many firing jobs one scheduler process handles at a time. */
export const SCHEDULE_WORKER_CONCURRENCY = 4;

/** Largest body of an inbound event, in bytes. */
export const DEFAULT_EVENT_MAX_BODY_BYTES = 256 * 1024;
/** How far an inbound event's signed timestamp may be from now, in seconds (Standard Webhooks: 5 min). */
export const EVENT_TIMESTAMP_TOLERANCE_S = 5 * 60;
/** How long an inbound event's id is remembered so that its repeat starts nothing, in seconds. */
export const DEFAULT_EVENT_DEDUP_TTL_S = 24 * 60 * 60;
