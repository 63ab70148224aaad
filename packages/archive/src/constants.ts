// Every default of the run archive's outbox handling and reads, in one place.

/** Tries an archiver makes at a run PostgreSQL refuses (bad data, not an outage) before dead-lettering it. */
export const ARCHIVE_MAX_TRIES = 5;

/** Pause before a run the archive could not take yet is looked at again: doubled per try, in ms. */
export const ARCHIVE_RETRY_BASE_MS = 1000;

/** Longest pause between two looks at one outbox entry, in ms (5 minutes). */
export const ARCHIVE_RETRY_MAX_MS = 300_000;

/**
 * How long an outbox entry whose run has no record in Redis (not written yet, or expired) and no row in
 * the archive is kept looking, in ms: a run's record lives `RUN_RETENTION_S` (7 days by default) past its
 * end, so an entry missing its record this long names a run that will never be written.
 */
export const ARCHIVE_MISSING_RECORD_GIVE_UP_MS = 7 * 86_400_000;

/** `Retry-After` of a 503 for a read the run archive (PostgreSQL) could not answer, in s. */
export const ARCHIVE_UNAVAILABLE_RETRY_AFTER_S = 5;
