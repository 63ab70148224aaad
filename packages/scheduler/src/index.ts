// The scheduler as a library, for an operator who runs it inside their own Node process instead of as
// `agent-reach scheduler`: start one (its run and workflow workers, metrics and, with API keys, the HTTP
// API), or serve the HTTP API from its parts; pass a model client of their own; and drive runs and
// workflows from code (start, list, search, follow, decide, cancel, replay, print a timeline). Each name
// here is what such a caller writes down or receives.
//
// Everything else (the loop and its state, the dispatcher and tool catalog, stores and checkpoints,
// samplers, the API's helpers, intent and topic gates) is how the scheduler works, not what it offers:
// tests, benchmarks and the CLI take it from `@agent-reach/scheduler/internal`, which promises nothing
// between versions. Run statuses, events on the wire and run searches are the wire contract's
// (`@agent-reach/protocol`).

// A scheduler process
export { startScheduler } from './scheduler.js';
export type { SchedulerProcess, SchedulerOptions } from './scheduler.js';
export { createLlmClient } from './model/llm.js';
export type { LlmClient, LlmOptions } from './model/llm.js';

// The HTTP API, served from parts the caller holds
export { createApiServer, startApiServer } from './api/index.js';
export type { ApiServer, ApiServerDeps, ApiServerOptions, ApiKeyConfig } from './api/index.js';
export { SessionStore } from './runs/sessions.js';

// Runs and workflows from code
export { RunControl } from './runs/run-control.js';
export type { StartRunRequest, DecisionRequest } from './runs/run-control.js';
export type { RunSummary, RunListFilter, StoredEvent } from './runs/run-store.js';
export type { RunState } from './agent-loop/run-state.js';
export type { RunEvent } from './agent-loop/events.js';
export { WorkflowControl } from './workflows/workflow-control.js';
export type { StartWorkflowRequest } from './workflows/workflow-control.js';
export { replayRun } from './runs/replay.js';
export type { ReplayResult, ReplayDifference, ReplayOptions } from './runs/replay.js';
export { renderTimeline } from './runs/timeline.js';
