import { isFinalStatus, type RunEvent, type RunOutcome } from '@agent-reach/protocol';
import { duplicateRedis, type RedisClient } from '@agent-reach/shared';
import { streamIdAfter } from '../live-order.js';
import type { ApiContext } from '../options.js';

/** What a follower that sends live text among the run's events (the OpenAI door) asks of `followRun`. */
export interface FollowHooks {
  /** Called after each batch of events was passed on, but the last. */
  afterBatch?: () => void;
  /**
   * Handed, when following starts, a way to read the events stored by now and pass them on at once, in
   * turn with the follower's own reads: `first` runs just before the read.
   */
  catchUp?: (read: (first: () => void) => Promise<void>) => void;
}

/**
 * Follows a run's events from its first until `run_finished`, handing each to `onEvent` once, in order,
 * and returns the run's outcome; undefined when `signal` stopped the following first (the run goes on).
 * Reads block on a connection of their own, a heartbeat interval at a time; after a quiet interval a run
 * whose listing says it ended is read from its record (its events may have been trimmed).
 */
export async function followRun(
  ctx: ApiContext,
  runId: string,
  signal: AbortSignal,
  onEvent: (event: RunEvent) => Promise<void>,
  hooks: FollowHooks = {},
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
  let outcome: RunOutcome | undefined;
  // The follower's reads and catch-ups pass events on one at a time, each once.
  let tail: Promise<unknown> = Promise.resolve();
  const inTurn = (task: () => Promise<void>): Promise<void> => {
    const next = tail.then(task);
    tail = next.catch(() => undefined);
    return next;
  };
  const deliver = async (events: Array<{ id: string; event: RunEvent }>) => {
    for (const { id, event } of events) {
      if (outcome || !streamIdAfter(id, last)) continue;
      last = id;
      await onEvent(event);
      if (event.type === 'run_finished') {
        outcome = event.outcome;
        // A catch-up read the end: the blocked read has nothing more to wait for.
        reader.disconnect();
        return;
      }
    }
    if (events.length > 0) hooks.afterBatch?.();
  };
  hooks.catchUp?.((first) =>
    inTurn(async () => {
      if (outcome || signal.aborted) return;
      first();
      await deliver(await control.events(runId, last === '0-0' ? undefined : last));
    }),
  );
  try {
    while (!signal.aborted && !outcome) {
      const events = await control.store.waitEvents(runId, last, ctx.options.sseHeartbeatMs, reader);
      await inTurn(() => deliver(events));
      if (outcome) return outcome;
      if (events.length > 0) continue;
      const summary = await control.store.summary(runId);
      if (summary && isFinalStatus(summary.status) && (await control.events(runId, last)).length === 0) {
        const recorded = (await control.get(runId))?.state?.outcome;
        if (recorded) return recorded;
      }
    }
    return outcome;
  } catch (err) {
    if (outcome) return outcome;
    if (signal.aborted) return undefined;
    throw err;
  } finally {
    signal.removeEventListener('abort', stop);
    reader.disconnect();
  }
}
