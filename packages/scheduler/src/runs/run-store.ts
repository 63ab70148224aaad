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
 * One checkpoint in one script call: read the cancel flag, append (or rewrite) messages, set the state,
 * add the events, update the listing and the index, and on the run's end set the retention TTLs.
 * KEYS: meta, state, messages, events, index, results, approvals.
 */
const CHECKPOINT_LUA = `
local cancel = redis.call('HGET', KEYS[1], 'cancel_requested')
local i = 3
if ARGV[2] == '1' then redis.call('DEL', KEYS[3]) end
local n = tonumber(ARGV[i]); i = i + 1
for j = i, i + n - 1, 200 do redis.call('RPUSH', KEYS[3], unpack(ARGV, j, math.min(j + 199, i + n - 1))) end
i = i + n
redis.call('SET', KEYS[2], ARGV[1])
n = tonumber(ARGV[i]); i = i + 1
for j = i, i + n - 1 do redis.call('XADD', KEYS[4], '*', 'e', ARGV[j]) end
i = i + n
n = tonumber(ARGV[i]); i = i + 1
redis.call('HSET', KEYS[1], unpack(ARGV, i, i + n - 1))
i = i + n
redis.call('ZADD', KEYS[5], 'NX', ARGV[i], ARGV[i + 1])
if ARGV[i + 2] == '1' then
  local ttl = tonumber(ARGV[i + 3])
  for _, key in ipairs({ KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[6], KEYS[7] }) do redis.call('EXPIRE', key, ttl) end
  redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', tonumber(ARGV[i + 4]) - ttl * 1000)
  redis.call('ZREMRANGEBYRANK', KEYS[5], 0, -tonumber(ARGV[i + 5]) - 1)
end
return cancel
`;

type CheckpointClient = Redis & {
  agentReachCheckpoint(...keysAndArgs: Array<string | number>): Promise<string | null>;
};

/**
 * A run's durable record in Redis: its state (without messages), its messages as a list, its event
 * stream, a listing hash and the index of runs. `checkpoint` writes one step — only the messages added
 * since the last checkpoint, the new events, the state and the listing — in one script call, and reads
 * back whether cancellation was requested: one round trip and one command per step.
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
    if (!(redis as unknown as Partial<CheckpointClient>).agentReachCheckpoint) {
      redis.defineCommand('agentReachCheckpoint', { numberOfKeys: 7, lua: CHECKPOINT_LUA });
    }
    this.#retentionS = options.retentionS ?? constants.DEFAULT_RUN_RETENTION_S;
    this.#retentionCount = options.retentionCount ?? constants.DEFAULT_RUN_RETENTION_COUNT;
  }

  /** The connection checkpoints are written on. */
  get connection(): Redis {
    return this.redis;
  }

  /**
   * Writes a step as one script call, issued before this returns control (commands written later on the
   * same connection land after it). Resolves to whether a cancellation of the run has been requested.
   */
  async checkpoint(state: RunState, events: RunEvent[]): Promise<{ cancelRequested: boolean }> {
    const k = this.keys;
    const id = state.runId;
    const { messages, ...rest } = state;
    const seen = this.#persisted.get(id);
    const rewrite = !seen || seen.compactions !== state.compactions || seen.count > messages.length;
    const fresh = rewrite ? messages : messages.slice(seen.count);
    const meta = Object.entries(metaFields(state)).flat();
    const args: Array<string | number> = [
      JSON.stringify(rest),
      rewrite ? 1 : 0,
      fresh.length,
      ...fresh.map((m) => JSON.stringify(m)),
      events.length,
      ...events.map((e) => JSON.stringify(e)),
      meta.length,
      ...meta,
      state.createdAt,
      id,
      state.outcome ? 1 : 0,
      this.#retentionS,
      Date.now(),
      this.#retentionCount,
    ];
    const cancel = await (this.redis as unknown as CheckpointClient).agentReachCheckpoint(
      k.runMeta(id),
      k.runState(id),
      k.runMessages(id),
      k.runEvents(id),
      k.runIndex,
      k.results(id),
      k.runApprovals(id),
      ...args,
    );
    if (state.outcome) this.#persisted.delete(id);
    else this.#persisted.set(id, { count: messages.length, compactions: state.compactions });
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
