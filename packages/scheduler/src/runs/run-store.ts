import type { DeadLetter, RawRunRecord } from '@agent-reach/archive';
import {
  checkVersion,
  DEFAULT_TENANT,
  foldStateRecord,
  readEvent,
  readStepRecord,
  hasToolMessageRefs,
  resolveToolMessageRefs,
  ToolMessageRefError,
  toolMessageEntryPrefix,
  toolMessageRefOf,
  type Keys,
  type RunJobData,
} from '@agent-reach/protocol';
import {
  callLedgerEntry,
  constants,
  redisScripts,
  type RedisClient,
  type RedisScripts,
} from '@agent-reach/shared';
import { joinDecisions } from '../agent-loop/approvals.js';
import {
  readStoredEvent,
  readStoredState,
  RecordRefs,
  refersToRecord,
  resultsHeldElsewhere,
  storedEventJson,
} from './stored-record.js';
import { StoredStateWriter, type StateFormat } from './stored-state.js';
import { historyRefs, storedMessages, type HistoryRefs } from './history-refs.js';
import type { RunEvent } from '../agent-loop/events.js';
import {
  agentInCharge,
  type Approval,
  type ChatMessage,
  type RunState,
  type RunStatus,
} from '../agent-loop/run-state.js';

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
  /** The tenant the run belongs to (absent in runs recorded before tenants: `default`). */
  tenant?: string;
  reason?: string;
  cancelRequested?: boolean;
  /** Version of the fleet configuration the run started under. */
  configVersion?: number;
  /** Caller labels given when the run was started. */
  metadata?: Record<string, string>;
  /** Names of the tools the run called, each once. */
  tools?: string[];
  /** Error kinds its tool calls ended with, each once. */
  errorKinds?: string[];
  /** The start of its input, for lists (absent in records written before it was kept). */
  inputPreview?: string;
  /** Its tool calls so far, those that did not succeed, and the retries the executors made of them. */
  calls?: number;
  errors?: number;
  retries?: number;
}

/** How often a store trims the index of runs at most (see `trimIndexSoon`). */
const TRIM_INTERVAL_MS = 1000;

/** How much of a run's input its listing keeps. */
export const INPUT_PREVIEW_CHARS = 160;

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
  /** The run archive (`DATABASE_URL`): finished runs are handed to it, and read from it once Redis let them go. */
  archive?: RunArchive;
  /** How checkpoints store the state (see stored-state.ts). Default `delta`. */
  stateFormat?: StateFormat;
}

/** The store's options with every default filled in. */
export type ResolvedRunStoreOptions = RunStoreOptions &
  Required<Omit<RunStoreOptions, 'archive' | 'stateFormat'>>;

/** Every default of the run store in one place. */
export function resolveRunStoreOptions(o: RunStoreOptions): ResolvedRunStoreOptions {
  return {
    ...o,
    retentionS: o.retentionS ?? constants.DEFAULT_RUN_RETENTION_S,
    retentionCount: o.retentionCount ?? constants.DEFAULT_RUN_RETENTION_COUNT,
  };
}

/** Why a checkpoint was not written; `fenced` and `final` mean another process owns (or ended) the run. */
export type CheckpointVerdict = 'ok' | 'dup' | 'fenced' | 'final' | 'gap' | 'refs';

/** A checkpoint the store refused: the run belongs to another process now, or its record moved on. */
export class CheckpointRefused extends Error {
  constructor(
    readonly runId: string,
    readonly verdict: Exclude<CheckpointVerdict, 'ok' | 'dup'>,
  ) {
    super(
      verdict === 'gap'
        ? `checkpoint of run ${runId} does not follow the stored one`
        : verdict === 'refs'
          ? `checkpoint of run ${runId} refers to results its record does not hold`
          : `run ${runId} is owned by another process now (${verdict})`,
    );
    this.name = 'CheckpointRefused';
  }

  /** True when this process lost the run (it must stop without writing), false for a gap. */
  get lost(): boolean {
    return this.verdict === 'fenced' || this.verdict === 'final';
  }
}

/** A run as its owner loaded it. */
export interface RunClaim {
  state: RunState | undefined;
  cancelRequested: boolean;
  /** Problems found in the stored record (ignored decisions and the like), for the log. */
  problems: string[];
  writer: RunCheckpointer;
}

