export { Dispatcher } from './dispatcher.js';
export type { DispatchCall, DispatchRun, DispatcherOptions } from './dispatcher.js';
export { ToolCatalog } from './tool-catalog.js';
export { BreakerView } from './breaker-view.js';
export { createLlmClient } from './llm.js';
export type { LlmClient, LlmOptions } from './llm.js';
export { AgentRunner } from './agent-runner.js';
export type { AgentRunnerOptions, StartRun } from './agent-runner.js';
export { runAgent, resolveLimits } from './agent-loop/run-agent.js';
export type { AgentLoopDeps, LoopLimits } from './agent-loop/run-agent.js';
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
} from './agent-loop/run-state.js';
export type { RunEvent, RunEventBody, StepKind } from './agent-loop/events.js';
export { countTokens } from './agent-loop/tokens.js';
export { SUMMARY_HEADING, TASK_STACK_HEADING } from './agent-loop/prompt.js';
