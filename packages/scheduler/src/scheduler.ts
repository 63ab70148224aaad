import { collectDefaultMetrics, Registry } from 'prom-client';
import { AgentReachError, createKeys, type Keys, type VariantOverrides } from '@agent-reach/protocol';
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
  type AgentSpec,
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
import { defaultModelOf, ModelProviders } from './model/providers.js';
import { createProviderMetrics } from './model/provider-metrics.js';
import { recordProviderMetrics } from './runs/provider-run-metrics.js';
import { startQueueSampler, type QueueSampler } from './fleet/queue-sampler.js';
import { recordRunMetrics } from './runs/run-metrics.js';
import { RunControl } from './runs/run-control.js';
import { RunStore } from './runs/run-store.js';
import { openRunArchive } from './runs/run-archive.js';
import { createRunWorker, type RunWorker } from './runs/run-worker.js';
import { SessionStore } from './runs/sessions.js';
import { createWorkflowWorker, type WorkflowWorker } from './workflows/coordinator.js';
import { WorkflowControl } from './workflows/workflow-control.js';
import { resolveCallbackConfig, type CallbackConfig } from './callbacks/callback-config.js';
import { CallbackDeliveries } from './callbacks/callback-deliveries.js';
import { loadInboundEvents, type InboundEventsConfig } from './triggers/inbound-events.js';

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

/** The scheduler's options with every default filled in from the configuration. */
type ResolvedSchedulerOptions = SchedulerOptions & Required<Pick<SchedulerOptions, 'logger' | 'llm'>>;

/**
 * Every default of the scheduler in one place: a logger at the configured level, the configured model.
 * A missing model is a configuration error: said at once, not after waiting for Redis.
 */
function resolveSchedulerOptions(config: AgentReachConfig, o: SchedulerOptions): ResolvedSchedulerOptions {
  return {
    ...o,
    logger: o.logger ?? createLogger('scheduler', { level: config.logLevel }),
    llm: o.llm ?? llmFromConfig(config),
  };
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
    model: model ?? defaultModelOf(config),
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
  schedulerOptions: SchedulerOptions = {},
): Promise<SchedulerProcess> {
  const options = resolveSchedulerOptions(config, schedulerOptions);
  const { logger, llm } = options;
  const metricsRegistry = new Registry();
  const defaultModel = defaultModelOf(config);
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
  providers.shareLimits(redis, config.keyPrefix);
  // Served before Redis answers: a process started during an outage reports itself alive, not ready.
  return await startAfterRedis(
    redis,
    config.redisUrl,
    logger,
    { registry: metricsRegistry, port: config.scheduler.metricsPort, host: config.metricsHost },
    (server) => startServing(config, options, { redis, logger, llm, providers, metricsRegistry, server }),
  );
}

/** What the parts of a serving scheduler are built from. */
interface ServingContext extends ServingDeps {
  config: AgentReachConfig;
  options: SchedulerOptions;
  keys: Keys;
  /** The configuration in force: agents and workflows change without a restart. */
  live: LiveConfig;
  configVersion: () => number;
  /** Signing secrets, allowed hosts and retries of callbacks (`CALLBACK_*` of `options.env`). */
  callbackConfig: CallbackConfig;
}

