export * as constants from './constants.js';
export { ToolRegistry, toOpenAiSpec, createAjv, createLenientAjv } from './tools/registry.js';
export type { RegisteredTool, ToolCatalogEntry, OpenAiToolSpec } from './tools/registry.js';
export { checkArguments, exampleFor, valueProblem } from './tools/arguments.js';
export type { ArgumentsCheck, ValueProblem } from './tools/arguments.js';
export {
  answerJson,
  checkOutput,
  fitsStrictMode,
  outputPathProblem,
  outputSchemaProblems,
  responseFormatFor,
} from './config/output-schema.js';
export type {
  JsonSchemaResponseFormat,
  OutputCheck,
  OutputProblem,
  OutputSchema,
} from './config/output-schema.js';
export { closestName } from './tools/suggest.js';
export { argumentsDigest, callLedgerEntry, matchesLedger } from './fleet/call-ledger.js';
export type { CallLedgerEntry } from './fleet/call-ledger.js';
export {
  createRedis,
  connectRedis,
  duplicateRedis,
  waitForRedis,
  waitReady,
  maskUrl,
  reconnectDelayMs,
  redisMasters,
  isCluster,
} from './redis/connection.js';
export { redisNodeUrls } from './redis/node-urls.js';
export type { CreateRedisOptions, RedisClient } from './redis/connection.js';
export { redisScripts } from './redis/scripts.js';
export type { RedisScripts } from './redis/scripts.js';
export { createLogger } from './observability/logger.js';
export type { Logger } from './observability/logger.js';
export {
  createMetrics,
  createSchedulerMetrics,
  registerConfigMetrics,
  METRIC_PREFIX,
  DURATION_BUCKETS_S,
  RUN_DURATION_BUCKETS_S,
  BREAKER_STATE_VALUE,
} from './observability/metrics.js';
export type { Metrics, SchedulerMetrics } from './observability/metrics.js';
export { loadConfig, deepFreeze } from './config/config.js';
export type { AgentReachConfig } from './config/config.js';
export { loadAgents, parseAgents, parseAgentsCheck } from './config/agents.js';
export {
  DEFAULT_PROVIDER,
  NO_PROVIDERS,
  declaredModels,
  loadProviders,
  parseProviders,
  providersFileOf,
} from './config/providers.js';
export type { ModelPrice, ProviderSpec, ProvidersFile } from './config/providers.js';
export {
  agentReachProperties,
  aliasProblems,
  applyAliases,
  foldAliases,
  grantRefusal,
  reachDefinition,
  scopeRefusal,
  SCOPE_PATTERN,
  toolDefaultsSchema,
  toolReachProperties,
} from './tools/reach-policy.js';
export type {
  AgentReach,
  ArgumentAliases,
  FoldedAliases,
  ToolDefaults,
  ToolReachSettings,
} from './tools/reach-policy.js';
export type { AgentSpec, AgentsFile, ConfigDocument, ToolGroupLimits } from './config/agents.js';
export { TOPIC_POLICIES } from './config/agent-policy.js';
export type {
  AgentLoopSettings,
  AgentPolicy,
  ContextProviderSpec,
  TopicPolicy,
} from './config/agent-policy.js';
export {
  declaredOpenApiTools,
  openApiSourceProblems,
  openApiSourcesSchema,
  openApiToolName,
  OPENAPI_METHOD_PATH_PATTERN,
} from './config/openapi-config.js';
export type {
  DeclaredOpenApiTool,
  OpenApiAuthSpec,
  OpenApiSourceSpec,
  OpenApiToolPolicy,
} from './config/openapi-config.js';
export {
  MCP_NAME_SEPARATOR,
  inMcpNamespace,
  mcpServerProblems,
  mcpServersOf,
  mcpServersSchema,
  pinAnnouncedDigests,
} from './config/mcp-config.js';
export type { McpServerSpec, McpToolOverride, MountedMcpServer } from './config/mcp-config.js';
export {
  findCycle,
  loadWorkflows,
  parseWorkflows,
  parseWorkflowsDocument,
  renderNodeInput,
  templateRefs,
  workflowsFileOf,
  workflowsPathOf,
} from './config/workflows.js';
export type {
  NodeOutput,
  OnTimeout,
  WorkflowDocument,
  WorkflowCheckOptions,
  WorkflowNodeSpec,
  WorkflowSpec,
  WorkflowsFile,
} from './config/workflows.js';
export { createWorkflowMetrics } from './observability/workflow-metrics.js';
export type { WorkflowMetrics } from './observability/workflow-metrics.js';
export { isOpen } from './fleet/breaker-state.js';
export { liveAnnouncements, redisTimeMs } from './fleet/executor-presence.js';
export type {
  ExecutorAnnouncement,
  McpServerStatus,
  SourcesReport,
  WithdrawnTool,
} from './fleet/executor-presence.js';
export type { BreakerSnapshot, BreakerState } from './fleet/breaker-state.js';
export { startMetricsServer } from './observability/metrics-server.js';
export { startAfterRedis, type MetricsServer } from './process/start-after-redis.js';
export { parseJsonSafely } from './redis/safe-json.js';
export { closeWithinGrace, exitOnSignals, type GracefulClose } from './process/shutdown.js';
export { TIMED_OUT, waitAtMost } from './process/timed-wait.js';
export { redisUnavailable } from './redis/unavailable.js';
export { runJobOptions, runRetryDelayMs } from './fleet/run-job-options.js';
export { runJobProblems } from './fleet/run-job-schema.js';
export {
  LiveConfig,
  parseConfigDocument,
  publishConfig,
  readConfigFile,
  readFleetConfig,
  readPublishedConfig,
  readConfigHistory,
  readConfigVersion,
  CONFIG_HISTORY_LENGTH,
  configDigest,
} from './config/live-config.js';
export type {
  FleetConfig,
  PublishedConfig,
  LiveConfigOptions,
  WorkflowsSource,
} from './config/live-config.js';
export {
  TRACER_NAME,
  tracer,
  otelTraceId,
  runSpanId,
  runTraceContext,
  withRunTrace,
  emitRunSpan,
  traceCarrier,
  carriedContext,
  failSpan,
  activeSpanEvent,
  SpanKind,
} from './observability/tracing.js';
export type { TracedRun, RunSpan, Span } from './observability/tracing.js';
