import type { Redis } from 'ioredis';
import { replyPrefix, type Keys } from '@agent-reach/protocol';
import { VERIFY_JOB_LUA, type VerifyingClient } from './verify-job.js';

/**
 * Records a result and replies in one script call (a script is one command for the client, where a MULTI
 * is six). The first recorded result of a call wins (HSETNX): when one is already there, the new one is
 * not stored (nor its full content) and the reply carries the recorded one, so the waiting dispatcher
 * gets what the record says. Returns the recorded result when it was a duplicate, else nil.
 * KEYS: results hash, reply list, ref key (the results hash again when the result was not cut).
 * ARGV: tool call id, result JSON, reply prefix (the protocol's `replyPrefix`), TTL of results and replies,
 * the full content ('' when not cut), its TTL, and its owner: run id, agent, session id ('' for none).
 */
const RECORD_RESULT_LUA = `
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then
  local recorded = redis.call('HGET', KEYS[1], ARGV[1])
  redis.call('LPUSH', KEYS[2], ARGV[3] .. recorded .. '}')
  redis.call('EXPIRE', KEYS[2], ARGV[4])
  return recorded
end
redis.call('EXPIRE', KEYS[1], ARGV[4])
if ARGV[5] ~= '' then
  redis.call('HSET', KEYS[3], 'content', ARGV[5], 'runId', ARGV[7], 'agent', ARGV[8], 'sessionId', ARGV[9])
  redis.call('EXPIRE', KEYS[3], ARGV[6])
end
redis.call('LPUSH', KEYS[2], ARGV[3] .. ARGV[2] .. '}')
redis.call('EXPIRE', KEYS[2], ARGV[4])
return false
`;

/** The connection results are written on, with the executor's scripts defined. */
export type ResultWriter = VerifyingClient & {
  agentReachResult(...keysAndArgs: Array<string | number>): Promise<string | null>;
};

/** Defines the executor's scripts on its own plain connection. */
export function resultWriter(connection: Redis): ResultWriter {
  const writer = connection.duplicate() as ResultWriter;
  writer.defineCommand('agentReachResult', { numberOfKeys: 3, lua: RECORD_RESULT_LUA });
  writer.defineCommand('agentReachVerifyJob', { numberOfKeys: 4, lua: VERIFY_JOB_LUA });
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
export function recordResult(writer: ResultWriter, r: CallRecord): Promise<string | null> {
  const resultsKey = r.keys.results(r.runId);
  const cut = r.ref !== undefined && r.full !== undefined;
  return writer.agentReachResult(
    resultsKey,
    r.replyTo,
    cut ? r.keys.ref(r.ref as string) : resultsKey,
    r.toolCallId,
    r.resultJson,
    replyPrefix(r.runId),
    r.resultsTtlS,
    cut ? (r.full as string) : '',
    r.refTtlS,
    r.runId,
    r.agent,
    r.sessionId ?? '',
  );
}
