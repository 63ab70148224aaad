import type { Redis } from 'ioredis';
import { replyPrefix, type Keys } from '@agent-reach/protocol';
import { redisScripts } from '@agent-reach/shared';

/** The executor's own plain connection for results, with its scripts defined. */
export function resultWriter(connection: Redis): Redis {
  const writer = connection.duplicate();
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

/** Records the call's result unless it has one; resolves to the recorded result when it was a duplicate. */
export function recordResult(writer: Redis, r: CallRecord): Promise<string | null> {
  const resultsKey = r.keys.results(r.runId);
  const cut = r.ref !== undefined && r.full !== undefined;
  return redisScripts(writer).recordResult(
    [resultsKey, r.replyTo, cut ? r.keys.ref(r.ref as string) : resultsKey],
    [
      r.toolCallId,
      r.resultJson,
      replyPrefix(r.runId),
      r.resultsTtlS,
      cut ? (r.full as string) : '',
      r.refTtlS,
      r.runId,
      r.agent,
      r.sessionId ?? '',
    ],
  );
}
