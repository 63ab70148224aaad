import { DEFAULT_TENANT, type Keys } from '@agent-reach/protocol';
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
  /** The agent in charge when the session's last run ended, when a handoff left it with another agent. */
  lastAgent?: string;
}

/** A session's record as the API reads it. */
export interface SessionInfo extends SessionOwner {
  sessionId: string;
  runs: string[];
  updatedAt: number;
}

/**
 * Where a session is stored: session ids are per tenant, so two tenants may each have session `s1`. The
 * default tenant's sessions keep the bare id (as before tenants); another tenant's are stored under
 * `<tenant>/<id>`, which no session id can spell (ids have no `/`).
 */
export function sessionKeyId(sessionId: string, tenant: string | undefined): string {
  return tenant === undefined || tenant === DEFAULT_TENANT ? sessionId : `${tenant}/${sessionId}`;
}

/**
 * Session memory: history, compacted summary and task stack, carried from one run of a session to the
 * next. Written when a run ends; the last run to end wins if a session's runs overlap. Beside it, a small
 * hash records its owner (the creating key and the session's agent), kept as long as the memory. Every
 * method takes the session's tenant (absent: `default`): a session id names a session within a tenant.
 */
export class SessionStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly retentionS: number = constants.DEFAULT_RUN_RETENTION_S,
  ) {}

  #key(sessionId: string, tenant: string | undefined): string {
    return this.keys.session(sessionKeyId(sessionId, tenant));
  }

  #ownerKey(sessionId: string, tenant: string | undefined): string {
    return `${this.#key(sessionId, tenant)}:owner`;
  }

  async load(sessionId: string, tenant?: string): Promise<SessionMemory | undefined> {
    const raw = await this.redis.get(this.#key(sessionId, tenant));
    return raw ? parseMemory(sessionId, raw) : undefined;
  }

  /** Whether the tenant has this session. */
  async exists(sessionId: string, tenant?: string): Promise<boolean> {
    return (await this.redis.exists(this.#key(sessionId, tenant))) === 1;
  }

  /**
   * Creates an empty session of `owner.tenant` owned by `owner` (a principal id and, when known, the
   * agent); false when the tenant has a session of that id. Without an owner the session is open to
   * unrestricted keys only.
   */
  async create(
    sessionId: string,
    owner: { principal?: string; agent?: string; tenant?: string } = {},
  ): Promise<boolean> {
    const now = Date.now();
    const memory: SessionMemory = { sessionId, messages: [], steps: [], runs: [], updatedAt: now };
    const set = await this.redis.set(
      this.#key(sessionId, owner.tenant),
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
    const ownerKey = this.#ownerKey(sessionId, owner.tenant);
    await this.redis.multi().hset(ownerKey, fields).expire(ownerKey, this.retentionS).exec();
    return true;
  }

  #grantsKey(sessionId: string, tenant: string | undefined): string {
    return `${this.#key(sessionId, tenant)}:grants`;
  }

  /** Tools the session was granted (for the rest of the session); empty for none or no such session. */
  async grants(sessionId: string, tenant?: string): Promise<string[]> {
    return (await this.redis.smembers(this.#grantsKey(sessionId, tenant))).sort();
  }

  /** Grants the session these tools for the rest of it: runs started from now on may call them. */
  async addGrants(sessionId: string, tools: readonly string[], tenant?: string): Promise<void> {
    if (tools.length === 0) return;
    const key = this.#grantsKey(sessionId, tenant);
    await this.redis
      .multi()
      .sadd(key, ...tools)
      .expire(key, this.retentionS)
      .exec();
  }

  /** The session's owner and listing fields; undefined when the tenant has no such session. */
  async info(sessionId: string, tenant?: string): Promise<SessionInfo | undefined> {
    const [raw, owner] = await Promise.all([
      this.redis.get(this.#key(sessionId, tenant)),
      this.redis.hgetall(this.#ownerKey(sessionId, tenant)),
    ]);
    if (!raw) return undefined;
    const memory = parseMemory(sessionId, raw);
    const createdAt = Number(owner.created_at);
    return {
      sessionId,
      ...(owner.principal ? { principal: owner.principal } : {}),
      ...(owner.agent ? { agent: owner.agent } : {}),
      ...(owner.tenant || tenant ? { tenant: owner.tenant || tenant } : {}),
      ...(Number.isFinite(createdAt) && createdAt > 0 ? { createdAt } : {}),
      ...(owner.last_agent ? { lastAgent: owner.last_agent } : {}),
      runs: memory?.runs.filter((r) => typeof r === 'string') ?? [],
      updatedAt: typeof memory?.updatedAt === 'number' ? memory.updatedAt : 0,
    };
  }

  /**
   * The creating key of each of these sessions of `tenant` (undefined for a session without one, or
   * gone), read together: one HGET each, every session's owner on a slot of its own.
   */
  async owners(sessionIds: readonly string[], tenant?: string): Promise<Map<string, string | undefined>> {
    const ids = [...new Set(sessionIds)];
    const found = await Promise.all(
      ids.map((id) => this.redis.hget(this.#ownerKey(id, tenant), 'principal')),
    );
    return new Map(ids.map((id, i) => [id, found[i] ?? undefined]));
  }

  /**
   * Binds the session to `agent` unless it already has one (first message wins, atomically); returns the
   * session's agent afterwards.
   */
  async bindAgent(sessionId: string, agent: string, tenant?: string): Promise<string> {
    const key = this.#ownerKey(sessionId, tenant);
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
    const previous = await this.load(state.sessionId, state.tenant);
    const memory: SessionMemory = {
      sessionId: state.sessionId,
      messages: state.messages,
      ...(state.summary ? { summary: state.summary } : {}),
      steps: state.plan.steps,
      runs: [...(previous?.runs ?? []), state.runId].slice(-100),
      updatedAt: Date.now(),
    };
    // Two keys of two hash slots: two commands, not one transaction (the owner only needs its expiry kept).
    const owner = this.#ownerKey(state.sessionId, state.tenant);
    await Promise.all([
      this.redis.set(this.#key(state.sessionId, state.tenant), JSON.stringify(memory), 'EX', this.retentionS),
      // The next message goes on with the agent that answered this run (see docs/handoffs.md).
      state.inCharge && state.inCharge !== state.agent
        ? this.redis.hset(owner, 'last_agent', state.inCharge)
        : this.redis.hdel(owner, 'last_agent'),
    ]);
    await this.redis.expire(owner, this.retentionS);
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
