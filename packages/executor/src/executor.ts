import path from 'node:path';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { createKeys, type Keys, type ToolDefinition } from '@agent-reach/protocol';
import {
  constants,
  createLogger,
  createMetrics,
  connectRedis,
  LiveConfig,
  registerConfigMetrics,
  startAfterRedis,
  ToolRegistry,
  type AgentReachConfig,
  type Logger,
  type MetricsServer,
  type RedisClient,
} from '@agent-reach/shared';
import { newExecutorId } from './executor-id.js';
import { createGroupLimiter, type GroupLimiter } from './group-limits.js';
import { servedGroups, type ServedGroups } from './served-groups.js';
import { createOpenApiSources, type OpenApiSources } from './sources/openapi/openapi-sources.js';
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
  /** The configuration's OpenAPI sources: what each serves and its problems. */
  readonly openApi: Pick<OpenApiSources, 'status'>;
  readonly metricsPort: number;
  readonly logger: Logger;
  close(): Promise<void>;
}

export interface ExecutorOptions {
  extraTools?: ToolDefinition[] | ((deps: ToolModuleDeps) => ToolDefinition[]);
  logger?: Logger;
  lockDurationMs?: number;
  stalledIntervalMs?: number;
  /** How often the executor re-announces what it serves, in ms (default 2000). */
  heartbeatIntervalMs?: number;
  /** How long an announcement counts after its heartbeat, in ms (default 10 000). */
  announcementTtlMs?: number;
  /** Where the OpenAPI sources' credentials are read from (`auth.env`). Default: none (`main.ts` passes the process's). */
  env?: Readonly<Record<string, string | undefined>>;
  /** Limits of MCP server connections. */
  mcp?: McpSourceOptions;
}

/** {@link ExecutorOptions} with every default filled in. */
export interface ResolvedExecutorOptions {
  /** The tools beside the demo tools, made once Redis answers. */
  extraTools: (deps: ToolModuleDeps) => ToolDefinition[];
  logger: Logger;
  /** Left to the tool worker's own defaults when undefined. */
  lockDurationMs: number | undefined;
  stalledIntervalMs: number | undefined;
  heartbeatIntervalMs: number | undefined;
  announcementTtlMs: number | undefined;
  env: Readonly<Record<string, string | undefined>>;
  /** Resolved by the MCP source itself. */
  mcp: McpSourceOptions | undefined;
}

export function resolveExecutorOptions(
  config: AgentReachConfig,
  o: ExecutorOptions = {},
): ResolvedExecutorOptions {
  const extraTools = o.extraTools ?? [];
  return {
    extraTools: typeof extraTools === 'function' ? extraTools : () => extraTools,
    logger: o.logger ?? createLogger('executor', { level: config.logLevel }),
    lockDurationMs: o.lockDurationMs,
    stalledIntervalMs: o.stalledIntervalMs,
    heartbeatIntervalMs: o.heartbeatIntervalMs,
    announcementTtlMs: o.announcementTtlMs,
    env: o.env ?? {},
    mcp: o.mcp,
  };
}

interface ServingDeps {
  redis: RedisClient;
  logger: Logger;
  metricsRegistry: Registry;
  server: MetricsServer;
}

/**
 * Starts a complete executor from a config: Redis, the registry (demo tools plus `extraTools`), the
 * agents file, the tool workers for the configured groups and `/metrics`. Started while Redis is away, it
 * waits for Redis (its `/readyz` answering 503) and starts serving when it answers. With groups named, it
 * needs nothing of another group: that group's MCP servers and OpenAPI sources are not started or read,
 * and the agents' tool names are checked against the whole fleet's catalog by the schedulers and
 * `config check`, not against one executor's registry.
 */
export async function startExecutor(
  config: AgentReachConfig,
  options: ExecutorOptions = {},
): Promise<ExecutorProcess> {
  const resolved = resolveExecutorOptions(config, options);
  const logger = resolved.logger;
  // Named so that operators (and chaos tests) can tell this process's connections apart in CLIENT LIST.
  const redis = connectRedis(config.redisUrl, 'worker', {
    cluster: config.redisCluster,
    connectionName: `${config.keyPrefix}-executor`,
  });
  const metricsRegistry = new Registry();
  // Served before Redis answers: a process started during an outage reports itself alive, not ready.
  return await startAfterRedis(
    redis,
    config.redisUrl,
    logger,
    { registry: metricsRegistry, port: config.executor.metricsPort, host: config.metricsHost },
    (server) => startServing(config, resolved, { redis, logger, metricsRegistry, server }),
  );
}

/** The parts of a serving executor that follow the fleet's configuration as it changes. */
interface ServingParts {
  live: LiveConfig;
  worker: ToolWorker;
  mcp: McpSource;
  limiter: GroupLimiter;
  openApi: OpenApiSources;
  served: ServedGroups;
  logger: Logger;
}

