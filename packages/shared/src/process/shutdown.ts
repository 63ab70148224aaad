import type { Logger } from 'pino';
import { waitAtMost } from './timed-wait.js';

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

/** How a worker's close within its grace period went (see {@link closeWithinGrace}). */
export type GracefulClose = 'closed' | 'handed_back' | 'unsettled';

/**
 * The worker lifecycle at shutdown: stop taking jobs, wait out the grace period, hand the rest back.
 * `graceful` is the worker's own close (it stops taking jobs and resolves true once the jobs in flight
 * finish, false when it failed). When it is not true within `graceMs`, `handBack` returns what is still
 * in flight to its queue, and the close is given `settleMs()` more. Returns `closed` when the graceful
 * close made it in time, `handed_back` when it settled after the hand-back, `unsettled` when it did not.
 */
export async function closeWithinGrace(options: {
  graceful: Promise<boolean>;
  graceMs: number;
  handBack: () => Promise<unknown>;
  settleMs: () => number;
}): Promise<GracefulClose> {
  if ((await waitAtMost(options.graceful, options.graceMs)) === true) return 'closed';
  await options.handBack();
  return (await waitAtMost(options.graceful, options.settleMs())) === true ? 'handed_back' : 'unsettled';
}
