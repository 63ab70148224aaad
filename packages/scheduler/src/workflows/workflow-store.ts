import type { Keys, NodeResult, WorkflowEvent, WorkflowOutcome, WorkflowStatus } from '@agent-reach/protocol';
import { constants, redisScripts, type RedisScripts, type WorkflowSpec } from '@agent-reach/shared';
import type { RedisClient } from '@agent-reach/shared';

/** A node whose run was queued: once, under `run_id`, with the input rendered then. */
export interface NodeStart {
  run_id: string;
  /** Epoch ms when the run was queued. */
  at: number;
  input: string;
  /** Dependencies whose outputs were low-confidence when this node's input was rendered. */
  low_confidence_inputs: string[];
}

/** A workflow's record: its definition as it was when it started, its input, and each node's progress. */
export interface WorkflowRecord {
  workflowId: string;
  name: string;
  input: string;
  spec: WorkflowSpec;
  /** The configuration version the workflow started under (absent on records of earlier releases). */
  configVersion?: number;
  traceId: string;
  metadata?: Record<string, string>;
  /** The tenant the workflow and its node runs belong to; absent: `default`. */
  tenant?: string;
  status: WorkflowStatus;
  createdAt: number;
  updatedAt: number;
  finishedAt?: number;
  cancelRequested: boolean;
  /** Some node's output so far is a declared default or rests on one. */
  lowConfidence: boolean;
  outcome?: WorkflowOutcome;
  started: Map<string, NodeStart>;
  done: Map<string, NodeResult>;
}

export interface WorkflowSummary {
  workflowId: string;
  name: string;
  status: WorkflowStatus;
  createdAt: number;
  updatedAt: number;
  finishedAt?: number;
  cancelRequested: boolean;
  reason?: string;
  /** Some node's output so far is a declared default or rests on one. */
  lowConfidence: boolean;
  /** The tenant the workflow (and each of its node runs) belongs to; absent: `default`. */
  tenant?: string;
}

export interface WorkflowListFilter {
  name?: string;
  status?: WorkflowStatus;
  limit?: number;
  offset?: number;
}

export interface StoredWorkflowEvent {
  id: string;
  event: WorkflowEvent;
}

export interface WorkflowStoreOptions {
  /** How long a finished workflow's records are kept, in seconds. Default 7 days. */
  retentionS?: number;
}

/** The store's options with every default filled in. */
export type ResolvedWorkflowStoreOptions = Required<WorkflowStoreOptions>;

/** Every default of the workflow store in one place. */
export function resolveWorkflowStoreOptions(o: WorkflowStoreOptions): ResolvedWorkflowStoreOptions {
  return { retentionS: o.retentionS ?? constants.DEFAULT_RUN_RETENTION_S };
}

/** A transition to apply once (see `workflow-transition-4.lua`). */
export type Transition =
  | { target: 'started'; node: string; value: NodeStart; events: WorkflowEvent[] }
  | { target: 'done'; node: string; value: NodeResult; events: WorkflowEvent[] }
  | { target: 'outcome'; value: WorkflowOutcome; events: WorkflowEvent[] };

/**
 * Workflows' durable records in Redis: a meta hash (definition snapshot, input, status, outcome), a hash
 * of node starts and one of node results — each field written once, by a script that also appends the
 * event — an event stream, and an index by creation time. Any coordinator may apply a transition; the
 * first one wins, so a coordinator that was replaced mid-step (killed, or stalled) cannot start a node
 * twice or deliver two outputs for one node.
 */
