import type { Redis } from 'ioredis';
import { constants, type Keys } from '@agent-reach/shared';
import type { RunEvent } from '../agent-loop/events.js';
import type { Approval, ChatMessage, RunState, RunStatus } from '../agent-loop/run-state.js';

/** The listing fields of a run, kept in a small hash beside its state. */
export interface RunSummary {
  runId: string;
  traceId: string;
  agent: string;
  status: RunStatus;
  createdAt: number;
  updatedAt: number;
  iterations: number;
  sessionId?: string;
  reason?: string;
  cancelRequested?: boolean;
}

export interface RunListFilter {
  agent?: string;
  status?: RunStatus;
  /** Epoch ms bounds on creation time. */
  since?: number;
  until?: number;
  limit?: number;
  offset?: number;
}

export interface StoredEvent {
  id: string;
  event: RunEvent;
}

export interface RunStoreOptions {
  /** How long a finished run is kept, in seconds. Default 7 days. */
  retentionS?: number;
  /** How many runs the index keeps. Default 100 000. */
  retentionCount?: number;
}

/**
 * A run's durable record in Redis: its state (without messages), its messages as a list, its event
 * stream, a listing hash and the index of runs. `checkpoint` writes one step — only the messages added
 * since the last checkpoint, the new events, the state and the listing — in one MULTI, and reads back
 * whether cancellation was requested: one round trip per step.
 */
export class RunStore {
  /** Messages already persisted per run in this process, to append only what is new. */
  readonly #persisted = new Map<string, { count: number; compactions: number }>();
  readonly #retentionS: number;
  readonly #retentionCount: number;

  constructor(
    private readonly redis: Redis,
    private readonly keys: Keys,
    options: RunStoreOptions = {},
  ) {
    this.#retentionS = options.retentionS ?? constants.DEFAULT_RUN_RETENTION_S;
    this.#retentionCount = options.retentionCount ?? constants.DEFAULT_RUN_RETENTION_COUNT;
  }

