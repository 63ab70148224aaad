export {
  createDatabase,
  createPool,
  migrate,
  MIGRATIONS_DIR,
  MIGRATIONS_TABLE,
  type OwnDatabase,
  type Pool,
} from './db.js';
export { Outbox, outboxKey, OUTBOX_GRACE_MS } from './outbox.js';
export {
  readRunRecord,
  runKeys,
  isFinalRecord,
  toArchiveRow,
  fromArchiveRow,
  type RawRunRecord,
  type ArchiveRow,
} from './run-record.js';
export { ArchiveStore, searchQuery, utcDay, withoutNul } from './archive-store.js';
export { startArchiver, createArchiveMetrics, type Archiver, type ArchiverOptions } from './archiver.js';
export { startArchiverProcess, type ArchiverProcess } from './process.js';
