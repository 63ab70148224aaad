import { type Keys } from '@agent-reach/protocol';
import { constants, parseJsonSafely, type RedisClient } from '@agent-reach/shared';
import type { ChatMessage, CompactionSummary, RunState, TaskStep } from '../agent-loop/run-state.js';

/** What the runs of one session share. */
export interface SessionMemory {
  sessionId: string;
  messages: ChatMessage[];
  summary?: CompactionSummary;
  steps: TaskStep[];
  runs: string[];
  updatedAt: number;
}

/**
 * Who a session belongs to: the API key (principal id) that created it and the one agent whose runs it
 * holds. Sessions made without the API (a run job naming a session) have neither.
 */
export interface SessionOwner {
  /** The principal id of the API key that created the session. */
  principal?: string;
  /** The agent of the session, bound at creation or by its first message. */
  agent?: string;
  /** The tenant of the key that created it (absent: `default`). */
  tenant?: string;
  /** Epoch ms. */
  createdAt?: number;
}

/** A session's record as the API reads it. */
export interface SessionInfo extends SessionOwner {
  sessionId: string;
  runs: string[];
  updatedAt: number;
}

/**
 * Session memory: history, compacted summary and task stack, carried from one run of a session to the
 * next. Written when a run ends; the last run to end wins if a session's runs overlap. Beside it, a small
 * hash records its owner (the creating key and the session's agent), kept as long as the memory.
 */
export class SessionStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly retentionS: number = constants.DEFAULT_RUN_RETENTION_S,
  ) {}

  #ownerKey(sessionId: string): string {
    return `${this.keys.session(sessionId)}:owner`;
  }

  async load(sessionId: string): Promise<SessionMemory | undefined> {
    const raw = await this.redis.get(this.keys.session(sessionId));
    return raw ? parseMemory(sessionId, raw) : undefined;
  }

  /**
   * Creates an empty session owned by `owner` (a principal id and, when known, the agent); false when the
   * id is taken. Without an owner the session is open to unrestricted keys only.
   */
  async create(
    sessionId: string,
    owner: { principal?: string; agent?: string; tenant?: string } = {},
  ): Promise<boolean> {
    const now = Date.now();
    const memory: SessionMemory = { sessionId, messages: [], steps: [], runs: [], updatedAt: now };
    const set = await this.redis.set(
      this.keys.session(sessionId),
      JSON.stringify(memory),
      'EX',
      this.retentionS,
      'NX',
    );
    if (set !== 'OK') return false;
    const fields: Record<string, string> = { created_at: String(now) };
    if (owner.principal) fields.principal = owner.principal;
    if (owner.agent) fields.agent = owner.agent;
    if (owner.tenant) fields.tenant = owner.tenant;
    await this.redis
      .multi()
      .hset(this.#ownerKey(sessionId), fields)
      .expire(this.#ownerKey(sessionId), this.retentionS)
      .exec();
    return true;
  }

  #grantsKey(sessionId: string): string {
    return `${this.keys.session(sessionId)}:grants`;
  }

  /** Tools the session was granted (for the rest of the session); empty for none or no such session. */
  async grants(sessionId: string): Promise<string[]> {
    return (await this.redis.smembers(this.#grantsKey(sessionId))).sort();
  }

  /** Grants the session these tools for the rest of it: runs started from now on may call them. */
  async addGrants(sessionId: string, tools: readonly string[]): Promise<void> {
    if (tools.length === 0) return;
    const key = this.#grantsKey(sessionId);
    await this.redis
      .multi()
      .sadd(key, ...tools)
      .expire(key, this.retentionS)
      .exec();
  }

  /** The session's owner and listing fields; undefined when there is no such session. */
  async info(sessionId: string): Promise<SessionInfo | undefined> {
    const [raw, owner] = await Promise.all([
      this.redis.get(this.keys.session(sessionId)),
      this.redis.hgetall(this.#ownerKey(sessionId)),
    ]);
    if (!raw) return undefined;
    const memory = parseMemory(sessionId, raw);
    const createdAt = Number(owner.created_at);
    return {
      sessionId,
      ...(owner.principal ? { principal: owner.principal } : {}),
      ...(owner.agent ? { agent: owner.agent } : {}),
      ...(owner.tenant ? { tenant: owner.tenant } : {}),
      ...(Number.isFinite(createdAt) && createdAt > 0 ? { createdAt } : {}),
      runs: memory?.runs.filter((r) => typeof r === 'string') ?? [],
      updatedAt: typeof memory?.updatedAt === 'number' ? memory.updatedAt : 0,
    };
  }

  /**
   * The creating key of each of these sessions (undefined for a session without one, or gone), read
   * together: one HGET each, every session's owner on a slot of its own.
   */
  async owners(sessionIds: readonly string[]): Promise<Map<string, string | undefined>> {
    const ids = [...new Set(sessionIds)];
    const found = await Promise.all(ids.map((id) => this.redis.hget(this.#ownerKey(id), 'principal')));
    return new Map(ids.map((id, i) => [id, found[i] ?? undefined]));
  }

  /**
   * Binds the session to `agent` unless it already has one (first message wins, atomically); returns the
   * session's agent afterwards.
   */
  async bindAgent(sessionId: string, agent: string): Promise<string> {
    const key = this.#ownerKey(sessionId);
    const [, [, bound]] = (await this.redis
      .multi()
      .hsetnx(key, 'agent', agent)
      .hget(key, 'agent')
      .expire(key, this.retentionS)
      .exec()) as [[null, number], [null, string | null], [null, number]];
    return bound ?? agent;
  }

  async saveFrom(state: RunState): Promise<void> {
    if (!state.sessionId) return;
    const previous = await this.load(state.sessionId);
    const memory: SessionMemory = {
      sessionId: state.sessionId,
      messages: state.messages,
      ...(state.summary ? { summary: state.summary } : {}),
      steps: state.plan.steps,
      runs: [...(previous?.runs ?? []), state.runId].slice(-100),
      updatedAt: Date.now(),
    };
    // Two keys of two hash slots: two commands, not one transaction (the owner only needs its expiry kept).
    await Promise.all([
      this.redis.set(this.keys.session(state.sessionId), JSON.stringify(memory), 'EX', this.retentionS),
      this.redis.expire(this.#ownerKey(state.sessionId), this.retentionS),
    ]);
  }
}

/** A stored session, parsed without letting a poisoned key reach a prototype; undefined when unreadable. */
function parseMemory(sessionId: string, raw: string): SessionMemory | undefined {
  try {
    const parsed = parseJsonSafely<Partial<SessionMemory> | null>(raw);
    if (!parsed || typeof parsed !== 'object') return undefined;
    return {
      sessionId,
      messages: Array.isArray(parsed.messages) ? parsed.messages : [],
      ...(parsed.summary && typeof parsed.summary === 'object' ? { summary: parsed.summary } : {}),
      steps: Array.isArray(parsed.steps) ? parsed.steps : [],
      runs: Array.isArray(parsed.runs) ? parsed.runs : [],
      updatedAt: typeof parsed.updatedAt === 'number' ? parsed.updatedAt : 0,
    };
  } catch {
    return undefined;
  }
}
