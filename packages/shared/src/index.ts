export * as constants from './constants.js';
export {
  AgentReachError,
  ToolError,
  transientError,
  noResult,
  isNoResult,
  TOOL_ERROR_KINDS,
  RETRYABLE_KINDS,
  BREAKER_FAILURE_KINDS,
  ERROR_CODES,
} from './errors.js';
export type { ToolErrorKind, ToolErrorInfo, ErrorCode, NoResult, HandlerErrorKind } from './errors.js';
export { defineTool, StringEnum } from './tool.js';
export { Type } from '@sinclair/typebox';
export type { Static, TSchema } from '@sinclair/typebox';
export type { ToolContext, ToolOptions, ToolDefinition, RetryOptions } from './tool.js';
export { ToolRegistry, toOpenAiSpec, createAjv } from './registry.js';
export type { RegisteredTool, ToolCatalogEntry, OpenAiToolSpec } from './registry.js';
export { checkArguments, exampleFor } from './arguments.js';
export type { ArgumentsCheck } from './arguments.js';
export { closestName } from './suggest.js';
export { toolJobId, errorResult } from './job.js';
export type { ToolCallJob, ToolResult } from './job.js';
export { createKeys } from './keys.js';
export { argumentsDigest, callLedgerEntry, matchesLedger } from './call-ledger.js';
export type { CallLedgerEntry } from './call-ledger.js';
export type { Keys } from './keys.js';
export { createRedis, waitReady, maskUrl, reconnectDelayMs } from './redis.js';
export type { CreateRedisOptions } from './redis.js';
export { createLogger } from './logger.js';
export type { Logger } from './logger.js';
export {
  createMetrics,
  createSchedulerMetrics,
  METRIC_PREFIX,
  DURATION_BUCKETS_S,
  RUN_DURATION_BUCKETS_S,
  BREAKER_STATE_VALUE,
} from './metrics.js';
export type { Metrics, SchedulerMetrics } from './metrics.js';
export { loadConfig, deepFreeze } from './config.js';
export type { AgentReachConfig } from './config.js';
export { loadAgents, parseAgents, parseAgentsCheck } from './agents.js';
export type { AgentSpec, AgentsFile } from './agents.js';
export { isOpen } from './breaker-state.js';
export { liveAnnouncements, redisTimeMs } from './executor-presence.js';
export type { ExecutorAnnouncement } from './executor-presence.js';
export type { BreakerSnapshot, BreakerState } from './breaker-state.js';
export { startMetricsServer } from './metrics-server.js';
export {
  RUN_ID_PATTERN,
  RESERVED_RUN_IDS,
  isValidRunId,
  isSafeId,
  PROTOTYPE_KEYS,
  TOOL_CALL_ID_PATTERN,
  SESSION_ID_PATTERN,
  runJobOptions,
} from './run-wire.js';
export { RUN_JOB_SCHEMA, runJobProblems } from './run-job-schema.js';
export { API_ERROR_CODES } from './api-error-codes.js';
export type { ApiErrorCode } from './api-error-codes.js';
export { parseJsonSafely } from './safe-json.js';
export type { RunJobData } from './run-wire.js';
export { exitOnSignals } from './shutdown.js';
export { redisUnavailable } from './redis-errors.js';
