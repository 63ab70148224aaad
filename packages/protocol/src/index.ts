// The wire contract of Agent-Reach: every shape that crosses Redis, HTTP or a process boundary, and
// nothing that needs Node at run time.
export { WIRE_VERSION, READABLE_VERSIONS, UnsupportedVersionError, checkVersion } from './version.js';
export {
  NAME_PATTERN,
  RUN_ID_PATTERN,
  TOOL_CALL_ID_PATTERN,
  TRACEPARENT_PATTERN,
  SESSION_ID_PATTERN,
  TENANT_PATTERN,
  DEFAULT_TENANT,
  RESERVED_RUN_IDS,
  PROTOTYPE_KEYS,
  isValidRunId,
  isSafeId,
  newRunId,
  newTraceId,
  newSessionId,
  newWorkflowId,
  RESULT_REF_PATTERN,
  newResultRef,
} from './ids.js';
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
export type {
  ToolContext,
  ToolLogger,
  ToolOptions,
  ToolDefinition,
  RetryOptions,
  ToolOrigin,
} from './tool.js';
export {
  toolJobId,
  errorResult,
  toolMessageContent,
  replyPrefix,
  serializeReply,
  parseReply,
  readToolCallJob,
} from './tool-call.js';
export type { AttemptTiming, ToolCallJob, ToolResult, ToolReply, TraceCarrier } from './tool-call.js';
export { readDecision, rejectedError, unconfirmedError } from './approvals.js';
export type { ApprovalDecision, RecordedDecision } from './approvals.js';
export {
  CALLBACK_EVENTS,
  MAX_CALLBACK_URL_CHARS,
  RUN_CALLBACK_SCHEMA,
  RUN_JOB_SCHEMA,
  runJob,
  upgradeRunJob,
} from './run-job.js';
export type { CallbackEventName, RunCallback, RunJobData } from './run-job.js';
export { PARENT_LINK_SCHEMA } from './parent-link.js';
export type { ParentLink } from './parent-link.js';
export {
  MAX_VARIANT_TOOL_EXAMPLES,
  RUN_VARIANT_SCHEMA,
  VARIANT_AGENT_FIELDS,
  VARIANT_NAME_PATTERN,
  VARIANT_OVERRIDE_KEYS,
} from './variant.js';
export type { RunVariant, VariantOverrides, VariantToolOverride } from './variant.js';
export { RUN_STATUSES, FINAL_STATUSES, isFinalStatus } from './run-status.js';
export type { RunStatus, FinalStatus } from './run-status.js';
export { readStepRecord, RUN_REASONS } from './run-outcome.js';
export {
  hasToolMessageRefs,
  resolveToolMessageRefs,
  toolMessageEntryPrefix,
  toolMessageOf,
  toolMessageRef,
  toolMessageRefOf,
  ToolMessageRefError,
} from './tool-message-refs.js';
export {
  foldStateRecord,
  applyStateDelta,
  StateDeltaWriter,
  StateRecordError,
  type StateDeltaLimits,
} from './state-record.js';
export type {
  TaskStep,
  CompactionSummary,
  StepRecord,
  StepResultKind,
  Usage,
  GuardName,
  RunOutcome,
  RunReason,
} from './run-outcome.js';
export { RUN_EVENT_TYPES, readEvent } from './events.js';
export type {
  AnswerDeltaEvent,
  GuardrailStage,
  RunEvent,
  RunEventBody,
  RunEventType,
  RunIntent,
} from './events.js';
export { API_ERRORS, API_ERROR_CODES, isApiErrorCode } from './api-errors.js';
export type { ApiErrorCode } from './api-errors.js';
export {
  MAX_IDEMPOTENCY_KEY_CHARS,
  DEFAULT_LIST_LIMIT,
  MAX_LIST_LIMIT,
  MAX_LIST_OFFSET,
  MAX_INPUT_CHARS,
  MAX_METADATA_ENTRIES,
  MAX_METADATA_VALUE_CHARS,
  STREAM_ID_PATTERN,
  ErrorResponse,
  RunParams,
  SessionParams,
  CreateRunBody,
  CreateRunHeaders,
  MessageBody,
  ListRunsQuery,
  EventsHeaders,
  DecisionBody,
  CreateSessionBody,
  RunSummaryView,
  RunView,
  RunList,
  DeadLetterList,
  DecisionView,
  SessionView,
  SessionDetailView,
  AgentList,
  Health,
  Ready,
  OutputSchema,
} from './api-schemas.js';
export type { OutputOf } from './api-schemas.js';
export {
  WORKFLOW_STATUSES,
  FINAL_WORKFLOW_STATUSES,
  isFinalWorkflowStatus,
  WorkflowParams,
  CreateWorkflowBody,
  ListWorkflowsQuery,
  AbortReport,
  WaitRecord,
  WorkflowNode,
  WorkflowSummaryView,
  WorkflowView,
  WorkflowList,
} from './workflow-schemas.js';
export type { WorkflowStatus } from './workflow-schemas.js';
export type { NodeResult, WorkflowOutcome, WorkflowEvent, WorkflowEventType } from './workflow-events.js';
export { createKeys, DEFAULT_KEY_PREFIX } from './keys.js';
export type { Keys, ProviderLimitKeys } from './keys.js';
export {
  REDIS_RECONNECT_FIRST_DELAY_MS,
  REDIS_RECONNECT_MAX_DELAY_MS,
  DEFAULT_REDIS_READY_TIMEOUT_MS,
  redisNodeUrls,
  maskUrl,
  reconnectDelayMs,
} from './redis-urls.js';
export {
  RUN_JOB_RETENTION_COUNT,
  RUN_JOB_ATTEMPTS,
  RUN_JOB_BACKOFF_MS,
  RUN_JOB_BACKOFF_MAX_MS,
  RUN_JOB_BACKOFF_JITTER,
  RUN_JOB_BACKOFF_TYPE,
  runJobOptions,
  runRetryDelayMs,
} from './run-job-options.js';
export type { RunJobOptions } from './run-job-options.js';
export type { RunFilter, RunPosition, RunSearch, RunSearchPage, ArchiveSearch } from './run-search.js';
export {
  MAX_EVAL_REPORT_BYTES,
  EVAL_ID_PATTERN,
  EVAL_VARIANT_NAME_PATTERN,
  VARIANT_METRIC_NAMES,
  RATE_METRIC_NAMES,
  VariantMetrics,
  EvalFailure,
  AttemptFacts,
  EvalAttempt,
  EvalCaseResult,
  EvalVariantResult,
  MetricComparison,
  FlippedCase,
  EvalComparison,
  EvalReport,
  EvalSummary,
  EvalList,
  EvalParams,
  EvalCreated,
} from './evals.js';
export type { VariantMetricName } from './evals.js';
