export {
  createDatabase,
  createPool,
  migrate,
  MIGRATIONS_DIR,
  MIGRATIONS_TABLE,
  type OwnDatabase,
  type Pool,
} from './db.js';
export { Outbox, outboxKey, deadLetterKey, triesKey, OUTBOX_GRACE_MS, type DeadLetter } from './outbox.js';
export {
  readRunRecord,
  runKeys,
  isFinalRecord,
  toArchiveRow,
  fromArchiveRow,
  type RawRunRecord,
  type ArchiveRow,
} from './run-record.js';
export { ArchiveStore, databaseUnavailable, searchQuery, storableJson, utcDay } from './archive-store.js';
export { startArchiver, createArchiveMetrics, type Archiver, type ArchiverOptions } from './archiver.js';
export { startArchiverProcess, type ArchiverProcess } from './process.js';
export {
  ARCHIVE_MAX_TRIES,
  ARCHIVE_MISSING_RECORD_GIVE_UP_MS,
  ARCHIVE_UNAVAILABLE_RETRY_AFTER_S,
} from './constants.js';