/**
 * Writes one run's checkpoints for the process that claimed it. `prepare` snapshots the step at once —
 * the messages added since the previous step, the state, the events, the calls of a new model turn —
 * and returns the write, so what is written is what the run was when the step ended, however late the
 * write is sent. Steps are numbered in the order they are prepared; the store applies each once.
 */
export class RunCheckpointer {
  #seq: number;
  #count: number;
  #compactions: number | undefined;
  #listed = false;
  /** Whether this writer's checkpoints have checked the stored message count once (LLEN). */
  #checked = false;
  /** Whether this writer gave the call ledger its TTL. */
  #ledgerTtl = false;
  /** Calls whose stored tool message refers to their results-hash entry (kept at the run's end). */
  readonly #referred: Set<string>;
  /** The listing fields this writer has written, as written; none before its first checkpoint. */
  #listing: Map<string, string> | undefined;
  readonly #state: StoredStateWriter;

  constructor(
    private readonly store: RunStore,
    readonly runId: string,
    readonly epoch: number,
    seq: number,
    count: number,
    compactions: number | undefined,
    referred: Iterable<string> = [],
  ) {
    this.#referred = new Set(referred);
    this.#seq = seq;
    this.#count = count;
    this.#compactions = compactions;
    this.#state = new StoredStateWriter(store.stateFormat ?? 'delta');
  }

