import { replyPrefix, serializeReply, type Keys } from '@agent-reach/protocol';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  duplicateRedis,
  isCluster,
  redisUnavailable,
  redisScripts,
  type RedisClient,
} from '@agent-reach/shared';

/**
 * The executor's own plain connection for results, with its scripts defined. Like every connection of the
 * process, it sends the commands the calls in flight issue together in one write (`coalesceWrites`), in
 * the order they were issued.
 */
export function resultWriter(connection: RedisClient): RedisClient {
  const writer = duplicateRedis(connection);
  redisScripts(writer);
  return writer;
}

/** What one call leaves behind: its result, and the full content under the result's ref when it was cut. */
export interface CallRecord {
  keys: Keys;
  runId: string;
  agent: string;
  sessionId: string | undefined;
  toolCallId: string;
  replyTo: string;
  resultJson: string;
  ref: string | undefined;
  full: string | undefined;
  resultsTtlS: number;
  refTtlS: number;
}

/**
 * Records the call's result unless it has one, then replies with the recorded one; resolves to the
 * recorded result when this one was a duplicate. In the order that keeps the record first: the full
 * content of a cut result (so a recorded ref never points at nothing; a duplicate's content is left to
 * expire), the result in the run's record, the reply. On a single Redis the last two are one script, one
 * round trip; in a cluster each step is on its own slot, one after the other.
 */
export async function recordResult(writer: RedisClient, r: CallRecord): Promise<string | null> {
  if (r.ref !== undefined && r.full !== undefined) {
    const ref = r.keys.ref(r.ref);
    await Promise.all([
      writer.hset(ref, { content: r.full, runId: r.runId, agent: r.agent, sessionId: r.sessionId ?? '' }),
      writer.expire(ref, r.refTtlS),
    ]);
  }
  if (!isCluster(writer)) {
    const duplicate = await redisScripts(writer).recordReply(
      [r.keys.results(r.runId), r.replyTo, r.keys.runCalls(r.runId)],
      [r.toolCallId, r.resultJson, r.resultsTtlS, replyPrefix(r.runId)],
    );
    return duplicate === r.resultJson ? null : duplicate;
  }
  const duplicate = await redisScripts(writer).recordResult(
    [r.keys.results(r.runId), r.keys.runCalls(r.runId)],
    [r.toolCallId, r.resultJson, r.resultsTtlS],
  );
  await pushReply(writer, r.replyTo, r.runId, duplicate ?? r.resultJson, r.resultsTtlS);
  // This result, written by an earlier try of this same write, is not a duplicate.
  return duplicate === r.resultJson ? null : duplicate;
}

/**
 * Retries a write of a call's outcome while Redis cannot serve it (out of memory, away, failing over),
 * until `deadlineMs` or until one of `signals` aborts; then rethrows. A tool that ran keeps its result instead of
 * failing its job, so it is not run again once Redis is back. The writes it retries are idempotent.
 */
export function untilWritten<T>(
  write: () => Promise<T>,
  deadlineMs: number,
  signals: readonly AbortSignal[],
  onRetry: (why: string) => void,
): Promise<T> {
  // The first try is the write itself, with no async frame around it: one on every call's path.
  return write().catch((err: unknown) => writeAgain(err, write, deadlineMs, signals, onRetry));
}

/** The tries after a first one failed with `first` (see `untilWritten`). */
async function writeAgain<T>(
  first: unknown,
  write: () => Promise<T>,
  deadlineMs: number,
  signals: readonly AbortSignal[],
  onRetry: (why: string) => void,
): Promise<T> {
  let err = first;
  for (let delayMs = 100; ; delayMs = Math.min(delayMs * 2, 2000)) {
    const why = redisUnavailable(err);
    if (!why || signals.some((s) => s.aborted) || Date.now() + delayMs > deadlineMs) throw err;
    onRetry(why);
    await sleep(delayMs);
    try {
      return await write();
    } catch (next) {
      err = next;
    }
  }
}

/** Pushes a result onto the dispatcher's reply list, which lives as long as results do. */
export async function pushReply(
  writer: RedisClient,
  replyTo: string,
  runId: string,
  resultJson: string,
  ttlS: number,
): Promise<void> {
  // Not a transaction: the writer's auto-pipeline sends both in one write with other calls' commands,
  // and the list's TTL is set again on the next push.
  await Promise.all([writer.lpush(replyTo, serializeReply(runId, resultJson)), writer.expire(replyTo, ttlS)]);
}
