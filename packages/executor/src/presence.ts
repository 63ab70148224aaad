import type { Redis } from 'ioredis';
import type { Keys } from '@agent-reach/protocol';
import type { Logger, ToolRegistry } from '@agent-reach/shared';

/**
 * One heartbeat: prune announcements past their expiry (Redis server time), write this executor's with a
 * fresh one, and keep the hash itself alive at least as long. The announcement JSON is written with
 * `expiresAt` first so that the pruning can read it without decoding.
 * KEYS: catalog hash. ARGV: executor id, TTL in ms, announcement JSON without `expiresAt`.
 */
const HEARTBEAT_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local expires = tonumber(string.match(all[i + 1], '^{"expiresAt":(%d+),'))
  if expires == nil or expires <= now then redis.call('HDEL', KEYS[1], all[i]) end
end
redis.call('HSET', KEYS[1], ARGV[1], '{"expiresAt":' .. string.format('%d', now + ttl) .. ',' .. string.sub(ARGV[3], 2))
if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
return now
`;

type PresenceClient = Redis & {
  agentReachHeartbeat(key: string, executorId: string, ttlMs: number, body: string): Promise<number>;
};

export interface PresenceOptions {
  /** A connection of this process's own (the heartbeat script is defined on it). */
  client: Redis;
  keys: Keys;
  executorId: string;
  groups: readonly string[];
  registry: ToolRegistry;
  intervalMs: number;
  ttlMs: number;
  logger: Logger;
}

export interface Presence {
  /** Announces now; resolves when Redis has it. */
  beat(): Promise<void>;
  /** Stops the heartbeat and withdraws the announcement, so schedulers stop counting on this process. */
  stop(): Promise<void>;
}

/**
 * Announces what this executor serves (its groups, every tool it registers) in the fleet catalog, again
 * every `intervalMs`, each announcement valid for `ttlMs`: a Redis that lost its data has the catalog
 * back within one interval, and the tools of an executor that died age out after the TTL.
 */
export function startPresence(options: PresenceOptions): Presence {
  const { keys, executorId, logger } = options;
  const client = options.client as PresenceClient;
  if (!client.agentReachHeartbeat) {
    client.defineCommand('agentReachHeartbeat', { numberOfKeys: 1, lua: HEARTBEAT_LUA });
  }
  const body = JSON.stringify({
    executorId,
    groups: options.groups,
    tools: options.registry.catalog(),
  });
  let pending: Promise<void> | undefined;
  let failing = false;
  let stopped = false;
  const beat = (): Promise<void> =>
    (pending ??= client
      .agentReachHeartbeat(keys.catalog, executorId, options.ttlMs, body)
      .then(() => {
        if (failing) logger.info({ executorId }, 'announcing again');
        failing = false;
      })
      .finally(() => {
        pending = undefined;
      }));
  const timer = setInterval(() => {
    // A beat still waiting (Redis away) is not doubled: one is enough to come back.
    if (pending || stopped) return;
    beat().catch((err: unknown) => {
      if (!failing) logger.warn({ err, executorId }, 'cannot announce this executor');
      failing = true;
    });
  }, options.intervalMs);
  timer.unref();
  return {
    beat,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await client.hdel(keys.catalog, executorId).catch(() => undefined);
    },
  };
}
