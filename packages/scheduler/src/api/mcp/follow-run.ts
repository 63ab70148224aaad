import { isFinalStatus, type RunEvent, type RunOutcome } from '@agent-reach/protocol';
import { duplicateRedis, type RedisClient } from '@agent-reach/shared';
import type { ApiContext } from '../options.js';

/**
 * Follows a run's events from its first until `run_finished`, handing each to `onEvent` and calling
 * `afterBatch` after each batch read but the last, and returns the run's outcome; undefined when
 * `signal` stopped the following first (the run goes on). Reads block
 * on a connection of their own, a heartbeat interval at a time; after a quiet interval a run whose
 * listing says it ended is read from its record (its events may have been trimmed).
 */
export async function followRun(
  ctx: ApiContext,
  runId: string,
  signal: AbortSignal,
  onEvent: (event: RunEvent) => Promise<void>,
  afterBatch: () => void = () => undefined,
): Promise<RunOutcome | undefined> {
  const { control } = ctx.deps;
  const reader: RedisClient = duplicateRedis(ctx.deps.redis, {
    connectionName: `${ctx.deps.keys.prefix}-api-mcp`,
    enableOfflineQueue: true,
    maxRetriesPerRequest: 1,
    // Its XREAD blocks for a heartbeat interval: the API connection's command timeout is not for it.
    commandTimeout: undefined,
    lazyConnect: false,
  });
  reader.on('error', (err: unknown) => ctx.log.debug({ err, runId }, 'mcp call connection error'));
  // Cuts a blocking XREAD short: its promise rejects and the loop ends.
  const stop = () => reader.disconnect();
  signal.addEventListener('abort', stop, { once: true });
  let last = '0-0';
  try {
    while (!signal.aborted) {
      const events = await control.store.waitEvents(runId, last, ctx.options.sseHeartbeatMs, reader);
      for (const { id, event } of events) {
        last = id;
        await onEvent(event);
        if (event.type === 'run_finished') return event.outcome;
      }
      if (events.length > 0) {
        afterBatch();
        continue;
      }
      const summary = await control.store.summary(runId);
      if (summary && isFinalStatus(summary.status) && (await control.events(runId, last)).length === 0) {
        const outcome = (await control.get(runId))?.state?.outcome;
        if (outcome) return outcome;
      }
    }
    return undefined;
  } catch (err) {
    if (signal.aborted) return undefined;
    throw err;
  } finally {
    signal.removeEventListener('abort', stop);
    reader.disconnect();
  }
}