export class WorkflowStore {
  readonly retentionS: number;
  readonly #scripts: RedisScripts;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    options: WorkflowStoreOptions = {},
  ) {
    this.#scripts = redisScripts(redis);
    this.retentionS = resolveWorkflowStoreOptions(options).retentionS;
  }

  /** Creates the record; false when a workflow with this id exists already. */
  async create(
    record: Pick<
      WorkflowRecord,
      | 'workflowId'
      | 'name'
      | 'input'
      | 'spec'
      | 'configVersion'
      | 'traceId'
      | 'metadata'
      | 'createdAt'
      | 'tenant'
    >,
  ): Promise<boolean> {
    const k = this.keys;
    const fields: string[] = [
      'workflowId',
      record.workflowId,
      'name',
      record.name,
      'input',
      record.input,
      'spec',
      JSON.stringify(record.spec),
      'traceId',
      record.traceId,
      'status',
      'running',
      'createdAt',
      String(record.createdAt),
      'updatedAt',
      String(record.createdAt),
      ...(record.metadata ? ['metadata', JSON.stringify(record.metadata)] : []),
      ...(record.tenant ? ['tenant', record.tenant] : []),
      ...(record.configVersion === undefined ? [] : ['configVersion', String(record.configVersion)]),
    ];
    const event: WorkflowEvent = {
      type: 'workflow_started',
      at: record.createdAt,
      workflow: record.name,
      nodes: record.spec.nodes.map((n) => n.id),
      ...(record.configVersion === undefined ? {} : { config_version: record.configVersion }),
    };
    const created = await this.#scripts.workflowCreate(
      [k.workflowMeta(record.workflowId), k.workflowEvents(record.workflowId)],
      [...fields, JSON.stringify(event)],
    );
    // The index is on another slot: written after the record, idempotently (a repeat after a crash
    // between the two adds it then; a listing skips an entry whose record is gone).
    await this.redis.zadd(k.workflowIndex, 'NX', record.createdAt, record.workflowId);
    return created === 1;
  }

  /** Applies a transition once; true when this call applied it. */
  async apply(workflowId: string, t: Transition, now = Date.now()): Promise<boolean> {
    const k = this.keys;
    const applied = await this.#scripts.workflowTransition(
      [
        k.workflowMeta(workflowId),
        k.workflowStarted(workflowId),
        k.workflowDone(workflowId),
        k.workflowEvents(workflowId),
      ],
      [
        t.target,
        t.target === 'outcome' ? 'outcome' : t.node,
        JSON.stringify(t.value),
        now,
        this.retentionS,
        t.target === 'outcome' ? t.value.status : '',
        ...t.events.map((e) => JSON.stringify(e)),
      ],
    );
    // A finished workflow trims the index of workflows past retention (another slot on a cluster).
    if (applied === 1 && t.target === 'outcome')
      await this.redis.zremrangebyscore(k.workflowIndex, '-inf', now - this.retentionS * 1000);
    return applied === 1;
  }

  /** The workflow's record, or undefined when unknown. One round trip. */
  async load(workflowId: string): Promise<WorkflowRecord | undefined> {
    const k = this.keys;
    const [[, meta], [, started], [, done]] = (await this.redis
      .multi()
      .hgetall(k.workflowMeta(workflowId))
      .hgetall(k.workflowStarted(workflowId))
      .hgetall(k.workflowDone(workflowId))
      .exec()) as Array<[null, Record<string, string>]> as [
      [null, Record<string, string>],
      [null, Record<string, string>],
      [null, Record<string, string>],
    ];
    if (!meta.workflowId || !meta.spec) return undefined;
    const spec = JSON.parse(meta.spec) as WorkflowSpec;
    const ids = new Set(spec.nodes.map((n) => n.id));
    // Only the spec's own node ids are read back: a record is never keyed by a stray field.
    const parsed = <T>(hash: Record<string, string>) =>
      new Map(
        Object.entries(hash)
          .filter(([id]) => ids.has(id))
          .map(([id, v]) => [id, JSON.parse(v) as T]),
      );
    return {
      ...toSummary(meta),
      input: meta.input ?? '',
      spec,
      ...(meta.configVersion ? { configVersion: Number(meta.configVersion) } : {}),
      traceId: meta.traceId ?? '',
      ...(meta.metadata ? { metadata: JSON.parse(meta.metadata) as Record<string, string> } : {}),
      ...(meta.outcome ? { outcome: JSON.parse(meta.outcome) as WorkflowOutcome } : {}),
      started: parsed<NodeStart>(started),
      done: parsed<NodeResult>(done),
    };
  }

  /** Workflows newest first, filtered by name and status. */
  async list(filter: WorkflowListFilter = {}): Promise<WorkflowSummary[]> {
    const limit = filter.limit ?? 50;
    const offset = filter.offset ?? 0;
    const out: WorkflowSummary[] = [];
    const page = 500;
    for (let start = 0; out.length < offset + limit; start += page) {
      const ids = await this.redis.zrevrange(this.keys.workflowIndex, start, start + page - 1);
      if (ids.length === 0) break;
      // One command per workflow, concurrently: on a cluster each record is on its own slot.
      const rows = await Promise.all(
        ids.map((id) => this.redis.hmget(this.keys.workflowMeta(id), ...SUMMARY_FIELDS)),
      );
      for (const values of rows) {
        const meta = Object.fromEntries(
          SUMMARY_FIELDS.flatMap((f, i) => (values[i] == null ? [] : [[f, values[i] as string]])),
        );
        if (!meta.workflowId) continue;
        const s = toSummary(meta);
        if (filter.name && s.name !== filter.name) continue;
        if (filter.status && s.status !== filter.status) continue;
        out.push(s);
      }
      if (ids.length < page) break;
    }
    return out.slice(offset, offset + limit);
  }

  /** A workflow's events in order, after the stream id `after` (exclusive) when given. */
  async events(workflowId: string, after?: string): Promise<StoredWorkflowEvent[]> {
    const rows = await this.redis.xrange(
      this.keys.workflowEvents(workflowId),
      after ? `(${after}` : '-',
      '+',
    );
    return rows.map(([id, fields]) => ({ id, event: JSON.parse(fields[1] as string) as WorkflowEvent }));
  }

  /** Waits up to `blockMs` for events after `after` on `reader` (a connection that may block). */
  async waitEvents(
    workflowId: string,
    after: string,
    blockMs: number,
    reader: RedisClient,
  ): Promise<StoredWorkflowEvent[]> {
    const res = (await reader.xread(
      'BLOCK',
      blockMs,
      'STREAMS',
      this.keys.workflowEvents(workflowId),
      after,
    )) as Array<[string, Array<[string, string[]]>]> | null;
    const rows = res?.[0]?.[1] ?? [];
    return rows.map(([id, fields]) => ({ id, event: JSON.parse(fields[1] as string) as WorkflowEvent }));
  }

  /** Marks the workflow for cancellation; false when it is unknown. */
  async requestCancel(workflowId: string): Promise<boolean> {
    const key = this.keys.workflowMeta(workflowId);
    if ((await this.redis.exists(key)) === 0) return false;
    const event: WorkflowEvent = { type: 'cancel_requested', at: Date.now() };
    await this.redis
      .multi()
      .hset(key, 'cancel_requested', '1')
      .xadd(this.keys.workflowEvents(workflowId), '*', 'e', JSON.stringify(event))
      .exec();
    return true;
  }
}

const SUMMARY_FIELDS = [
  'workflowId',
  'name',
  'status',
  'createdAt',
  'updatedAt',
  'finishedAt',
  'cancel_requested',
  'outcome',
  'low_confidence',
  'tenant',
] as const;

function toSummary(meta: Record<string, string>): WorkflowSummary {
  const outcome = meta.outcome ? (JSON.parse(meta.outcome) as WorkflowOutcome) : undefined;
  return {
    workflowId: meta.workflowId ?? '',
    name: meta.name ?? '',
    status: (meta.status ?? 'running') as WorkflowStatus,
    createdAt: Number(meta.createdAt ?? 0),
    updatedAt: Number(meta.updatedAt ?? 0),
    ...(meta.finishedAt ? { finishedAt: Number(meta.finishedAt) } : {}),
    cancelRequested: meta.cancel_requested === '1',
    ...(outcome ? { reason: outcome.reason } : {}),
    // Records of earlier releases have no flag; their outcome says it once they ended.
    lowConfidence: meta.low_confidence === '1' || outcome?.low_confidence === true,
    ...(meta.tenant ? { tenant: meta.tenant } : {}),
  };
}
