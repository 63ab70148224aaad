// How the scheduler works, for the repository's own tests, benchmarks and CLI: the loop and its state,
// the fleet (dispatcher, tool catalog, breakers, queue sampler), stores, the API's helpers. Not a public
// surface: names come and go between versions. The public names (`./index.ts`) are here too, so that
// code that needs internals imports from one entry; code that does not imports the root.
//
// The CLI is a client of Redis like the scheduler, not of the HTTP API: it opens the run store and
// archive, the agent runner (for replays) and the model client from here, on purpose.
export * from './index.js';
export { Dispatcher, callWindowMs } from './fleet/dispatcher.js';
export type { DispatchCall, DispatchRun, DispatcherOptions } from './fleet/dispatcher.js';
export { ToolCatalog } from './fleet/tool-catalog.js';
export type { McpServerReport, McpServerView } from './fleet/tool-catalog.js';
export { BreakerView } from './fleet/breaker-view.js';
export {
  startQueueSampler,
  queueSamplerLeaseKey,
  QUEUE_JOBS_METRIC,
  QUEUE_SAMPLER_LEADER_METRIC,
} from './fleet/queue-sampler.js';
export type { QueueSampler, QueueSamplerOptions } from './fleet/queue-sampler.js';
export { llmFromConfig } from './scheduler.js';
export { runAgent, resolveLimits, RunLost, CheckpointFailed } from './agent-loop/run-agent.js';
export type { AgentLoopDeps, LoopLimits, CheckpointWrite } from './agent-loop/run-agent.js';
export { createRunState, unansweredCalls } from './agent-loop/run-state.js';
export type {
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
export type { RunEventBody, StepKind } from './agent-loop/events.js';
export { countTokens } from './agent-loop/tokens.js';
export { SUMMARY_HEADING, TASK_STACK_HEADING } from './agent-loop/prompt.js';
export { classifyIntent, INTENTS } from './agent-loop/intent.js';
export type { Intent, IntentDecision, IntentTool } from './agent-loop/intent.js';
export { buildVocabulary } from './agent-loop/vocabulary.js';
export type { LabelScore, RequestScore, Vocabulary, VocabularySource } from './agent-loop/vocabulary.js';
export { agentVocabulary, checkTopic } from './agent-loop/topic-gate.js';
export type { TopicCheck } from './agent-loop/topic-gate.js';
export { AgentRunner } from './runs/agent-runner.js';
export type { AgentRunnerOptions, StartRun } from './runs/agent-runner.js';
export { RunStore, RunCheckpointer, CheckpointRefused } from './runs/run-store.js';
export type { StateFormat } from './runs/stored-state.js';
export { ChildRunControl, childResult, childRunId } from './runs/child-runs.js';
export type { RunStoreOptions, RunArchive, RunClaim, CheckpointVerdict } from './runs/run-store.js';
export { openRunArchive, type OpenedRunArchive } from './runs/run-archive.js';
export { searchAcross } from './runs/archive-search.js';
export { createRunWorker } from './runs/run-worker.js';
export type { RunWorker, RunWorkerOptions } from './runs/run-worker.js';
export { createRunQueue } from './runs/run-jobs.js';
export type { SessionMemory } from './runs/sessions.js';
export { recordedLlm } from './runs/replay.js';
export type { ReplayCall, ReplayCallSource } from './runs/replay.js';
export { nodeRunId, WORKFLOW_ID_PATTERN } from './workflows/workflow-control.js';
export type { WorkflowJobData } from './workflows/workflow-control.js';
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
export { ApiError, BOARD_PATH, summaryView, IdempotencyStore, bodyHash } from './api/index.js';
export type { ApiErrorBody } from './api/index.js';
export { workflowView, workflowSummaryView } from './api/workflow-view.js';
export { LiveOrder, turnRecorded } from './api/live-order.js';
export { ModelProviders } from './model/providers.js';
export { createProviderMetrics } from './model/provider-metrics.js';
export { ScheduleStore } from './triggers/schedule-store.js';
export {
  scheduleOf,
  nextFiring,
  slotsBetween,
  ScheduleInvalid,
  OVERLAP_POLICIES,
} from './triggers/schedule-spec.js';
export type { Schedule, ScheduleFiring, ScheduleRequest, OverlapPolicy } from './triggers/schedule-spec.js';
export { ApiKeyTable } from './api/auth.js';
export { loadInboundEvents } from './triggers/inbound-events.js';