  /** Writes a step. Returns true when a cancellation of the run has been requested. */
  async checkpoint(state: RunState, events: RunEvent[]): Promise<{ cancelRequested: boolean }> {
    const k = this.keys;
    const id = state.runId;
    const { messages, ...rest } = state;
    const seen = this.#persisted.get(id);
    // The cancel flag is read first so that its reply is always the first.
    const tx = this.redis.multi().hget(k.runMeta(id), 'cancel_requested');
    if (!seen || seen.compactions !== state.compactions || seen.count > messages.length) {
      tx.del(k.runMessages(id));
      if (messages.length) tx.rpush(k.runMessages(id), ...messages.map((m) => JSON.stringify(m)));
    } else if (messages.length > seen.count) {
      tx.rpush(k.runMessages(id), ...messages.slice(seen.count).map((m) => JSON.stringify(m)));
    }
    tx.set(k.runState(id), JSON.stringify(rest));
    for (const e of events) tx.xadd(k.runEvents(id), '*', 'e', JSON.stringify(e));
    tx.hset(k.runMeta(id), metaFields(state));
    tx.zadd(k.runIndex, 'NX', state.createdAt, id);
    if (state.outcome) {
      for (const key of [
        k.runState(id),
        k.runMessages(id),
        k.runEvents(id),
        k.runMeta(id),
        k.results(id),
        k.runApprovals(id),
      ]) {
        tx.expire(key, this.#retentionS);
      }
      tx.zremrangebyscore(k.runIndex, '-inf', Date.now() - this.#retentionS * 1000);
      tx.zremrangebyrank(k.runIndex, 0, -this.#retentionCount - 1);
    }
    const replies = await tx.exec();
    if (state.outcome) this.#persisted.delete(id);
    else this.#persisted.set(id, { count: messages.length, compactions: state.compactions });
    const cancel = replies?.[0]?.[1];
    return { cancelRequested: cancel === '1' };
  }

  /**
   * The run's last checkpoint (undefined when there is none) with the decisions people made since it
   * parked merged in, and whether its cancellation was requested — one round trip.
   */
  async load(runId: string): Promise<{ state: RunState | undefined; cancelRequested: boolean }> {
    const k = this.keys;
    const [[, state], [, messages], [, decisions], [, cancel]] = (await this.redis
      .multi()
      .get(k.runState(runId))
      .lrange(k.runMessages(runId), 0, -1)
      .hgetall(k.runApprovals(runId))
      .hget(k.runMeta(runId), 'cancel_requested')
      .exec()) as [
      [null, string | null],
      [null, string[]],
      [null, Record<string, string>],
      [null, string | null],
    ];
    const cancelRequested = cancel === '1';
    if (state === null) return { state: undefined, cancelRequested };
    const parsed = JSON.parse(state) as Omit<RunState, 'messages'>;
    const run: RunState = { ...parsed, messages: messages.map((m) => JSON.parse(m) as ChatMessage) };
    for (const [id, json] of Object.entries(decisions)) {
      const pending = run.approvals[id];
      if (pending && !pending.decision) Object.assign(pending, JSON.parse(json) as Partial<Approval>);
    }
    this.#persisted.set(runId, { count: run.messages.length, compactions: run.compactions });
    return { state: run, cancelRequested };
  }

  /**
   * Records a person's decision on a parked call. First decision wins (HSETNX); returns false when the
   * call already had one.
   */
  async decide(
    runId: string,
    toolCallId: string,
    decision: Pick<Approval, 'decision' | 'by' | 'reason'>,
  ): Promise<boolean> {
    const record = { ...decision, decidedAt: Date.now() };
    const [[, set]] = (await this.redis
      .multi()
      .hsetnx(this.keys.runApprovals(runId), toolCallId, JSON.stringify(record))
      .expire(this.keys.runApprovals(runId), this.#retentionS)
      .exec()) as [[null, number], [null, number]];
    return set === 1;
  }

  /** Appends events outside a checkpoint (decisions made while the run is parked). */
  async appendEvents(runId: string, events: RunEvent[]): Promise<void> {
    const tx = this.redis.multi();
    for (const e of events) tx.xadd(this.keys.runEvents(runId), '*', 'e', JSON.stringify(e));
    await tx.exec();
  }

  /** Forgets the in-process bookkeeping of a run (its job moved to another process or parked). */
  release(runId: string): void {
    this.#persisted.delete(runId);
  }

  async summary(runId: string): Promise<RunSummary | undefined> {
    const meta = await this.redis.hgetall(this.keys.runMeta(runId));
    return Object.keys(meta).length ? toSummary(meta) : undefined;
  }

  /** Runs newest first, filtered by agent, status and creation time. */
  async list(filter: RunListFilter = {}): Promise<RunSummary[]> {
    const limit = filter.limit ?? 50;
    const offset = filter.offset ?? 0;
    const out: RunSummary[] = [];
    const page = 500;
    for (let start = 0; out.length < offset + limit; start += page) {
      const ids = await this.redis.zrevrangebyscore(
        this.keys.runIndex,
        filter.until ?? '+inf',
        filter.since ?? '-inf',
        'LIMIT',
        start,
        page,
      );
      if (ids.length === 0) break;
      const pipe = this.redis.pipeline();
      for (const id of ids) pipe.hgetall(this.keys.runMeta(id));
      const metas = (await pipe.exec()) ?? [];
      for (const [, meta] of metas) {
        if (!meta || Object.keys(meta as object).length === 0) continue;
        const s = toSummary(meta as Record<string, string>);
        if (filter.agent && s.agent !== filter.agent) continue;
        if (filter.status && s.status !== filter.status) continue;
        out.push(s);
      }
      if (ids.length < page) break;
    }
    return out.slice(offset, offset + limit);
  }

  /** A run's events in order, after the stream id `after` (exclusive) when given. */
  async events(runId: string, after?: string): Promise<StoredEvent[]> {
    const rows = await this.redis.xrange(this.keys.runEvents(runId), after ? `(${after}` : '-', '+');
    return rows.map(([id, fields]) => ({ id, event: JSON.parse(fields[1] as string) as RunEvent }));
  }

  /** Waits up to `blockMs` for events after `after`; for live streaming. */
  async waitEvents(runId: string, after: string, blockMs: number, reader: Redis): Promise<StoredEvent[]> {
    const res = (await reader.xread('BLOCK', blockMs, 'STREAMS', this.keys.runEvents(runId), after)) as Array<
      [string, Array<[string, string[]]>]
    > | null;
    const rows = res?.[0]?.[1] ?? [];
    return rows.map(([id, fields]) => ({ id, event: JSON.parse(fields[1] as string) as RunEvent }));
  }

  /** Marks a run for cancellation and tells every scheduler; the one running it aborts. */
  async requestCancel(runId: string): Promise<void> {
    await this.redis
      .multi()
      .hset(this.keys.runMeta(runId), 'cancel_requested', '1')
      .publish(this.keys.cancelChannel, runId)
      .exec();
  }
}

function metaFields(state: RunState): Record<string, string> {
  return {
    runId: state.runId,
    traceId: state.traceId,
    agent: state.agent,
    status: state.status,
    createdAt: String(state.createdAt),
    updatedAt: String(Date.now()),
    iterations: String(state.iterations),
    ...(state.sessionId ? { sessionId: state.sessionId } : {}),
    ...(state.outcome ? { reason: state.outcome.reason } : {}),
  };
}

function toSummary(meta: Record<string, string>): RunSummary {
  return {
    runId: meta.runId ?? '',
    traceId: meta.traceId ?? '',
    agent: meta.agent ?? '',
    status: (meta.status ?? 'queued') as RunStatus,
    createdAt: Number(meta.createdAt),
    updatedAt: Number(meta.updatedAt),
    iterations: Number(meta.iterations ?? 0),
    ...(meta.sessionId ? { sessionId: meta.sessionId } : {}),
    ...(meta.reason ? { reason: meta.reason } : {}),
    ...(meta.cancel_requested === '1' ? { cancelRequested: true } : {}),
  };
}