  prepare(state: RunState, events: RunEvent[]): () => Promise<{ cancelRequested: boolean }> {
    const { messages, ...rest } = state;
    const rewrite = this.#compactions !== state.compactions || this.#count > messages.length;
    const base = rewrite ? 0 : this.#count;
    const fresh = messages.slice(base);
    const calls: string[] = [];
    for (const m of fresh) {
      if (m.role !== 'assistant' || !m.tool_calls) continue;
      for (const c of m.tool_calls) {
        if (c.type !== 'function') continue;
        calls.push(
          c.id,
          // The agent in charge made the calls since the last checkpoint (a handoff checkpoints alone).
          callLedgerEntry({
            agent: agentInCharge(state),
            name: c.function.name,
            arguments: c.function.arguments,
          }),
        );
      }
    }
    // A guardrail's tool calls are the platform's, not the model's: in the ledger, never in the history.
    for (const c of state.guardrailCalls ?? [])
      calls.push(
        c.id,
        callLedgerEntry({ agent: agentInCharge(state), name: c.name, arguments: c.arguments }),
      );
    const meta = this.#changedListing(metaFields(state));
    // What the record holds once this checkpoint is written (the messages before it are not needed: every
    // event refers to the messages of its own step), for storing each event without repeating it.
    const refs = new RecordRefs({ steps: state.steps, messages: fresh, outcome: state.outcome, run: state });
    this.#seq += 1;
    this.#count = messages.length;
    this.#compactions = state.compactions;
    // A writer's first checkpoint counts the stored messages itself (LLEN): the listing's count may be
    // another release's; from then on the count this writer stored is checked.
    const counted = rewrite ? 1 : this.#checked ? 0 : 2;
    this.#checked = true;
    const ledgerTtl = calls.length > 0 && !this.#ledgerTtl ? this.store.retentionS : '';
    if (calls.length > 0) this.#ledgerTtl = true;
    const final = state.outcome !== undefined;
    // New tool messages of calls answered through the record are stored as references to their results
    // (one copy of each result per run); a rewritten history is stored whole.
    const history = rewrite || this.store.stateFormat === 'whole' ? new Map() : historyRefs(fresh, events);
    if (rewrite) this.#referred.clear();
    for (const id of history.keys()) this.#referred.add(id);
    const stateLine = this.#state.next(rest, messages, fresh, rewrite);
    // The results a history refers to live as long as the run: the hash loses the TTL a call's record
    // gives it when a checkpoint refers to it, and again when the run parks (it may wait for days).
    const parks = !final && state.status !== 'running';
    const persist = history.size > 0 || (parks && this.#referred.size > 0);
    const messagesPart = (refs: HistoryRefs) => [
      fresh.length,
      ...storedMessages(fresh, refs),
      refs.size * 2,
      ...[...refs].flat(),
      persist ? 1 : 0,
    ];
    const head = [this.epoch, this.#seq, base, counted, stateLine];
    const tail: Array<string | number> = [
      events.length,
      ...events.map((e) => storedEventJson(e, refs)),
      meta.length,
      ...meta,
      calls.length,
      ...calls,
      ledgerTtl,
      final ? 1 : 0,
      this.store.retentionS,
      Object.keys(state.approvals).length > 0 ? 1 : 0,
    ];
    // At the run's end each message that refers to its result takes the entry in (`$entry`), and every
    // entry the history holds leaves the hash. Which messages refer is known once the earlier writes
    // settled (one may have gone whole), so this part is made when the write is sent.
    const tools = final
      ? messages.flatMap((m, i) => (m.role === 'tool' ? [[i, m.tool_call_id] as const] : []))
      : [];
    const held = final ? resultsHeldElsewhere(state) : [];
    const ended = (referring: ReadonlySet<string>) => {
      const embeds = tools.flatMap(([index, id]) =>
        referring.has(id) ? [index, id, toolMessageEntryPrefix(id)] : [],
      );
      return [embeds.length, ...embeds, ...held];
    };
    const args = () => [...head, ...messagesPart(history), ...tail, ...ended(this.#referred)];
    // Should the results hash not hold what a reference expects, the step goes again with them whole.
    const whole = () => {
      const referring = new Set([...this.#referred].filter((id) => !history.has(id)));
      return [...head, ...messagesPart(new Map()), ...tail, ...ended(referring)];
    };
    // The script is given the keys it writes: the ledger's neighbours only with calls or references,
    // all at the end.
    const keyCount = final ? 8 : calls.length > 0 || persist ? 7 : 4;
    const { createdAt } = state;
    return async () => {
      // Handed to the archive before the run is final, so that no crash can leave a finished run unarchived.
      if (final) await this.store.archive?.handOff(this.runId);
      // Listed with its first checkpoint (idempotently), so no written run is ever missing from the index.
      // Both are sent at once: the checkpoint must go out now, ahead of any call dispatched after it.
      const listed = this.#listed ? undefined : this.store.index(this.runId, createdAt);
      this.#listed = true;
      const [written] = await Promise.all([
        this.store.write(this.runId, args(), keyCount, history.size > 0 ? whole : undefined),
        listed,
      ]);
      // Stored whole after all: the run's end may drop these results (its history holds them).
      if (written.wholeSent) for (const id of history.keys()) this.#referred.delete(id);
      if (final) this.store.trimIndexSoon();
      return written;
    };
  }

  /**
   * The listing fields that differ from what this writer last wrote, as field/value pairs: all of them
   * at its first checkpoint. Only checkpoints write these fields, and a claim starts a new writer, so
   * what this writer wrote is what the hash holds.
   */
  #changedListing(fields: Record<string, string>): string[] {
    const written = this.#listing;
    this.#listing = new Map(Object.entries(fields));
    if (!written) return Object.entries(fields).flat();
    const changed: string[] = [];
    for (const [name, value] of this.#listing) if (written.get(name) !== value) changed.push(name, value);
    return changed;
  }
}

/**
 * A run's durable record in Redis: its state (without messages), its messages as a list, its event
 * stream, a listing hash, its call ledger and the index of runs. The process that runs a run claims it
 * (`claim`) and writes through the returned checkpointer; readers (API, CLI) use `load` and never write.
 */
export class RunStore {
  readonly retentionS: number;
  readonly #scripts: RedisScripts;
  readonly retentionCount: number;
  readonly archive: RunArchive | undefined;
  readonly stateFormat: StateFormat | undefined;
  /** When this store last trimmed the index of runs (epoch ms). */
  #trimmedAt = 0;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    storeOptions: RunStoreOptions = {},
  ) {
    const options = resolveRunStoreOptions(storeOptions);
    this.#scripts = redisScripts(redis);
    this.retentionS = options.retentionS;
    this.retentionCount = options.retentionCount;
    this.archive = options.archive;
    this.stateFormat = options.stateFormat;
    const commands = redis as unknown as Record<string, unknown>;
    if (typeof commands.agentReachAcceptRun !== 'function')
      redis.defineCommand('agentReachAcceptRun', { numberOfKeys: 1, lua: ACCEPT_LUA });
  }

  /** The connection checkpoints are written on. */
  get connection(): RedisClient {
    return this.redis;
  }

  /**
   * Lists a run the moment it is accepted, before any scheduler takes it: its listing hash says `queued`
   * (with its creation and update times, agent, tenant, session, metadata and input preview) and it is in
   * the index of runs. So it is read, listed, cancelled and followed as any run from then on, and an
   * executor finds its record. A listing a checkpoint already wrote is left as it is (a repeated request).
   */
  async accept(job: RunJobData): Promise<void> {
    const createdAt = typeof job.created_at === 'number' ? job.created_at : Date.now();
    const fields = acceptedListing(job, createdAt);
    const accept = (this.redis as unknown as { agentReachAcceptRun: AcceptCommand }).agentReachAcceptRun;
    await accept.call(this.redis, this.keys.runMeta(job.run_id), ...Object.entries(fields).flat());
    await this.index(job.run_id, createdAt);
  }

  /**
   * Lists a run a scheduler starts that no door accepted (a job added to the run queue directly, as the
   * client's `enqueueRun` does): `running` from now on, in the index with its creation time. A run
   * accepted by a door is listed already and left as it is.
   */
  async listTaken(job: RunJobData): Promise<void> {
    const createdAt = typeof job.created_at === 'number' ? job.created_at : Date.now();
    const fields = { ...acceptedListing(job, createdAt), status: 'running' };
    const accept = (this.redis as unknown as { agentReachAcceptRun: AcceptCommand }).agentReachAcceptRun;
    const listed = await accept.call(
      this.redis,
      this.keys.runMeta(job.run_id),
      ...Object.entries(fields).flat(),
    );
    if (listed === 1) await this.index(job.run_id, createdAt);
  }

  /**
   * Takes ownership of a run for this process (any earlier owner is fenced off from now on) and loads
   * its last checkpoint with the decisions people made since it parked. A run listed `queued` at its
   * acceptance is `running` from now on.
   */
  async claim(runId: string): Promise<RunClaim> {
    const k = this.keys;
    const [epoch, seq, cancel, stateJson, messages, decisions] = await this.#scripts.claim(
      [k.runMeta(runId), k.runState(runId), k.runMessages(runId), k.runApprovals(runId)],
      [Date.now()],
    );
    // A history that refers to results is read with them (a second read, only for such a record).
    const referred = messages.flatMap((m) => toolMessageRefOf(m) ?? []);
    const history = resolveToolMessageRefs(
      messages,
      referred.length > 0 ? await this.redis.hgetall(k.results(runId)) : {},
    );
    const { state, problems } = parseRecord(stateJson, history, decisions);
    return {
      state,
      cancelRequested: cancel === '1',
      problems,
      writer: new RunCheckpointer(
        this,
        runId,
        Number(epoch),
        Number(seq),
        state?.messages.length ?? 0,
        state?.compactions,
        referred,
      ),
    };
  }

  /**
   * Sends a prepared checkpoint with the first `keyCount` of the run's keys (4, 7 or 8: see
   * checkpoint-n.lua); throws `CheckpointRefused` unless it was applied (now or before).
   */
  async write(
    runId: string,
    args: Array<string | number>,
    keyCount: 4 | 7 | 8 = 8,
    whole?: () => Array<string | number>,
  ): Promise<{ cancelRequested: boolean; wholeSent: boolean }> {
    const k = this.keys;
    const keys = [
      k.runMeta(runId),
      k.runState(runId),
      k.runMessages(runId),
      k.runEvents(runId),
      k.results(runId),
      k.runApprovals(runId),
      k.runCalls(runId),
      k.runStarts(runId),
    ] as const;
    const given =
      keyCount === 4
        ? ([keys[0], keys[1], keys[2], keys[3]] as const)
        : keyCount === 7
          ? ([keys[0], keys[1], keys[2], keys[3], keys[4], keys[5], keys[6]] as const)
          : keys;
    let [verdict, cancel] = await this.#scripts.checkpoint(given, args);
    // `refs`: a tool message's results-hash entry is not the result the step expected (nothing was
    // written): the step is written with its messages whole.
    const wholeSent = verdict === 'refs' && whole !== undefined;
    if (wholeSent) [verdict, cancel] = await this.#scripts.checkpoint(given, whole());
    if (verdict !== 'ok' && verdict !== 'dup') {
      throw new CheckpointRefused(runId, verdict as Exclude<CheckpointVerdict, 'ok' | 'dup'>);
    }
    return { cancelRequested: cancel === '1', wholeSent };
  }

  /**
   * Adds a run to the index of runs by its creation time, unless it is there. The index is a key of its
   * own (another slot than the run's in a cluster), so this is a command of its own, not part of a
   * checkpoint; a run listed before its first checkpoint lands is skipped by `list` until it does.
   */
  async index(runId: string, createdAt: number): Promise<void> {
    await this.redis.zadd(this.keys.runIndex, 'NX', createdAt, runId);
  }

  /**
   * Trims the index (`trimIndex`) in the background on a run's end, at most once a second per store: the
   * index then holds at most a second's worth of finished runs beyond its retention count, and a run's end
   * waits for no trim. One that fails is made up for by the next.
   */
  trimIndexSoon(): void {
    const now = Date.now();
    if (now - this.#trimmedAt < TRIM_INTERVAL_MS) return;
    this.#trimmedAt = now;
    void this.trimIndex();
  }

  /** Drops from the index the runs past the retention time, then the oldest beyond the retention count. */
  async trimIndex(): Promise<void> {
    await this.redis
      .pipeline()
      .zremrangebyscore(this.keys.runIndex, '-inf', Date.now() - this.retentionS * 1000)
      .zremrangebyrank(this.keys.runIndex, 0, -this.retentionCount - 1)
      .exec()
      .catch(() => undefined);
  }

  /**
   * The run's last checkpoint (undefined when there is none) with the decisions people made since it
   * parked merged in, and whether its cancellation was requested. Read-only: one round trip.
   */
  async load(runId: string): Promise<{ state: RunState | undefined; cancelRequested: boolean }> {
    return this.#load(runId, true);
  }

  async #load(
    runId: string,
    again: boolean,
  ): Promise<{ state: RunState | undefined; cancelRequested: boolean }> {
    const k = this.keys;
    const [[, state], [, stored], [, decisions], [, [cancel, listed]]] = (await this.redis
      .multi()
      .get(k.runState(runId))
      .lrange(k.runMessages(runId), 0, -1)
      .hgetall(k.runApprovals(runId))
      .hmget(k.runMeta(runId), 'cancel_requested', 'runId')
      .exec()) as [
      [null, string | null],
      [null, string[]],
      [null, Record<string, string>],
      [null, [string | null, string | null]],
    ];
    // A live run's history that refers to its results is read with them (a finished run's took them in:
    // should it have ended between the two reads, it is read again).
    let messages: string[];
    try {
      const results = hasToolMessageRefs(stored) ? await this.redis.hgetall(k.results(runId)) : {};
      messages = resolveToolMessageRefs(stored, results);
    } catch (err) {
      if (!(err instanceof ToolMessageRefError) || !again) throw err;
      return this.#load(runId, false);
    }
    // A run Redis holds (listed, not checkpointed yet) is read from Redis alone: PostgreSQL is not asked.
    if (state === null && listed === null && this.archive) {
      const archived = await this.archive.record(runId);
      if (archived) {
        const parsed = parseRecord(
          archived.state,
          resolveToolMessageRefs(archived.messages, archived.results),
          Object.entries(archived.approvals).flat(),
        );
        return { state: parsed.state, cancelRequested: archived.meta.cancel_requested === '1' };
      }
    }
    const parsed = parseRecord(state ?? '', messages, Object.entries(decisions).flat());
    return { state: parsed.state, cancelRequested: cancel === '1' };
  }

  /**
   * Records a person's decision on a parked call. First decision wins (HSETNX); returns false when the
   * call already had one.
   */
  async decide(
    runId: string,
    toolCallId: string,
    decision: Pick<Approval, 'decision' | 'by' | 'reason' | 'grant'>,
  ): Promise<boolean> {
    const record = { ...decision, decidedAt: Date.now() };
    const [[, set]] = (await this.redis
      .multi()
      .hsetnx(this.keys.runApprovals(runId), toolCallId, JSON.stringify(record))
      .expire(this.keys.runApprovals(runId), this.retentionS)
      .exec()) as [[null, number], [null, number]];
    return set === 1;
  }

  /** Appends events outside a checkpoint (decisions made while the run is parked). */
  async appendEvents(runId: string, events: RunEvent[]): Promise<void> {
    const tx = this.redis.multi();
    for (const e of events) tx.xadd(this.keys.runEvents(runId), '*', 'e', storedEventJson(e));
    await tx.exec();
  }

  async summary(runId: string): Promise<RunSummary | undefined> {
    const meta = await this.redis.hgetall(this.keys.runMeta(runId));
    // A listing exists once the first checkpoint wrote it (a claim or a cancel request alone is not one).
    if (meta.runId) return toSummary(meta);
    const archived = this.archive && (await this.archive.record(runId));
    return archived?.meta.runId ? toSummary(archived.meta) : undefined;
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
      // Each run's listing is on its run's slot: one command each, sent together, not one pipeline.
      const metas = await Promise.all(ids.map((id) => this.redis.hgetall(this.keys.runMeta(id))));
      for (const meta of metas) {
        if (!meta.runId) continue;
        const s = toSummary(meta);
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
    if (rows.length === 0 && this.archive && (await this.redis.exists(this.keys.runMeta(runId))) === 0) {
      const archived = await this.archive.record(runId);
      if (archived)
        return readEvents(
          archivedEvents(archived.events, after),
          archived.state,
          archived.messages,
          archived.results,
        );
    }
    return this.#resolved(
      runId,
      rows.map(([id, fields]) => ({ id, event: readEvent(fields[1] as string) })),
    );
  }

  /** Waits up to `blockMs` for events after `after`; for live streaming. */
  async waitEvents(
    runId: string,
    after: string,
    blockMs: number,
    reader: RedisClient,
  ): Promise<StoredEvent[]> {
    const res = (await reader.xread('BLOCK', blockMs, 'STREAMS', this.keys.runEvents(runId), after)) as Array<
      [string, Array<[string, string[]]>]
    > | null;
    const rows = res?.[0]?.[1] ?? [];
    return this.#resolved(
      runId,
      rows.map(([id, fields]) => ({ id, event: readEvent(fields[1] as string) })),
    );
  }

  /**
   * Stored events refer to the run's record instead of repeating it (see `storedEventJson`): what they
   * leave out is put back from the run's state, messages and results hash, read once per batch that needs it.
   */
  async #resolved(runId: string, stored: StoredEvent[]): Promise<StoredEvent[]> {
    if (!stored.some(({ event }) => refersToRecord(event))) return stored;
    const k = this.keys;
    const [[, stateJson], [, messages], [, results]] = (await this.redis
      .multi()
      .get(k.runState(runId))
      .lrange(k.runMessages(runId), 0, -1)
      .hgetall(k.results(runId))
      .exec()) as [[null, string | null], [null, string[]], [null, Record<string, string>]];
    return readEvents(stored, stateJson ?? '', messages, results);
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

/** Where finished runs go when the archive is on (`DATABASE_URL`), and how they are read back. */
export interface RunArchive {
  /** Puts a run in the archive's outbox; called before its final checkpoint is written. */
  handOff(runId: string): Promise<void>;
  /** The run's record as Redis held it, from the archive; undefined when the archive does not have it. */
  record(runId: string): Promise<RawRunRecord | undefined>;
  /** Runs the archive refused every try, set aside with their errors (their records stay in Redis). */
  deadLetters?(runId?: string): Promise<DeadLetter[]>;
}

/** KEYS[1] run meta; ARGV the listing's field/value pairs. Writes them unless a listing is there already. */
const ACCEPT_LUA = `
if redis.call('HEXISTS', KEYS[1], 'runId') == 1 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV))
return 1
`;

type AcceptCommand = (key: string, ...fieldsAndValues: string[]) => Promise<number>;

/** The listing of a run just accepted, field for field as its first checkpoint will write it. */
function acceptedListing(job: RunJobData, createdAt: number): Record<string, string> {
  return {
    runId: job.run_id,
    traceId: job.trace_id ?? job.run_id,
    agent: job.agent,
    status: 'queued',
    createdAt: String(createdAt),
    updatedAt: String(Date.now()),
    iterations: '0',
    ...(job.session_id ? { sessionId: job.session_id } : {}),
    tenant: job.tenant ?? DEFAULT_TENANT,
    ...(job.metadata ? { metadata: JSON.stringify(job.metadata) } : {}),
    ...(job.grants?.length ? { grants: job.grants.join(',') } : {}),
    tools: '',
    errorKinds: '',
    ...pieces('inputPreview', job.input.slice(0, INPUT_PREVIEW_CHARS)),
    calls: '0',
    errors: '0',
    retries: '0',
  };
}

/** A stream id's (ms, sequence) pair, for comparing ids of archived events. */
const streamId = (id: string): [number, number] => {
  const [ms = '0', seq = '0'] = id.split('-');
  return [Number(ms), Number(seq)];
};

/** Archived events after the stream id `after` (exclusive), as `events` reads them from Redis. */
function archivedEvents(events: RawRunRecord['events'], after: string | undefined): StoredEvent[] {
  const [am, as] = after ? streamId(after) : [-1, -1];
  return events
    .filter(([id]) => {
      const [m, q] = streamId(id);
      return m > am || (m === am && q > as);
    })
    .map(([id, e]) => ({ id, event: readEvent(e) }));
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
    ...(state.tenant ? { tenant: state.tenant } : {}),
    ...(state.outcome ? { reason: state.outcome.reason } : {}),
    ...(state.configVersion === undefined ? {} : { configVersion: String(state.configVersion) }),
    // What runs are searched by, kept in the listing so a search reads one small hash per run.
    ...(state.metadata ? { metadata: JSON.stringify(state.metadata) } : {}),
    // Executors read the grants with the rest of the record when they verify a call (verify-job-4.lua).
    ...(state.grants ? { grants: state.grants.join(',') } : {}),
    // Executors check a call's agent against the agent in charge once the run handed off.
    ...(state.inCharge ? { inCharge: state.inCharge } : {}),
    tools: distinct(state.steps.map((s) => s.tool)),
    errorKinds: distinct(state.steps.flatMap((s) => (s.error_kind ? [s.error_kind] : []))),
    // What a list shows of each run without reading its state.
    ...pieces('inputPreview', state.input.slice(0, INPUT_PREVIEW_CHARS)),
    calls: String(state.steps.length),
    errors: String(state.steps.filter((s) => !s.ok).length),
    retries: String(state.steps.reduce((n, s) => n + Math.max(0, (s.attempts ?? 1) - 1), 0)),
  };
}

/**
 * Redis keeps a hash compact (a listpack) while every value is at most 64 bytes (`hash-max-listpack-value`);
 * one longer value turns the whole listing into a hash table about 1 KB larger. A long value is therefore
 * kept in pieces of at most 64 bytes: `name`, `name.1`, `name.2`… (whole characters each).
 */
const PIECE_BYTES = 64;

function pieces(name: string, value: string): Record<string, string> {
  const out: Record<string, string> = {};
  let start = 0;
  let bytes = 0;
  let n = 0;
  for (let i = 0; i < value.length; i += 1) {
    const c = value.charCodeAt(i);
    const pair = c >= 0xd800 && c <= 0xdbff && isLowSurrogate(value.charCodeAt(i + 1));
    // UTF-8 bytes of the character (a lone surrogate is written as U+FFFD, three bytes).
    const size = c < 0x80 ? 1 : c < 0x800 ? 2 : pair ? 4 : 3;
    if (bytes + size > PIECE_BYTES) {
      out[n === 0 ? name : `${name}.${n}`] = value.slice(start, i);
      n += 1;
      start = i;
      bytes = 0;
    }
    bytes += size;
    if (pair) i += 1;
  }
  out[n === 0 ? name : `${name}.${n}`] = value.slice(start);
  return out;
}

const isLowSurrogate = (c: number) => c >= 0xdc00 && c <= 0xdfff;

/** A value kept in pieces (see `pieces`) made whole; a listing written before it was split has one piece. */
function joined(meta: Record<string, string>, name: string): string {
  let value = meta[name] ?? '';
  for (let n = 1; meta[`${name}.${n}`] !== undefined; n += 1) value += meta[`${name}.${n}`];
  return value;
}

/** A count field of a listing; undefined when absent (older records) or not a count. */
const count = (field: string | undefined) =>
  field !== undefined && /^\d{1,9}$/.test(field) ? Number(field) : undefined;

/** Names (tool names, error kinds: no commas in either) as one comma-separated field. */
const distinct = (names: string[]) => [...new Set(names)].join(',');
const names = (field: string | undefined) => (field ? field.split(',') : []);

function parseMetadata(json: string | undefined): Record<string, string> | undefined {
  if (!json) return undefined;
  try {
    const parsed = JSON.parse(json) as unknown;
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return undefined;
    const out: Record<string, string> = Object.create(null) as Record<string, string>;
    for (const [k, v] of Object.entries(parsed)) if (typeof v === 'string') out[k] = v;
    return out;
  } catch {
    return undefined;
  }
}

/** A run's listing as stored in its meta hash. */
export function toSummary(meta: Record<string, string>): RunSummary {
  const metadata = parseMetadata(meta.metadata);
  return {
    runId: meta.runId ?? '',
    traceId: meta.traceId ?? '',
    agent: meta.agent ?? '',
    status: (meta.status ?? 'queued') as RunStatus,
    createdAt: Number(meta.createdAt),
    updatedAt: Number(meta.updatedAt),
    iterations: Number(meta.iterations ?? 0),
    ...(meta.sessionId ? { sessionId: meta.sessionId } : {}),
    ...(meta.tenant ? { tenant: meta.tenant } : {}),
    ...(meta.reason ? { reason: meta.reason } : {}),
    ...(meta.cancel_requested === '1' ? { cancelRequested: true } : {}),
    ...(meta.configVersion !== undefined && /^\d{1,15}$/.test(meta.configVersion)
      ? { configVersion: Number(meta.configVersion) }
      : {}),
    ...(metadata ? { metadata } : {}),
    ...(meta.tools ? { tools: names(meta.tools) } : {}),
    ...(meta.errorKinds ? { errorKinds: names(meta.errorKinds) } : {}),
    ...(meta.inputPreview !== undefined ? { inputPreview: joined(meta, 'inputPreview') } : {}),
    ...(count(meta.calls) !== undefined ? { calls: count(meta.calls) } : {}),
    ...(count(meta.errors) !== undefined ? { errors: count(meta.errors) } : {}),
    ...(count(meta.retries) !== undefined ? { retries: count(meta.retries) } : {}),
  };
}

/**
 * A stored record made whole: the state, its messages, and the decisions people made since it parked;
 * what is ignored is reported.
 */
function parseRecord(
  stateJson: string,
  messages: string[],
  decisions: string[],
): { state: RunState | undefined; problems: string[] } {
  if (!stateJson) return { state: undefined, problems: [] };
  // A base and the deltas since it (a record of the earlier format is a base alone).
  const parsed = foldStateRecord(stateJson) as unknown as Omit<RunState, 'messages'>;
  // A record written by another release's format is refused by name rather than misread.
  checkVersion('stored run state', parsed);
  parsed.steps = (parsed.steps ?? []).map(readStepRecord);
  if (parsed.outcome?.steps)
    parsed.outcome = { ...parsed.outcome, steps: parsed.outcome.steps.map(readStepRecord) };
  const history = messages.map((m) => JSON.parse(m) as ChatMessage);
  const run: RunState = { ...readStoredState(parsed, history), messages: history };
  const { approvals, problems } = joinDecisions(run.approvals, decisions);
  run.approvals = approvals;
  return { state: run, problems };
}

/** Stored events made whole from a run's state, messages and results hash (see `readStoredEvent`). */
function readEvents(
  stored: StoredEvent[],
  stateJson: string,
  messages: string[],
  results: Record<string, string>,
): StoredEvent[] {
  if (!stored.some(({ event }) => refersToRecord(event))) return stored;
  const state = parseRecord(stateJson, resolveToolMessageRefs(messages, results), []).state;
  const refs = new RecordRefs({
    steps: state?.steps ?? [],
    messages: state?.messages ?? [],
    outcome: state?.outcome,
    results,
    ...(state ? { run: state } : {}),
  });
  return stored.map((s) =>
    refersToRecord(s.event) ? { id: s.id, event: readStoredEvent(s.event, refs) } : s,
  );
}
