export * as constants from './constants.js';
export { ToolRegistry, toOpenAiSpec, createAjv, createLenientAjv } from './registry.js';
export type { RegisteredTool, ToolCatalogEntry, OpenAiToolSpec } from './registry.js';
export { checkArguments, exampleFor, valueProblem } from './arguments.js';
export type { ArgumentsCheck, ValueProblem } from './arguments.js';
export {
  answerJson,
  checkOutput,
  fitsStrictMode,
  outputPathProblem,
  outputSchemaProblems,
  responseFormatFor,
} from './output-schema.js';
export type { JsonSchemaResponseFormat, OutputCheck, OutputProblem, OutputSchema } from './output-schema.js';
export { closestName } from './suggest.js';
export { argumentsDigest, callLedgerEntry, matchesLedger } from './call-ledger.js';
export type { CallLedgerEntry } from './call-ledger.js';
export {
  createRedis,
  connectRedis,
  duplicateRedis,
  waitForRedis,
  waitReady,
  redisMasters,
  isCluster,
} from './redis.js';
export type { CreateRedisOptions, RedisClient } from './redis.js';
export { redisScripts } from './scripts.js';
export type { RedisScripts } from './scripts.js';
export { createLogger } from './logger.js';
export type { Logger } from './logger.js';
export {
  createMetrics,
  createSchedulerMetrics,
  registerConfigMetrics,
  METRIC_PREFIX,
  DURATION_BUCKETS_S,
  RUN_DURATION_BUCKETS_S,
  BREAKER_STATE_VALUE,
} from './metrics.js';
export type { Metrics, SchedulerMetrics } from './metrics.js';
export { loadConfig, deepFreeze } from './config.js';
export type { AgentReachConfig } from './config.js';
export { loadAgents, parseAgents, parseAgentsCheck } from './agents.js';
export {
  DEFAULT_PROVIDER,
  NO_PROVIDERS,
  declaredModels,
  loadProviders,
  parseProviders,
  providersFileOf,
} from './providers.js';
export type { ModelPrice, ProviderSpec, ProvidersFile } from './providers.js';
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
} from './reach-policy.js';
export type {
  AgentReach,
  ArgumentAliases,
  FoldedAliases,
  ToolDefaults,
  ToolReachSettings,
} from './reach-policy.js';
export type { AgentSpec, AgentsFile, ConfigDocument, ToolGroupLimits } from './agents.js';
export { TOPIC_POLICIES } from './agent-policy.js';
export type { AgentLoopSettings, AgentPolicy, ContextProviderSpec, TopicPolicy } from './agent-policy.js';
export {
  declaredOpenApiTools,
  openApiSourceProblems,
  openApiSourcesSchema,
  openApiToolName,
  OPENAPI_METHOD_PATH_PATTERN,
} from './openapi-config.js';
export type {
  DeclaredOpenApiTool,
  OpenApiAuthSpec,
  OpenApiSourceSpec,
  OpenApiToolPolicy,
} from './openapi-config.js';
export {
  MCP_NAME_SEPARATOR,
  inMcpNamespace,
  mcpServerProblems,
  mcpServersOf,
  mcpServersSchema,
  pinAnnouncedDigests,
} from './mcp-config.js';
export type { McpServerSpec, McpToolOverride, MountedMcpServer } from './mcp-config.js';
export {
  findCycle,
  loadWorkflows,
  parseWorkflows,
  parseWorkflowsDocument,
  renderNodeInput,
  templateRefs,
  workflowsFileOf,
  workflowsPathOf,
} from './workflows.js';
export type {
  NodeOutput,
  OnTimeout,
  WorkflowDocument,
  WorkflowCheckOptions,
  WorkflowNodeSpec,
  WorkflowSpec,
  WorkflowsFile,
} from './workflows.js';
export { createWorkflowMetrics } from './workflow-metrics.js';
export type { WorkflowMetrics } from './workflow-metrics.js';
export { isOpen } from './breaker-state.js';
export { liveAnnouncements, redisTimeMs } from './executor-presence.js';
export type {
  ExecutorAnnouncement,
  McpServerStatus,
  SourcesReport,
  WithdrawnTool,
} from './executor-presence.js';
export type { BreakerSnapshot, BreakerState } from './breaker-state.js';
export { startMetricsServer } from './metrics-server.js';
export { startAfterRedis, type MetricsServer } from './start-after-redis.js';
export { parseJsonSafely } from './safe-json.js';
export { closeWithinGrace, exitOnSignals, type GracefulClose } from './shutdown.js';
export { TIMED_OUT, waitAtMost } from './timed-wait.js';
export { redisUnavailable } from './redis-errors.js';
export { runJobProblems } from './run-job-schema.js';
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
} from './live-config.js';
export type { FleetConfig, PublishedConfig, LiveConfigOptions, WorkflowsSource } from './live-config.js';
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
} from './tracing.js';
export type { TracedRun, RunSpan, Span } from './tracing.js';
