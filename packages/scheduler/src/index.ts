export { Dispatcher, callWindowMs } from './fleet/dispatcher.js';
export type { DispatchCall, DispatchRun, DispatcherOptions } from './fleet/dispatcher.js';
export { ToolCatalog } from './fleet/tool-catalog.js';
export { BreakerView } from './fleet/breaker-view.js';
export { createLlmClient } from './model/llm.js';
export type { LlmClient, LlmOptions } from './model/llm.js';
export { AgentRunner } from './runs/agent-runner.js';
export type { AgentRunnerOptions, StartRun } from './runs/agent-runner.js';
export { runAgent, resolveLimits, RunLost, CheckpointFailed } from './agent-loop/run-agent.js';
export type { AgentLoopDeps, LoopLimits, CheckpointWrite } from './agent-loop/run-agent.js';
export { createRunState, unansweredCalls } from './agent-loop/run-state.js';
export type {
  RunState,
  RunOutcome,
  RunStatus,
  FinalStatus,
  TaskStep,
  StepRecord,
  Usage,
  CompactionSummary,
  ChatMessage,
  GuardName,
  Approval,
} from './agent-loop/run-state.js';
export type { RunEvent, RunEventBody, StepKind } from './agent-loop/events.js';
export { countTokens } from './agent-loop/tokens.js';
export { SUMMARY_HEADING, TASK_STACK_HEADING } from './agent-loop/prompt.js';
export { startScheduler, llmFromConfig } from './scheduler.js';
export type { SchedulerProcess } from './scheduler.js';
export { RunStore, RunCheckpointer, CheckpointRefused } from './runs/run-store.js';
export type {
  RunSummary,
  RunListFilter,
  StoredEvent,
  RunStoreOptions,
  RunArchive,
  RunClaim,
  CheckpointVerdict,
} from './runs/run-store.js';
export { RunControl } from './runs/run-control.js';
export { openRunArchive, type OpenedRunArchive } from './runs/run-archive.js';
export { searchAcross } from './runs/archive-search.js';
export type { StartRunRequest, DecisionRequest } from './runs/run-control.js';
export { createRunWorker } from './runs/run-worker.js';
export type { RunWorker, RunWorkerOptions } from './runs/run-worker.js';
export { createRunQueue } from './runs/run-jobs.js';
export { SessionStore } from './runs/sessions.js';
export type { SessionMemory } from './runs/sessions.js';
export { replayRun, recordedLlm } from './runs/replay.js';
export type {
  ReplayResult,
  ReplayDifference,
  ReplayOptions,
  ReplayCall,
  ReplayCallSource,
} from './runs/replay.js';
export { renderTimeline } from './runs/timeline.js';
export {
  startQueueSampler,
  queueSamplerLeaseKey,
  QUEUE_JOBS_METRIC,
  QUEUE_SAMPLER_LEADER_METRIC,
} from './fleet/queue-sampler.js';
export type { QueueSampler, QueueSamplerOptions } from './fleet/queue-sampler.js';
export {
  createApiServer,
  startApiServer,
  ApiError,
  BOARD_PATH,
  summaryView,
  IdempotencyStore,
  bodyHash,
} from './api/index.js';
export type { ApiServer, ApiServerDeps, ApiServerOptions, ApiKeyConfig, ApiErrorBody } from './api/index.js';
export { classifyIntent, INTENTS } from './agent-loop/intent.js';
export type { Intent, IntentDecision, IntentTool } from './agent-loop/intent.js';
export { buildVocabulary } from './agent-loop/vocabulary.js';
export type { LabelScore, RequestScore, Vocabulary, VocabularySource } from './agent-loop/vocabulary.js';
export { agentVocabulary, checkTopic } from './agent-loop/topic-gate.js';
export type { TopicCheck } from './agent-loop/topic-gate.js';
export { WorkflowControl, nodeRunId, WORKFLOW_ID_PATTERN } from './workflows/workflow-control.js';
export type { StartWorkflowRequest, WorkflowJobData } from './workflows/workflow-control.js';
export { createWorkflowWorker, abortReport } from './workflows/coordinator.js';
export type { WorkflowWorker, WorkflowWorkerOptions } from './workflows/coordinator.js';
export { WorkflowStore } from './workflows/workflow-store.js';
export type {
  NodeStart,
  WorkflowListFilter,
  WorkflowRecord,
  WorkflowSummary,
  StoredWorkflowEvent,
} from './workflows/workflow-store.js';
export { workflowView, workflowSummaryView } from './api/workflow-view.js';
