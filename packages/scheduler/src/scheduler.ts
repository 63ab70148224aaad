import { collectDefaultMetrics, Registry } from 'prom-client';
import { AgentReachError, createKeys } from '@agent-reach/protocol';
import {
  constants,
  createSchedulerMetrics,
  createWorkflowMetrics,
  createLogger,
  connectRedis,
  LiveConfig,
  loadProviders,
  registerConfigMetrics,
  workflowsPathOf,
  startAfterRedis,
  waitForRedis,
  type AgentReachConfig,
  type AgentsFile,
  type Logger,
  type MetricsServer,
  type RedisClient,
  type WorkflowsFile,
} from '@agent-reach/shared';
import { AgentRunner } from './runs/agent-runner.js';
import { startApiServer, type ApiServer } from './api/index.js';
import type { RunEvent } from './agent-loop/events.js';
import type { RunState } from './agent-loop/run-state.js';
import { createLlmClient, type LlmClient } from './model/llm.js';
import { ModelProviders } from './model/providers.js';
import { createProviderMetrics } from './model/provider-metrics.js';
import { recordProviderMetrics } from './runs/provider-run-metrics.js';
import { startQueueSampler } from './fleet/queue-sampler.js';
import { recordRunMetrics } from './runs/run-metrics.js';
import { RunControl } from './runs/run-control.js';
import { RunStore } from './runs/run-store.js';
import { openRunArchive } from './runs/run-archive.js';
import { createRunWorker, type RunWorker } from './runs/run-worker.js';
import { SessionStore } from './runs/sessions.js';
import { createWorkflowWorker, type WorkflowWorker } from './workflows/coordinator.js';
import { WorkflowControl } from './workflows/workflow-control.js';

export interface SchedulerProcess {
  readonly runner: AgentRunner;
  readonly metricsRegistry: Registry;
  readonly control: RunControl;
  readonly worker: RunWorker;
  /** The fleet's configuration as this process holds it. */
  readonly config: LiveConfig;
  readonly workflows: WorkflowControl;
  /** The workflow coordinator of this process. */
  readonly coordinator: WorkflowWorker;
  readonly metricsPort: number;
  /** The HTTP API's base URL; undefined when the scheduler serves no API (no `API_KEYS`). */
  readonly apiUrl: string | undefined;
  readonly logger: Logger;
  close(): Promise<void>;
}

export interface SchedulerOptions {
  logger?: Logger;
  llm?: LlmClient;
  onEvent?: (e: RunEvent, s: RunState) => void;
  /** The environment provider API keys are read from (`api_key_env`); default: none set. */
  env?: Record<string, string | undefined>;
}

interface ServingDeps {
  redis: RedisClient;
  logger: Logger;
  llm: LlmClient;
  providers: ModelProviders;
  metricsRegistry: Registry;
  server: MetricsServer;
}

/** How often the catalog of tools is re-read, so tools of executors started later become offerable. */
const CATALOG_REFRESH_MS = 10_000;

/** The model client a config describes, or a CONFIG_INVALID error saying how to configure one. */
export function llmFromConfig(config: AgentReachConfig, model?: string): LlmClient {
  const { apiKey, baseUrl } = config.llm;
  if (!apiKey && !baseUrl) {
    throw new AgentReachError(
      'CONFIG_INVALID',
      'no model configured: set OPENAI_API_KEY (and OPENAI_BASE_URL for another OpenAI-compatible endpoint, e.g. llm-sim)',
    );
  }
  return createLlmClient({
    apiKey: apiKey ?? 'not-needed',
    ...(baseUrl ? { baseURL: baseUrl } : {}),
    model: model ?? config.llm.model ?? constants.DEFAULT_LLM_MODEL,
    timeoutMs: config.scheduler.llmTimeoutMs,
    maxRetries: config.scheduler.llmMaxRetries,
    maxOutputTokens: config.scheduler.maxOutputTokens,
    stream: config.scheduler.llmStream,
  });
}

/**
 * Starts a scheduler: a BullMQ worker on `agent-runs` that owns the agent loop of each run, checkpoints
 * it in Redis after every step and serves `/metrics` and `/readyz`. Started while Redis is away, it waits
 * for Redis (its `/readyz` answering 503) and starts serving when it answers.
 */
