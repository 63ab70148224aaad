import { DEFAULT_TENANT, foldStateRecord, resolveToolMessageRefs, type Keys } from '@agent-reach/protocol';
import type { RedisClient } from '@agent-reach/shared';

/**
 * A run's record as Redis holds it: its listing hash, its state (JSON, without messages), its messages
 * (one JSON each), the decisions people made (tool call id → JSON), its results hash (tool call id → the
 * result as recorded, JSON: what a call whose tool message compaction folded away returned) and its event
 * stream (id, JSON).
 * Archived as it is, so that reading it back goes through the very parser live records go through.
 */
export interface RawRunRecord {
  runId: string;
  meta: Record<string, string>;
  state: string;
  messages: string[];
  approvals: Record<string, string>;
  results: Record<string, string>;
  events: Array<[id: string, event: string]>;
}

/** Every key of a run; all on the run's slot. */
export function runKeys(keys: Keys, runId: string): string[] {
  return [
    keys.runMeta(runId),
    keys.runState(runId),
    keys.runMessages(runId),
    keys.runEvents(runId),
    keys.results(runId),
    keys.runApprovals(runId),
    keys.runCalls(runId),
    keys.runStarts(runId),
  ];
}

/** Reads a run's whole record in one transaction (one slot); undefined when Redis has none of it. */
export async function readRunRecord(
  redis: RedisClient,
  keys: Keys,
  runId: string,
): Promise<RawRunRecord | undefined> {
  const replies = (await redis
    .multi()
    .hgetall(keys.runMeta(runId))
    .get(keys.runState(runId))
    .lrange(keys.runMessages(runId), 0, -1)
    .hgetall(keys.runApprovals(runId))
    .xrange(keys.runEvents(runId), '-', '+')
    .hgetall(keys.results(runId))
    .exec()) as Array<[Error | null, unknown]> | null;
  if (!replies) return undefined;
  for (const [err] of replies) if (err) throw err;
  const [meta, state, messages, approvals, events, results] = replies.map(([, v]) => v) as [
    Record<string, string>,
    string | null,
    string[],
    Record<string, string>,
    Array<[string, string[]]>,
    Record<string, string>,
  ];
  if (!meta.runId && state === null) return undefined;
  return {
    runId,
    meta,
    state: state ?? '',
    // Tool messages stored as references to the results hash are archived whole.
    messages: resolveToolMessageRefs(messages, results),
    approvals,
    results,
    events: events.map(([id, fields]) => [id, fields[1] ?? 'null']),
  };
}

/** Whether the record is final: its last checkpoint ended the run (nothing will be written to it again). */
export const isFinalRecord = (r: RawRunRecord): boolean => r.meta.final === '1' && r.state !== '';

/** A row of `archived_runs`, as sent to PostgreSQL (JSON, one object per run). */
export interface ArchiveRow {
  run_id: string;
  finished_ms: number;
  created_ms: number;
  agent: string;
  status: string;
  reason: string | null;
  trace_id: string;
  tenant: string;
  session_id: string | null;
  workflow_id: string | null;
  config_version: number | null;
  tools: string[];
  error_kinds: string[];
  metadata: Record<string, string> | null;
  meta: Record<string, string>;
  state: unknown;
  messages: unknown[];
  approvals: Record<string, string>;
  results: Record<string, unknown>;
  events: Array<[string, unknown]>;
}

const list = (field: string | undefined) => (field ? field.split(',').filter(Boolean) : []);

function parseMetadata(json: string | undefined): Record<string, string> | null {
  if (!json) return null;
  try {
    const v = JSON.parse(json) as unknown;
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return null;
    return Object.fromEntries(Object.entries(v).filter(([, x]) => typeof x === 'string')) as Record<
      string,
      string
    >;
  } catch {
    return null;
  }
}

/**
 * The row of a final record. Its finishing time is the listing's last update, written by the final
 * checkpoint and never again: the same run always lands on the same partition and primary key, so a
 * repeated write is a no-op. Throws on a record whose JSON does not parse.
 */
export function toArchiveRow(r: RawRunRecord): ArchiveRow {
  const m = r.meta;
  const metadata = parseMetadata(m.metadata);
  const createdMs = Number(m.createdAt);
  const finishedMs = Number(m.updatedAt);
  return {
    run_id: r.runId,
    finished_ms: Number.isFinite(finishedMs) && finishedMs > 0 ? finishedMs : createdMs,
    created_ms: Number.isFinite(createdMs) ? createdMs : 0,
    agent: m.agent ?? '',
    status: m.status ?? '',
    reason: m.reason ?? null,
    trace_id: m.traceId ?? '',
    tenant: m.tenant || DEFAULT_TENANT,
    session_id: m.sessionId || null,
    workflow_id: metadata?.workflow_id ?? null,
    config_version:
      m.configVersion !== undefined && /^\d{1,9}$/.test(m.configVersion) ? Number(m.configVersion) : null,
    tools: list(m.tools),
    error_kinds: list(m.errorKinds),
    metadata,
    meta: m,
    // A final record's state is a base alone; folded all the same (see protocol's state-record.ts).
    state: foldStateRecord(r.state) as unknown,
    messages: r.messages.map((x) => JSON.parse(x) as unknown),
    approvals: r.approvals,
    results: Object.fromEntries(
      Object.entries(r.results).map(([id, json]) => [id, JSON.parse(json) as unknown]),
    ),
    events: r.events.map(([id, e]) => [id, JSON.parse(e) as unknown]),
  };
}

/** A row read back as the record Redis held (JSON re-serialized; key order aside, the same values). */
export function fromArchiveRow(row: {
  run_id: string;
  meta: Record<string, string>;
  state: unknown;
  messages: unknown[];
  approvals: Record<string, string>;
  /** Null in rows archived before results were (migration 2). */
  results?: Record<string, unknown> | null;
  events: Array<[string, unknown]>;
}): RawRunRecord {
  return {
    runId: row.run_id,
    meta: row.meta,
    state: JSON.stringify(row.state),
    messages: row.messages.map((x) => JSON.stringify(x)),
    approvals: row.approvals,
    results: Object.fromEntries(
      Object.entries(row.results ?? {}).map(([id, result]) => [id, JSON.stringify(result)]),
    ),
    events: row.events.map(([id, e]) => [id, JSON.stringify(e)]),
  };
}
