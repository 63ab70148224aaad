import type { Keys } from '@agent-reach/protocol';
import type { RedisClient } from '@agent-reach/shared';

/**
 * The archive's outbox: a sorted set of run ids, each scored by the time (epoch ms) it is due. A run is
 * put there before its final checkpoint is written (so a crash in between cannot lose it); an archiver
 * claims due entries by pushing their score a visibility timeout ahead, and removes them only once the
 * archive committed the run. One key on a hash tag of its own (`{archive}`), so it is one slot in a cluster.
 */
export const outboxKey = (keys: Pick<Keys, 'prefix'>): string => `${keys.prefix}:{archive}:outbox`;

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

  constructor(
    private readonly redis: RedisClient,
    keys: Pick<Keys, 'prefix'>,
  ) {
    this.key = outboxKey(keys);
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

  /** Removes archived runs from the outbox. */
  async ack(runIds: readonly string[]): Promise<void> {
    if (runIds.length > 0) await this.redis.zrem(this.key, ...runIds);
  }

  /** Runs waiting to be archived (due or claimed). */
  size(): Promise<number> {
    return this.redis.zcard(this.key);
  }
}
