import type { Keys } from '@agent-reach/protocol';
import {
  catalogChannel,
  redisScripts,
  type Logger,
  type ToolRegistry,
  type RedisClient,
  type SourcesReport,
} from '@agent-reach/shared';

export interface PresenceOptions {
  /** A connection of this process's own (the heartbeat script is defined on it). */
  client: RedisClient;
  keys: Keys;
  executorId: string;
  groups: readonly string[];
  registry: ToolRegistry;
  /** What tool sources report: tools registered but not served now, refused ones, MCP servers' states. */
  sources?: () => SourcesReport;
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
 * Announces what this executor serves (its groups, every tool it registers, its MCP servers' states) in
 * the fleet catalog, again every `intervalMs`, each announcement valid for `ttlMs`: a Redis that lost its
 * data has the catalog back within one interval, and the tools of an executor that died age out after the
 * TTL. An announcement that differs from the last one is also said on the catalog's channel, so that
 * schedulers follow a withdrawn tool or a server gone down before their next model turn.
 */
export function startPresence(options: PresenceOptions): Presence {
  const { keys, executorId, logger } = options;
  const { client } = options;
  const scripts = redisScripts(client);
  // Built at each beat: tool sources (MCP servers) change the registry while the process runs.
  const body = () => {
    const { withdrawn, mcpServers } = options.sources?.() ?? { withdrawn: [], mcpServers: [] };
    const hidden = new Set(withdrawn.map((w) => w.name));
    return JSON.stringify({
      executorId,
      groups: options.groups,
      tools: options.registry.catalog().filter((t) => !hidden.has(t.name)),
      ...(withdrawn.length > 0 ? { withdrawn } : {}),
      ...(mcpServers.length > 0 ? { mcpServers } : {}),
    });
  };
  let pending: Promise<void> | undefined;
  let failing = false;
  let stopped = false;
  /** The last announcement Redis has; undefined before the first. */
  let said: string | undefined;
  const channel = catalogChannel(keys);
  let queued: Promise<void> | undefined;
  const beat = (): Promise<void> => {
    // Asked while one is on its way (a tool withdrawn meanwhile): one more after it, saying what holds then.
    if (pending)
      return (queued ??= pending
        .catch(() => undefined)
        .then(() => {
          queued = undefined;
          return beat();
        }));
    const announced = body();
    pending = scripts
      .heartbeat([keys.catalog], [executorId, options.ttlMs, announced])
      .then(async () => {
        if (failing) logger.info({ executorId }, 'announcing again');
        failing = false;
        if (announced === said) return;
        said = announced;
        await client.publish(channel, executorId);
      })
      .finally(() => {
        pending = undefined;
      });
    return pending;
  };
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