/** The scheduler once Redis answers: the agents file, the run and workflow workers, the API. */
async function startServing(
  config: AgentReachConfig,
  options: SchedulerOptions,
  deps: ServingDeps,
): Promise<SchedulerProcess> {
  const { redis, logger, metricsRegistry, server } = deps;
  const keys = createKeys(config.keyPrefix);
  // A local workflows file with a cycle, an unknown agent or dependency stops the scheduler here: no
  // workflow of it can ever start. One that does not exist yet declares none until it is created.
  const live = await LiveConfig.start({
    redis,
    keys,
    file: config.agentsFile,
    workflowsFile: workflowsPathOf(config),
    logger,
    // A version whose providers this scheduler cannot serve, or whose agents name undeclared models, is
    // refused as an invalid one is: the version in force stays.
    accept: (next) =>
      deps.providers.check(next.providers ?? deps.providers.local, next.agents.agents.values()),
  });
  const ctx: ServingContext = {
    ...deps,
    config,
    options,
    keys,
    live,
    configVersion: () => live.current().version,
    callbackConfig: resolveCallbackConfig(options.env, config.scheduler.runRetentionS),
  };
  serveProviders(ctx);
  const runner = await startRunner(ctx);
  const refresh = setInterval(() => {
    runner.catalog.refresh().catch((err: unknown) => logger.warn({ err }, 'catalog refresh failed'));
  }, CATALOG_REFRESH_MS);
  refresh.unref();
  collectDefaultMetrics({ register: metricsRegistry, prefix: 'agent_reach_scheduler_' });
  registerConfigMetrics(metricsRegistry, live);
  const archive = openRunArchive(config, redis, keys, logger);
  const store = new RunStore(redis, keys, {
    ...retentionOf(config),
    ...(archive ? { archive } : {}),
  });
  const callbacks = new CallbackDeliveries({
    connection: redis,
    keys,
    config: ctx.callbackConfig,
    logger,
    metricsRegistry,
  });
  callbacks.startSending();
  const worker = startRunWorker(ctx, runner, store, callbacks);
  const control = new RunControl(redis, keys, store, archive?.store);
  const workflows = new WorkflowControl(redis, keys, live.workflows, {
    retentionS: config.scheduler.runRetentionS,
    configVersion: ctx.configVersion,
  });
  const coordinator = startCoordinator(ctx, workflows, control, worker, callbacks);
  const sampler = startFleetSampler(ctx, runner);
  const api = config.api.keys.length > 0 ? await startServingApi(ctx, runner) : undefined;
  const parts: ServingParts = {
    refresh,
    api,
    sampler,
    coordinator,
    worker,
    workflows,
    control,
    runner,
    archive,
    callbacks,
  };
  logger.info(
    {
      agents: [...live.agents.agents.keys()],
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
    close: () => closeServing(ctx, parts),
  };
}

/** The HTTP API over the agents and workflows in force, for the models the providers allow. */
function startServingApi(ctx: ServingContext, runner: AgentRunner): ReturnType<typeof startApi> {
  return startApi(ctx.config, {
    runner,
    agents: ctx.live.agents,
    workflows: ctx.live.workflows,
    configVersion: ctx.configVersion,
    metricsRegistry: ctx.metricsRegistry,
    logger: ctx.logger,
    allowedModels: ctx.providers.allowed,
    callbackConfig: ctx.callbackConfig,
    // An optional file: one that does not exist declares no events.
    events: loadInboundEvents(ctx.options.env?.EVENTS_FILE, ctx.options.env ?? {}, (file) =>
      ctx.logger.warn({ file }, 'EVENTS_FILE does not exist: no inbound events are declared'),
    ),
  });
}

/** What a serving scheduler closes, in the order it closes them. */
interface ServingParts {
  refresh: NodeJS.Timeout;
  api: { close(): Promise<void> } | undefined;
  sampler: QueueSampler;
  coordinator: WorkflowWorker;
  worker: RunWorker;
  workflows: WorkflowControl;
  control: RunControl;
  runner: AgentRunner;
  archive: { close(): Promise<void> } | undefined;
  callbacks: CallbackDeliveries;
}

async function closeServing(ctx: ServingContext, parts: ServingParts): Promise<void> {
  clearInterval(parts.refresh);
  // First: no new runs from HTTP, and open event streams end.
  await parts.api?.close();
  await parts.sampler.stop();
  await parts.coordinator.close();
  await parts.worker.close(ctx.config.scheduler.shutdownGraceMs);
  await parts.callbacks.close();
  await parts.workflows.close();
  await parts.control.close();
  await parts.runner.close();
  ctx.providers.close();
  await ctx.live.close();
  await ctx.server.close();
  await parts.archive?.close();
  await ctx.redis.quit().catch(() => undefined);
  ctx.logger.info('scheduler stopped');
}

/** How long runs are kept, and how many the index holds, as the configuration says. */
function retentionOf(config: AgentReachConfig): {
  retentionS: number;
  retentionCount: number;
  stateFormat: 'delta' | 'whole';
} {
  return {
    retentionS: config.scheduler.runRetentionS,
    retentionCount: config.scheduler.runRetentionCount,
    stateFormat: config.scheduler.checkpointFormat,
  };
}

/**
 * Serves the providers of the configuration in force (a version's, else the local providers file) and
 * follows each new version's. Every agent's models must have a provider: a configuration error at start,
 * not at a run's first turn.
 */
function serveProviders({ live, providers, logger }: ServingContext): void {
  const file = live.current().providers ?? providers.local;
  providers.check(file, live.agents.agents.values());
  providers.apply(file);
  live.onChange((next) => {
    try {
      providers.apply(next.providers ?? providers.local);
    } catch (err) {
      logger.error({ err, configVersion: next.version }, 'model providers of the new version refused');
    }
  });
}

/** The agent runner, once the fleet's catalog holds every tool the agents name. */
function startRunner(ctx: ServingContext): Promise<AgentRunner> {
  const { config } = ctx;
  return AgentRunner.start({
    connection: ctx.redis,
    keys: ctx.keys,
    agents: ctx.live.agents,
    configVersion: ctx.configVersion,
    llm: ctx.llm,
    logger: ctx.logger,
    limits: {
      compactionThresholdTokens: config.scheduler.compactionThresholdTokens,
      tokenBudget: config.scheduler.runTokenBudget,
      outputRetries: config.scheduler.outputRetries,
    },
    runDeadlineMs: config.scheduler.runDeadlineMs,
    toolStartWaitMs: config.scheduler.toolStartWaitMs,
    tenantQuotas: config.tenantQuotas,
    maxOutputTokens: config.scheduler.maxOutputTokens,
    ...keyAgentsOf(config.api.keys),
  });
}

/**
 * The agents each API key may use, by its name, for the reach rule a run's calls are checked against:
 * undefined for a key of every agent, and for a name no key has (an inbound event's runs, which may use
 * every agent; a key removed since, of which nothing is known any more). A scheduler without keys serves
 * no API and knows none: the doors' check at a run's start stands alone.
 */
function keyAgentsOf(keys: AgentReachConfig['api']['keys']): {
  keyAgents?: (key: string) => ReadonlySet<string> | undefined;
} {
  if (keys.length === 0) return {};
  const byName = new Map(keys.map((k) => [k.name, k.agents ? new Set(k.agents) : undefined]));
  return { keyAgents: (key) => byName.get(key) };
}

/** The run worker on `agent-runs`, its events recorded as metrics and handed to the caller's `onEvent`. */
function startRunWorker(
  ctx: ServingContext,
  runner: AgentRunner,
  store: RunStore,
  callbacks: CallbackDeliveries,
): RunWorker {
  const { config, providers, options } = ctx;
  const agents = ctx.live.agents;
  // A run asks its job's model (else its agent's), then its agent's fallbacks, through their providers.
  const llmFor = (
    model: string | undefined,
    agent: string,
    variant?: Pick<VariantOverrides, 'model' | 'fallback'>,
  ) => {
    const own = agents.agents.get(agent);
    // A run's variant names its model and fallbacks in place of its agent's.
    const spec = own && variant ? { ...own, ...pickModels(variant) } : own;
    if (model === undefined && spec?.model === undefined && !spec?.fallback?.length && providers.plain)
      return undefined;
    return providers.clientFor(providers.modelsOf(spec, model));
  };
  const record = recordRunMetrics(createSchedulerMetrics(ctx.metricsRegistry));
  const recordProviders = recordProviderMetrics(providers.metrics);
  return createRunWorker({
    connection: ctx.redis,
    runner,
    store,
    sessions: new SessionStore(ctx.redis, ctx.keys, config.scheduler.runRetentionS),
    logger: ctx.logger,
    llmFor,
    concurrency: config.scheduler.concurrency,
    lockDurationMs: config.scheduler.lockDurationMs,
    stalledIntervalMs: config.scheduler.stalledIntervalMs,
    approvalTimeoutMs: config.scheduler.approvalTimeoutMs,
    retentionS: config.scheduler.runRetentionS,
    callbacks,
    onEvent: (event, state) => {
      record(event, state);
      recordProviders(event, state);
      options.onEvent?.(event, state);
    },
  });
}

/** The workflow coordinator, woken by every node run that ends. */
function startCoordinator(
  ctx: ServingContext,
  workflows: WorkflowControl,
  runs: RunControl,
  worker: RunWorker,
  callbacks: CallbackDeliveries,
): WorkflowWorker {
  const { config, logger } = ctx;
  const coordinator = createWorkflowWorker({
    connection: ctx.redis,
    workflows,
    runs,
    logger,
    metrics: createWorkflowMetrics(ctx.metricsRegistry),
    lockDurationMs: config.scheduler.lockDurationMs,
    stalledIntervalMs: config.scheduler.stalledIntervalMs,
    retentionS: config.scheduler.runRetentionS,
    callbacks,
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
  return coordinator;
}

/**
 * One scheduler of the fleet (the lease holder) samples the depth of the runs queue and of every tool
 * group's queue the catalog knows (the default group always).
 */
function startFleetSampler(ctx: ServingContext, runner: AgentRunner): QueueSampler {
  const { keys } = ctx;
  return startQueueSampler({
    redis: ctx.redis,
    keys,
    registry: ctx.metricsRegistry,
    queues: () => [
      keys.runsQueue,
      ...new Set(
        [constants.DEFAULT_TOOL_GROUP, ...runner.catalog.names().map((n) => runner.catalog.group(n))].map(
          (group) => keys.toolQueue(group),
        ),
      ),
    ],
    intervalMs: ctx.config.scheduler.queueSampleIntervalMs,
    logger: ctx.logger,
  });
}

/** The API server's options as the configuration gives them. */
function apiOptionsOf(
  config: AgentReachConfig,
  allowedModels: ReadonlySet<string>,
): Parameters<typeof startApiServer>[1] {
  const a = config.api;
  return {
    apiKeys: a.keys.map((k) => ({
      name: k.name,
      key: k.key,
      ...(k.agents ? { agents: k.agents } : {}),
      ...(k.tenants ? { tenants: k.tenants } : {}),
      ...(k.variants === undefined ? {} : { variants: k.variants }),
    })),
    port: a.port,
    host: a.host,
    openHealth: a.openHealth,
    openMetrics: a.openMetrics,
    rateLimitPerMinute: a.rateLimitPerMinute,
    bodyLimitBytes: a.bodyLimitBytes,
    trustProxy: a.trustProxy,
    allowedModels,
    maxInputTokens: a.maxInputTokens,
    redisTimeoutMs: a.redisTimeoutMs,
    tenantQuotas: config.tenantQuotas,
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
    /** Models callers may name: the default provider's and the declared ones (kept current by them). */
    allowedModels: ReadonlySet<string>;
    callbackConfig: CallbackConfig;
    events: InboundEventsConfig;
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
  const retention = retentionOf(config);
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
  const callbacks = new CallbackDeliveries({
    connection: redis,
    keys,
    config: deps.callbackConfig,
    logger: deps.logger,
  });
  // BullMQ checks the Redis version once per connection and keeps a failure for good: let the check end
  // before the server's set-up holds the event loop longer than the command timeout.
  await control.queue.waitUntilReady();
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
      callbacks: { config: deps.callbackConfig, deliveries: callbacks },
      // Every scheduler with an API fires schedules: BullMQ hands each firing to one of them.
      triggers: {
        fireSchedules: true,
        lockDurationMs: config.scheduler.lockDurationMs,
        stalledIntervalMs: config.scheduler.stalledIntervalMs,
        events: deps.events,
      },
    },
    apiOptionsOf(config, deps.allowedModels),
  );
  return {
    server,
    async close() {
      await server.close();
      await workflows.close();
      await callbacks.close();
      await control.close();
      await archive?.close();
      await redis.quit().catch(() => undefined);
    },
  };
}

/** A variant's model and fallbacks, those it sets. */
function pickModels(v: Pick<VariantOverrides, 'model' | 'fallback'>): Pick<AgentSpec, 'model' | 'fallback'> {
  return { ...(v.model ? { model: v.model } : {}), ...(v.fallback ? { fallback: v.fallback } : {}) };
}