export async function startScheduler(
  config: AgentReachConfig,
  options: SchedulerOptions = {},
): Promise<SchedulerProcess> {
  const logger = options.logger ?? createLogger('scheduler', { level: config.logLevel });
  // A missing model is a configuration error: said at once, not after waiting for Redis.
  const llm = options.llm ?? llmFromConfig(config);
  const metricsRegistry = new Registry();
  const defaultModel = config.llm.model ?? constants.DEFAULT_LLM_MODEL;
  const providers = new ModelProviders({
    config,
    file: loadProviders(config),
    defaultClient: (model) => (model === defaultModel ? llm : llmFromConfig(config, model)),
    logger,
    metrics: createProviderMetrics(metricsRegistry),
    ...(options.env ? { env: options.env } : {}),
  });
  // Schedulers queue commands through a reconnect rather than fail a run over a dropped connection.
  const redis = connectRedis(config.redisUrl, 'worker', {
    cluster: config.redisCluster,
    connectionName: `${config.keyPrefix}-scheduler`,
  });
  // Served before Redis answers: a process started during an outage reports itself alive, not ready.
  return await startAfterRedis(
    redis,
    config.redisUrl,
    logger,
    { registry: metricsRegistry, port: config.scheduler.metricsPort, host: config.metricsHost },
    (server) => startServing(config, options, { redis, logger, llm, providers, metricsRegistry, server }),
  );
}

/** The scheduler once Redis answers: the agents file, the run and workflow workers, the API. */
async function startServing(
  config: AgentReachConfig,
  options: SchedulerOptions,
  { redis, logger, llm, providers, metricsRegistry, server }: ServingDeps,
): Promise<SchedulerProcess> {
  const keys = createKeys(config.keyPrefix);
  // A local workflows file with a cycle, an unknown agent or dependency stops the scheduler here: no
  // workflow of it can ever start. One that does not exist yet declares none until it is created.
  const live = await LiveConfig.start({
    redis,
    keys,
    file: config.agentsFile,
    workflowsFile: workflowsPathOf(config),
    logger,
  });
  // Views that answer from the configuration in force: agents and workflows change without a restart.
  const agents = live.agents;
  const configVersion = () => live.current().version;
  const agentProblems = [...agents.agents.values()].flatMap((a) => providers.agentProblems(a));
  if (agentProblems.length > 0)
    throw new AgentReachError('CONFIG_INVALID', agentProblems.join('\n'), { details: agentProblems });
  // A run asks its job's model (else its agent's), then its agent's fallbacks, through their providers.
  const llmFor = (model: string | undefined, agent: string) => {
    const spec = agents.agents.get(agent);
    if (model === undefined && spec?.model === undefined && !spec?.fallback?.length && !providers.routed)
      return undefined;
    return providers.clientFor(providers.modelsOf(spec, model));
  };
  const runner = await AgentRunner.start({
    connection: redis,
    keys,
    agents,
    configVersion,
    llm,
    logger,
    limits: {
      compactionThresholdTokens: config.scheduler.compactionThresholdTokens,
      tokenBudget: config.scheduler.runTokenBudget,
      outputRetries: config.scheduler.outputRetries,
    },
    runDeadlineMs: config.scheduler.runDeadlineMs,
    toolStartWaitMs: config.scheduler.toolStartWaitMs,
  });
  const refresh = setInterval(() => {
    runner.catalog.refresh().catch((err: unknown) => logger.warn({ err }, 'catalog refresh failed'));
  }, CATALOG_REFRESH_MS);
  refresh.unref();
  collectDefaultMetrics({ register: metricsRegistry, prefix: 'agent_reach_scheduler_' });
  const record = recordRunMetrics(createSchedulerMetrics(metricsRegistry));
  const recordProviders = recordProviderMetrics(providers.metrics);
  registerConfigMetrics(metricsRegistry, live);
  const archive = openRunArchive(config, redis, keys, logger);
  const store = new RunStore(redis, keys, {
    retentionS: config.scheduler.runRetentionS,
    retentionCount: config.scheduler.runRetentionCount,
    ...(archive ? { archive } : {}),
  });
  const worker = createRunWorker({
    connection: redis,
    runner,
    store,
    sessions: new SessionStore(redis, keys, config.scheduler.runRetentionS),
    logger,
    llmFor,
    concurrency: config.scheduler.concurrency,
    lockDurationMs: config.scheduler.lockDurationMs,
    stalledIntervalMs: config.scheduler.stalledIntervalMs,
    approvalTimeoutMs: config.scheduler.approvalTimeoutMs,
    retentionS: config.scheduler.runRetentionS,
    onEvent: (event, state) => {
      record(event, state);
      recordProviders(event, state);
      options.onEvent?.(event, state);
    },
  });
  const control = new RunControl(redis, keys, store, archive?.store);
  const workflows = new WorkflowControl(redis, keys, live.workflows, {
    retentionS: config.scheduler.runRetentionS,
    configVersion,
  });
  const coordinator = createWorkflowWorker({
    connection: redis,
    workflows,
    runs: control,
    logger,
    metrics: createWorkflowMetrics(metricsRegistry),
    lockDurationMs: config.scheduler.lockDurationMs,
    stalledIntervalMs: config.scheduler.stalledIntervalMs,
    retentionS: config.scheduler.runRetentionS,
  });
  // A node run that ended wakes its workflow's coordinator, so that dependants start at once.
  const wakeWorkflow = (job: { data?: { metadata?: Record<string, string> } } | undefined) => {
    const workflowId = job?.data?.metadata?.workflow_id;
    if (workflowId)
      workflows
        .wake(workflowId)
        .catch((err: unknown) => logger.warn({ err, workflowId }, 'workflow wake failed'));
  };
  worker.worker.on('completed', wakeWorkflow);
  worker.worker.on('failed', wakeWorkflow);
  // One scheduler of the fleet (the lease holder) samples the depth of the runs queue and of every tool
  // group's queue the catalog knows (the default group always).
  const sampler = startQueueSampler({
    redis,
    keys,
    registry: metricsRegistry,
    queues: () => [
      keys.runsQueue,
      ...new Set(
        [constants.DEFAULT_TOOL_GROUP, ...runner.catalog.names().map((n) => runner.catalog.group(n))].map(
          (group) => keys.toolQueue(group),
        ),
      ),
    ],
    intervalMs: config.scheduler.queueSampleIntervalMs,
    logger,
  });
  const api =
    config.api.keys.length > 0
      ? await startApi(config, {
          runner,
          agents,
          workflows: live.workflows,
          configVersion,
          metricsRegistry,
          logger,
          allowedModels: [...providers.allowed],
        })
      : undefined;
  logger.info(
    {
      agents: [...agents.agents.keys()],
      configVersion: live.current().version,
      metricsPort: server.port,
      apiUrl: api?.server.url,
    },
    'scheduler started',
  );
  return {
    runner,
    metricsRegistry,
    control,
    worker,
    config: live,
    workflows,
    coordinator,
    metricsPort: server.port,
    apiUrl: api?.server.url,
    logger,
    async close() {
      clearInterval(refresh);
      // First: no new runs from HTTP, and open event streams end.
      await api?.close();
      await sampler.stop();
      await coordinator.close();
      await worker.close(config.scheduler.shutdownGraceMs);
      await workflows.close();
      await control.close();
      await runner.close();
      providers.close();
      await live.close();
      await server.close();
      await archive?.close();
      await redis.quit().catch(() => undefined);
      logger.info('scheduler stopped');
    },
  };
}

