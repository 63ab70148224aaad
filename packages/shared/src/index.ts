/**
 * `@agent-reach/shared`: the Node runtime kit of the platform's processes, room by room. Only what the
 * other packages use is here, with the types its signatures name; the rest of each room is its own (the
 * lint config refuses imports of shared's files). The OpenTelemetry SDK has its own entry,
 * `@agent-reach/shared/tracing-sdk`, so that importing this one never loads it.
 */

// Every behaviour-changing default, with its unit in the name.
export * as constants from './constants.js';

// config/: the environment, the agents/providers/workflows files, MCP and OpenAPI sources, published versions.
export { loadConfig } from './config/config.js';
export type { AgentReachConfig } from './config/config.js';
export { loadAgents, parseAgents, parseAgentsCheck, pinAnnouncedDigests } from './config/agents.js';
export type { AgentSpec, AgentsFile, ConfigDocument, ToolGroupLimits } from './config/agents.js';
export type {
  AgentLoopSettings,
  AgentPolicy,
  ContextProviderSpec,
  TopicPolicy,
} from './config/agent-policy.js';
export {
  guardrailCheck,
  guardrailTools,
  piiDetectors,
  runsInParallel,
  toolPatternMatches,
  GUARDRAIL_CHECKS,
  PII_DETECTORS,
} from './config/guardrails-config.js';
export type {
  AgentGuardrails,
  GuardrailCheck,
  GuardrailOnError,
  GuardrailSpec,
  PiiDetector,
  ToolGuardrailSpec,
  ToolGuardrailStage,
} from './config/guardrails-config.js';
export { handoffTargets, handoffToolName, reachRefusal } from './config/handoff-config.js';
export { variantAgent, variantProblems } from './config/agent-variant.js';
export type { VariantCheckContext } from './config/agent-variant.js';
export { DEFAULT_VARIANT_CEILINGS, type VariantCeilings } from './config/variant-limits.js';
export { agentToolName, agentToolTargets } from './config/agent-tools-config.js';
export type { AgentTools, AgentToolSpec } from './config/agent-tools-config.js';
export type {
  AgentHandoffs,
  HandoffInputFilter,
  HandoffReach,
  HandoffSpec,
} from './config/handoff-config.js';
export {
  DEFAULT_PROVIDER,
  declaredModels,
  loadProviders,
  NO_PROVIDERS,
  parseProviders,
  providersFileOf,
  providersPathOf,
  undeclaredModels,
} from './config/providers.js';
export type { ModelPrice, ProviderSpec, ProvidersFile } from './config/providers.js';
export { loadWorkflows, renderNodeInput, workflowsFileOf, workflowsPathOf } from './config/workflows.js';
export type {
  NodeOutput,
  OnTimeout,
  WorkflowCheckOptions,
  WorkflowDocument,
  WorkflowNodeSpec,
  WorkflowSpec,
  WorkflowsFile,
} from './config/workflows.js';
export { answerJson, checkOutput, outputSchemaProblems, responseFormatFor } from './config/output-schema.js';
export type {
  JsonSchemaResponseFormat,
  OutputCheck,
  OutputProblem,
  OutputSchema,
} from './config/output-schema.js';
export { MCP_NAME_SEPARATOR, mcpServersOf } from './config/mcp-config.js';
export type { McpServerSpec, McpToolOverride, MountedMcpServer } from './config/mcp-config.js';
export { openApiToolName, OPENAPI_METHOD_PATH_PATTERN } from './config/openapi-config.js';
export type { OpenApiAuthSpec, OpenApiSourceSpec, OpenApiToolPolicy } from './config/openapi-config.js';
export {
  CONFIG_HISTORY_LENGTH,
  LiveConfig,
  parseConfigDocument,
  publishConfig,
  readConfigFile,
  readConfigHistory,
  readConfigVersion,
  readFleetConfig,
  readPublishedConfig,
} from './config/live-config.js';
export type {
  FleetConfig,
  LiveConfigOptions,
  PublishedConfig,
  WorkflowsSource,
} from './config/live-config.js';

// tools/: the registry of tools, argument checks, reach policy (scopes, grants, aliases), name guesses.
export { createAjv, createLenientAjv, ToolRegistry } from './tools/registry.js';
export type { OpenAiToolSpec, RegisteredTool, ToolCatalogEntry } from './tools/registry.js';
export { checkArguments } from './tools/arguments.js';
export type { ArgumentsCheck, ValueProblem } from './tools/arguments.js';
export { foldAliases, grantRefusal, reachDefinition, scopeRefusal } from './tools/reach-policy.js';
export { withRunAliases } from './tools/run-aliases.js';
export type {
  AgentReach,
  ArgumentAliases,
  FoldedAliases,
  ToolDefaults,
  ToolReachSettings,
} from './tools/reach-policy.js';
export { closestName } from './tools/suggest.js';

// fleet/: what the fleet's processes read of each other: presence, breakers, the call ledger, run jobs.
export { catalogChannel, liveAnnouncements, mcpServerState, redisTimeMs } from './fleet/executor-presence.js';
export type {
  ExecutorAnnouncement,
  McpServerState,
  McpServerStatus,
  SourcesReport,
  WithdrawnTool,
} from './fleet/executor-presence.js';
export { isOpen } from './fleet/breaker-state.js';
export type { BreakerSnapshot, BreakerState } from './fleet/breaker-state.js';
export { argumentsDigest, callLedgerEntry, callStartField, matchesLedger } from './fleet/call-ledger.js';
export type { CallLedgerEntry } from './fleet/call-ledger.js';
export { runJobProblems } from './fleet/run-job-schema.js';

// observability/: the process's logger, Prometheus metrics and their server, run trace spans.
export { createLogger } from './observability/logger.js';
export type { Logger } from './observability/logger.js';
export {
  BREAKER_STATE_VALUE,
  createMetrics,
  createSchedulerMetrics,
  METRIC_PREFIX,
  registerConfigMetrics,
} from './observability/metrics.js';
export type { Metrics, SchedulerMetrics } from './observability/metrics.js';
export { createWorkflowMetrics } from './observability/workflow-metrics.js';
export type { WorkflowMetrics } from './observability/workflow-metrics.js';
export { startMetricsServer } from './observability/metrics-server.js';
export {
  activeSpanEvent,
  carriedContext,
  emitRunSpan,
  failSpan,
  NO_SPAN,
  runTraceContext,
  SpanKind,
  traceCarrier,
  tracer,
  tracingEnabled,
  withRunTrace,
} from './observability/tracing.js';
export type { RunSpan, Span, TracedRun } from './observability/tracing.js';

// process/: a process's life: started once Redis answers, waits with a deadline, a graceful shutdown.
export { startAfterRedis, type MetricsServer } from './process/start-after-redis.js';
export { TIMED_OUT, waitAtMost } from './process/timed-wait.js';
export { closeWithinGrace, exitOnSignals, type GracefulClose } from './process/shutdown.js';

// redis/: connections (one node or a cluster), the Lua scripts, outage errors, records parsed safely.
export {
  connectRedis,
  createRedis,
  duplicateRedis,
  isCluster,
  redisMasters,
  waitForRedis,
  waitReady,
} from './redis/connection.js';
export type { CreateRedisOptions, RedisClient } from './redis/connection.js';
export { redisScripts } from './redis/scripts.js';
export type { RedisScripts } from './redis/scripts.js';
export { redisUnavailable } from './redis/unavailable.js';
export { parseJsonSafely } from './redis/safe-json.js';
