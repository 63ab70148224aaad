import { createKeys, DEFAULT_REDIS_READY_TIMEOUT_MS } from '@agent-reach/protocol';
import {
  duplicateRedis,
  createLogger,
  connectRedis,
  loadConfig,
  readFleetConfig,
  waitReady,
  type AgentReachConfig,
  type RedisClient,
} from '@agent-reach/shared';
import { RunControl } from '@agent-reach/scheduler';
// The CLI reads and writes runs in Redis itself (no HTTP API needed): the run store, the archive, the
// agent runner (for replays) and the model client are the scheduler's internals, taken on purpose.
import { AgentRunner, RunStore, llmFromConfig, openRunArchive } from '@agent-reach/scheduler/internal';

/** What most commands need: config, a Redis connection, the run API. Closed by `close()`. */
export interface CliContext {
  config: AgentReachConfig;
  redis: RedisClient;
  control: RunControl;
  /** A connection of its own subscribed to a pub/sub channel (the caller disconnects it). */
  subscribe(channel: string): Promise<RedisClient>;
  close(): Promise<void>;
}

export async function openContext(env: Record<string, string | undefined>): Promise<CliContext> {
  const config = loadConfig(env);
  // Connection errors are summed up by waitReady's one message, not logged as they come.
  const redis = connectRedis(config.redisUrl, 'producer', {
    cluster: config.redisCluster,
    logger: createLogger('cli', { level: 'silent' }),
  });
  try {
    await waitReady(redis, config.redisUrl, DEFAULT_REDIS_READY_TIMEOUT_MS);
  } catch (err) {
    redis.disconnect();
    throw err;
  }
  const keys = createKeys(config.keyPrefix);
  // With DATABASE_URL, runs Redis no longer has are read from the archive.
  const archive = openRunArchive(config, redis, keys);
  const control = new RunControl(
    redis,
    keys,
    new RunStore(redis, keys, archive ? { archive } : {}),
    archive?.store,
  );
  return {
    config,
    redis,
    control,
    async subscribe(channel) {
      const sub = duplicateRedis(redis, { lazyConnect: false, enableOfflineQueue: true });
      sub.on('error', () => undefined);
      await sub.subscribe(channel);
      return sub;
    },
    async close() {
      await control.close();
      await archive?.close();
      await redis.quit().catch(() => undefined);
    },
  };
}

/** An agent runner for in-process work (replay): needs executors serving the agents' tools. */
export async function openRunner(ctx: CliContext): Promise<{ runner: AgentRunner; store: RunStore }> {
  const keys = createKeys(ctx.config.keyPrefix);
  // The fleet's published configuration, as the schedulers use it; the local file only when none is.
  const fleet = await readFleetConfig({
    redis: ctx.redis,
    keys,
    file: ctx.config.agentsFile,
    logger: createLogger('cli', { level: 'silent' }),
  });
  const runner = await AgentRunner.start({
    connection: ctx.redis,
    keys,
    agents: fleet.agents,
    llm: ctx.config.llm.apiKey || ctx.config.llm.baseUrl ? llmFromConfig(ctx.config) : placeholderLlm(),
    logger: createLogger('cli', { level: ctx.config.logLevel === 'info' ? 'warn' : ctx.config.logLevel }),
    catalogWaitMs: 5000,
  });
  return { runner, store: ctx.control.store };
}

function placeholderLlm() {
  const fail = () => Promise.reject(new Error('no model configured'));
  return { model: 'none', complete: fail, completeJson: fail };
}
