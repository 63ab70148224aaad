import type { Logger } from 'pino';

/**
 * Graceful shutdown of a process: on the first SIGTERM or SIGINT, tell a parent process (IPC, when there
 * is one), close, and exit 0 — or 1 if closing failed. Later signals are ignored while closing. With
 * `forceAfterMs`, a close that hangs (a Redis that does not answer a last command) ends the process with
 * exit code 1 after that long.
 */
export function exitOnSignals(
  close: () => Promise<void>,
  logger: Logger,
  options: { forceAfterMs?: number } = {},
): void {
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    process.send?.({ type: 'stopping', signal });
    if (options.forceAfterMs !== undefined) {
      setTimeout(() => {
        logger.error({ forceAfterMs: options.forceAfterMs }, 'shutdown did not finish in time; exiting');
        process.exit(1);
      }, options.forceAfterMs).unref();
    }
    close().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
