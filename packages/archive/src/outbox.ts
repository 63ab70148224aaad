import type { Keys } from '@agent-reach/protocol';
import type { RedisClient } from '@agent-reach/shared';

/**
 * The archive's outbox: a sorted set of run ids, each scored by the time (epoch ms) it is due. A run is
 * put there before its final checkpoint is written (so a crash in between cannot lose it); an archiver
 * claims due entries by pushing their score a visibility timeout ahead, and removes them only once the
 * archive committed the run. One key on a hash tag of its own (`{archive}`), so it is one slot in a cluster.
 */
export const outboxKey = (keys: Pick<Keys, 'prefix'>): string => `${keys.prefix}:{archive}:outbox`;

/** A hash of the outbox's slot: run id → tries an archiver made at it (`n`) and since when its record was missing. */
export const triesKey = (keys: Pick<Keys, 'prefix'>): string => `${keys.prefix}:{archive}:tries`;

/** A hash of the outbox's slot: run id → the dead letter of a run the archive refused every try (JSON). */
export const deadLetterKey = (keys: Pick<Keys, 'prefix'>): string => `${keys.prefix}:{archive}:dead`;

/** A run the archive refused `ARCHIVE_MAX_TRIES` times, set aside with its last error; its record stays in Redis. */
export interface DeadLetter {
  runId: string;
  error: string;
  tries: number;
  /** When it was set aside, epoch ms. */
  at: number;
}

/** How long after its hand-off a finished run is due: its final checkpoint lands well before. */
export const OUTBOX_GRACE_MS = 1000;

/**
 * KEYS[1] outbox; ARGV now (ms), visibility timeout (ms), batch size.
 * Returns the due ids, each now hidden until now + visibility timeout.
 */
const CLAIM_LUA = `
local now = tonumber(ARGV[1])
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[3]))
local due = now + tonumber(ARGV[2])
for _, id in ipairs(ids) do redis.call('ZADD', KEYS[1], 'XX', due, id) end
return ids
`;

type ClaimCommand = (key: string, now: number, visibilityMs: number, n: number) => Promise<string[]>;

export class Outbox {
  readonly key: string;
  readonly triesKey: string;
  readonly deadKey: string;

  constructor(
    private readonly redis: RedisClient,
    keys: Pick<Keys, 'prefix'>,
  ) {
    this.key = outboxKey(keys);
    this.triesKey = triesKey(keys);
    this.deadKey = deadLetterKey(keys);
    const commands = redis as unknown as Record<string, unknown>;
    if (typeof commands.agentReachArchiveClaim !== 'function')
      redis.defineCommand('agentReachArchiveClaim', { numberOfKeys: 1, lua: CLAIM_LUA });
  }

  /** Hands a run over to the archive (idempotent: a run handed twice is one entry). */
  async add(runId: string, dueAt = Date.now() + OUTBOX_GRACE_MS): Promise<void> {
    await this.redis.zadd(this.key, dueAt, runId);
  }

  /** Claims up to `n` due runs for `visibilityMs`; unacknowledged, they are due again after it. */
  claim(n: number, visibilityMs: number, now = Date.now()): Promise<string[]> {
    const claim = (this.redis as unknown as { agentReachArchiveClaim: ClaimCommand }).agentReachArchiveClaim;
    return claim.call(this.redis, this.key, now, visibilityMs, n);
  }

  /** Puts runs back to be looked at again at `dueAt` (a run not finished yet). */
  async defer(runIds: readonly string[], dueAt: number): Promise<void> {
    if (runIds.length === 0) return;
    await this.redis.zadd(this.key, 'XX', ...runIds.flatMap((id) => [dueAt, id]));
  }

  /** Removes archived runs from the outbox (and what was counted of their tries). */
  async ack(runIds: readonly string[]): Promise<void> {
    if (runIds.length === 0) return;
    await this.redis
      .multi()
      .zrem(this.key, ...runIds)
      .hdel(this.triesKey, ...runIds.flatMap((id) => [id, `${id}:missing`, `${id}:waited`]))
      .exec();
  }

  /**
   * Counts one more try at a run (`refused`: PostgreSQL refused its row; `waited`: it had no final record
   * yet); returns how many of that kind were made.
   */
  async tried(runId: string, kind: 'refused' | 'waited' = 'refused'): Promise<number> {
    return await this.redis.hincrby(this.triesKey, kind === 'refused' ? runId : `${runId}:waited`, 1);
  }

  /** When a run's record was first found missing (epoch ms), recording `now` the first time. */
  async missingSince(runId: string, now = Date.now()): Promise<number> {
    const field = `${runId}:missing`;
    await this.redis.hsetnx(this.triesKey, field, String(now));
    return Number((await this.redis.hget(this.triesKey, field)) ?? now);
  }

  /** Sets a run aside: out of the outbox, into the dead letters with its error (one transaction). */
  async deadLetter(letter: DeadLetter): Promise<void> {
    await this.redis
      .multi()
      .hset(this.deadKey, letter.runId, JSON.stringify(letter))
      .zrem(this.key, letter.runId)
      .hdel(this.triesKey, letter.runId, `${letter.runId}:missing`, `${letter.runId}:waited`)
      .exec();
  }

  /** The dead letters, oldest first; with `runId`, that run's only. */
  async deadLetters(runId?: string): Promise<DeadLetter[]> {
    const raw =
      runId === undefined
        ? Object.values(await this.redis.hgetall(this.deadKey))
        : [await this.redis.hget(this.deadKey, runId)].filter((x): x is string => x !== null);
    return raw.map((x) => JSON.parse(x) as DeadLetter).sort((a, b) => a.at - b.at);
  }

  /** Puts dead-lettered runs back in the outbox (after the cause was fixed); returns how many. */
  async retryDead(runIds: readonly string[], dueAt = Date.now()): Promise<number> {
    let n = 0;
    for (const id of runIds) {
      if ((await this.redis.hdel(this.deadKey, id)) === 0) continue;
      await this.redis.zadd(this.key, dueAt, id);
      n += 1;
    }
    return n;
  }

  /** Runs set aside. */
  deadCount(): Promise<number> {
    return this.redis.hlen(this.deadKey);
  }

  /** Runs waiting to be archived (due or claimed). */
  size(): Promise<number> {
    return this.redis.zcard(this.key);
  }

  /** When the entry due first is (or was) due, epoch ms; undefined for an empty outbox. */
  async firstDueAt(): Promise<number | undefined> {
    const [, score] = await this.redis.zrange(this.key, 0, 0, 'WITHSCORES');
    return score === undefined ? undefined : Number(score);
  }
}
