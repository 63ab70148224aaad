import { parseArgs } from 'node:util';
import { constants, exitOnSignals, loadConfig } from '@agent-reach/shared';
import { startArchiverProcess } from './process.js';

const HELP = `agent-reach archiver: moves finished runs from Redis to PostgreSQL.

Usage: archiver

Environment: DATABASE_URL (required), REDIS_URL, AR_KEY_PREFIX, ARCHIVED_RUN_RETENTION_S,
ARCHIVE_RETENTION_DAYS, ARCHIVE_BATCH_SIZE, ARCHIVE_VISIBILITY_TIMEOUT_MS, ARCHIVER_METRICS_PORT,
METRICS_HOST, LOG_LEVEL.
Several archivers may run at once; any may be killed at any point.
Exit codes: 0 after a clean shutdown, 1 on bad configuration or a failed start.`;

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { help: { type: 'boolean', short: 'h' } } });
  if (values.help) {
    console.log(HELP);
    return;
  }
  const config = loadConfig({ ...process.env });
  const archiver = await startArchiverProcess(config);
  exitOnSignals(archiver.close, archiver.logger, { forceAfterMs: constants.SHUTDOWN_BACKSTOP_MS + 5000 });
  process.send?.({ type: 'ready', metricsPort: archiver.metricsPort });
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