/**
 * The HTTP API of a scheduler, on a connection of its own that fails fast (a caller hears of a Redis
 * outage at once instead of waiting on a queued command).
 */
async function startApi(
  config: AgentReachConfig,
  deps: {
    runner: AgentRunner;
    agents: AgentsFile;
    workflows: WorkflowsFile;
    configVersion: () => number;
    metricsRegistry: Registry;
    logger: Logger;
    /** Models callers may name: the default provider's and the declared ones. */
    allowedModels: string[];
  },
): Promise<{ server: ApiServer; close(): Promise<void> }> {
  const redis: RedisClient = connectRedis(config.redisUrl, 'producer', {
    cluster: config.redisCluster,
    connectionName: `${config.keyPrefix}-api`,
    // A paused or stuck Redis answers 503 after this, instead of holding the request.
    commandTimeout: config.api.redisTimeoutMs,
  });
  await waitForRedis(redis, config.redisUrl, deps.logger);
  const keys = createKeys(config.keyPrefix);
  const retention = {
    retentionS: config.scheduler.runRetentionS,
    retentionCount: config.scheduler.runRetentionCount,
  };
  const archive = openRunArchive(config, redis, keys, deps.logger);
  const control = new RunControl(
    redis,
    keys,
    new RunStore(redis, keys, { ...retention, ...(archive ? { archive } : {}) }),
    archive?.store,
  );
  const workflows = new WorkflowControl(redis, keys, deps.workflows, {
    retentionS: retention.retentionS,
    configVersion: deps.configVersion,
  });
  // BullMQ checks the Redis version once per connection and keeps a failure for good: let the check end
  // before the server's set-up holds the event loop longer than the command timeout.
  await control.queue.waitUntilReady();
  const a = config.api;
  const server = await startApiServer(
    {
      control,
      workflows,
      sessions: new SessionStore(redis, keys, config.scheduler.runRetentionS),
      runner: deps.runner,
      agents: deps.agents,
      redis,
      keys,
      metricsRegistry: deps.metricsRegistry,
      logger: deps.logger,
    },
    {
      apiKeys: a.keys.map((k) => ({
        name: k.name,
        key: k.key,
        ...(k.agents ? { agents: k.agents } : {}),
        ...(k.tenants ? { tenants: k.tenants } : {}),
      })),
      port: a.port,
      host: a.host,
      openHealth: a.openHealth,
      openMetrics: a.openMetrics,
      rateLimitPerMinute: a.rateLimitPerMinute,
      bodyLimitBytes: a.bodyLimitBytes,
      trustProxy: a.trustProxy,
      allowedModels: deps.allowedModels,
      maxInputTokens: a.maxInputTokens,
      redisTimeoutMs: a.redisTimeoutMs,
      tenantQuotas: config.tenantQuotas,
    },
  );
  return {
    server,
    async close() {
      await server.close();
      await workflows.close();
      await control.close();
      await archive?.close();
      await redis.quit().catch(() => undefined);
    },
  };
}
