import { collectDefaultMetrics, Registry } from 'prom-client';
import { createKeys, type Keys, type ToolDefinition } from '@agent-reach/protocol';
import {
  constants,
  createLogger,
  createMetrics,
  connectRedis,
  LiveConfig,
  mcpServersOf,
  registerConfigMetrics,
  startMetricsServer,
  ToolRegistry,
  waitReady,
  type AgentReachConfig,
  type Logger,
} from '@agent-reach/shared';
import { createGroupLimiter } from './group-limits.js';
import { McpSource, type McpSourceOptions } from './sources/mcp-source.js';
import { createToolWorker, type ToolWorker } from './tool-worker.js';
import { createDemoTools } from './tools/index.js';

/** What a tool module's factory receives. */
export interface ToolModuleDeps {
  redis: import('@agent-reach/shared').RedisClient;
  keys: import('@agent-reach/protocol').Keys;
}

export interface ExecutorProcess {
  readonly worker: ToolWorker;
  readonly registry: ToolRegistry;
  /** The MCP servers of the configuration in force, mounted as tools. */
  readonly mcp: McpSource;
  readonly keys: Keys;
  /** The fleet's configuration as this process holds it (agents, tool-group limits, version). */
  readonly config: LiveConfig;
  readonly metricsPort: number;
  readonly logger: Logger;
  close(): Promise<void>;
}

/**
 * Starts a complete executor from a config: Redis, the registry (demo tools plus `extraTools`), the agents
 * file (checked against the registry), the tool workers for the configured groups and `/metrics`.
 */
export async function startExecutor(
  config: AgentReachConfig,
  options: {
    extraTools?: ToolDefinition[] | ((deps: ToolModuleDeps) => ToolDefinition[]);
    logger?: Logger;
    lockDurationMs?: number;
    stalledIntervalMs?: number;
    /** How often the executor re-announces what it serves, in ms (default 2000). */
    heartbeatIntervalMs?: number;
    /** How long an announcement counts after its heartbeat, in ms (default 10 000). */
    announcementTtlMs?: number;
    /**
     * The environment MCP servers' `${VAR}` values and `headers_from_env` are read from (main passes the
     * process's). Default: none.
     */
    env?: Readonly<Record<string, string | undefined>>;
    /** Limits of MCP server connections. */
    mcp?: McpSourceOptions;
  } = {},
): Promise<ExecutorProcess> {
  const logger = options.logger ?? createLogger('executor', { level: config.logLevel });
  // Named so that operators (and chaos tests) can tell this process's connections apart in CLIENT LIST.
  const redis = connectRedis(config.redisUrl, 'worker', {
    cluster: config.redisCluster,
    connectionName: `${config.keyPrefix}-executor`,
  });
  await waitReady(redis, config.redisUrl);
  const keys = createKeys(config.keyPrefix);
  const registry = new ToolRegistry().register(
    ...createDemoTools({ redis, keys, outputsDir: config.outputsDir }),
    ...(typeof options.extraTools === 'function'
      ? options.extraTools({ redis, keys })
      : (options.extraTools ?? [])),
  );
  const live = await LiveConfig.start({
    redis,
    keys,
    file: config.agentsFile,
    logger,
    knownTools: registry.names(),
  });
  const metricsRegistry = new Registry();
  collectDefaultMetrics({ register: metricsRegistry, prefix: 'agent_reach_executor_' });
  const metrics = createMetrics(metricsRegistry);
  registerConfigMetrics(metricsRegistry, live);
  // Groups of the MCP servers configured at start are served too when no groups are named.
  const groups = config.executor.groups ?? [
    ...new Set([...registry.groups(), ...mcpServersOf(live.current().agents.document).map((s) => s.group)]),
  ];
  const mcp = new McpSource(
    { registry, groups, env: options.env ?? {}, redis, keys, logger, metrics },
    options.mcp,
  );
  const worker = createToolWorker({
    connection: redis,
    registry,
    // Read at each call: a tool removed from an agent is refused from the next call on.
    agents: live.agents,
    keys,
    logger,
    metrics,
    groups,
    sources: () => mcp.report(),
    concurrency: config.executor.concurrency,
    shutdownGraceMs: config.executor.shutdownGraceMs,
    breaker: {
      failureThreshold: config.executor.breakerFailureThreshold,
      resetTimeoutMs: config.executor.breakerResetTimeoutMs,
    },
    ...(options.lockDurationMs === undefined ? {} : { lockDurationMs: options.lockDurationMs }),
    ...(options.stalledIntervalMs === undefined ? {} : { stalledIntervalMs: options.stalledIntervalMs }),
    ...(options.heartbeatIntervalMs === undefined
      ? {}
      : { heartbeatIntervalMs: options.heartbeatIntervalMs }),
    ...(options.announcementTtlMs === undefined ? {} : { announcementTtlMs: options.announcementTtlMs }),
  });
  const limiter = createGroupLimiter({ connection: redis, keys, groups: worker.groups, logger });
  await limiter.apply(live.current().agents.toolGroups);
  live.onChange((next) => void limiter.apply(next.agents.toolGroups));
  // Written again now and then: queue metadata that Redis lost (a restart without persistence) comes back.
  const reapply = setInterval(
    () => void limiter.apply(live.current().agents.toolGroups),
    constants.GROUP_LIMITS_REAPPLY_MS,
  );
  reapply.unref();
  // Tools of MCP servers are announced as they come and go, not only at the next heartbeat.
  mcp.onChange(() => void worker.publishCatalog().catch(() => undefined));
  await mcp.apply(mcpServersOf(live.current().agents.document));
  live.onChange((next) => void mcp.apply(mcpServersOf(next.agents.document)));
  await worker.publishCatalog();
  const server = await startMetricsServer(metricsRegistry, config.executor.metricsPort, config.metricsHost);
  logger.info(
    {
      executorId: worker.executorId,
      groups: worker.groups,
      tools: registry.names(),
      metricsPort: server.port,
    },
    'executor started',
  );
  return {
    worker,
    registry,
    mcp,
    keys,
    config: live,
    metricsPort: server.port,
    logger,
    async close() {
      clearInterval(reapply);
      await live.close();
      await worker.close();
      await mcp.close();
      await limiter.close();
      await server.close();
      await redis.quit().catch(() => undefined);
      logger.info('executor stopped');
    },
  };
}