/** The executor once Redis answers: the registry, the agents file, the tool workers. */
async function startServing(
  config: AgentReachConfig,
  options: ResolvedExecutorOptions,
  { redis, logger, metricsRegistry, server }: ServingDeps,
): Promise<ExecutorProcess> {
  const keys = createKeys(config.keyPrefix);
  const served = servedGroups(config.executor.groups);
  // Tools of groups not served stay registered: announced, a call of theirs that no executor serves is
  // answered unavailable rather than unknown.
  const registry = new ToolRegistry().register(
    ...createDemoTools({ redis, keys, outputsDir: config.outputsDir }),
    ...options.extraTools({ redis, keys }),
  );
  // Other executors may serve the tools an agent names: the fleet's catalog is checked by the schedulers.
  const live = await LiveConfig.start({ redis, keys, file: config.agentsFile, logger });
  // Relative OpenAPI document paths start beside the agents file, for a published version too.
  collectDefaultMetrics({ register: metricsRegistry, prefix: 'agent_reach_executor_' });
  const metrics = createMetrics(metricsRegistry);
  const openApi = createOpenApiSources({
    registry,
    logger,
    baseDir: path.dirname(path.resolve(config.agentsFile)),
    env: options.env,
    onResponse: (tool, status) => metrics.openApiResponses.inc({ tool, status: String(status) }),
  });
  await openApi.apply(served.toolGroups(live.current().agents.document.tool_groups));
  registerConfigMetrics(metricsRegistry, live);
  // Made once the worker is: it mounts the servers of the groups the worker serves (a list that grows).
  const late: { mcp?: McpSource } = {};
  const worker = createToolWorker({
    ...toolWorkerOptions(config, options),
    connection: redis,
    registry,
    // Read at each call: a tool removed from an agent is refused from the next call on.
    agents: live.agents,
    keys,
    logger,
    metrics,
    sources: () => late.mcp?.report() ?? { withdrawn: [], mcpServers: [] },
  });
  // Groups of the MCP servers configured are served too when no groups are named.
  worker.serveNewGroups(served.mcpServers(live.current().agents.document).map((m) => m.group));
  const mcp = new McpSource(
    {
      registry,
      groups: worker.groups,
      env: options.env,
      redis,
      keys,
      logger,
      metrics,
      agents: () => live.current().agents,
    },
    options.mcp,
  );
  late.mcp = mcp;
  const limiter = createGroupLimiter({ connection: redis, keys, groups: worker.groups, logger });
  await limiter.apply(live.current().agents.toolGroups);
  const parts: ServingParts = { live, worker, mcp, limiter, openApi, served, logger };
  const reapply = followConfig(parts);
  await mcp.apply(served.mcpServers(live.current().agents.document), live.current().version);
  followMcpServers(parts);
  await worker.publishCatalog();
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
    openApi,
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

/** The tool worker's settings from the configuration and the options (its defaults where neither says). */
function toolWorkerOptions(config: AgentReachConfig, options: ResolvedExecutorOptions) {
  return {
    executorId: newExecutorId(),
    ...(config.executor.groups ? { groups: config.executor.groups } : {}),
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
  };
}

/**
 * Keeps the group limits and the OpenAPI tools in step with the configuration, and announces MCP tools
 * as they come and go. Returns the timer that writes the limits again now and then.
 */
function followConfig({ live, worker, mcp, limiter, openApi, served, logger }: ServingParts): NodeJS.Timeout {
  live.onChange((next) => void limiter.apply(next.agents.toolGroups));
  live.onChange(
    (next) =>
      void openApi
        .apply(served.toolGroups(next.agents.document.tool_groups))
        .then(async (changed) => {
          if (!changed) return;
          if (worker.serveNewGroups().length > 0) await limiter.apply(live.current().agents.toolGroups);
          await worker.publishCatalog();
        })
        .catch((err: unknown) => logger.error({ err }, 'could not reload the openapi sources')),
  );
  // Written again now and then: queue metadata that Redis lost (a restart without persistence) comes back.
  const reapply = setInterval(
    () => void limiter.apply(live.current().agents.toolGroups),
    constants.GROUP_LIMITS_REAPPLY_MS,
  );
  reapply.unref();
  // Tools of MCP servers are announced as they come and go, not only at the next heartbeat.
  mcp.onChange(() => void worker.publishCatalog().catch(() => undefined));
  return reapply;
}

/** Starts and stops MCP servers (and serves their groups) as the configuration names them. */
function followMcpServers({ live, worker, mcp, limiter, served }: ServingParts): void {
  live.onChange((next) => {
    const servers = served.mcpServers(next.agents.document);
    if (worker.serveNewGroups(servers.map((m) => m.group)).length > 0)
      void limiter.apply(next.agents.toolGroups);
    void mcp.apply(servers, next.version);
  });
}
