/**
 * The client's interface and the inputs of its methods: what callers write down, apart from the
 * functions that implement it (client.ts and the modules it delegates to).
 */
import type {
  Agent,
  OutputOf,
  Decision,
  Run,
  RunList,
  RunStatus,
  StreamedAnswerDelta,
  StreamedEvent,
  StreamedWorkflowEvent,
  Workflow,
  WorkflowList,
  WorkflowStatus,
} from './types.js';
import type { RunCallback } from '@agent-reach/protocol';

export interface ClientOptions {
  /** The API's base URL, e.g. `http://scheduler:8080`. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <apiKey>`. */
  apiKey: string;
  /** A fetch implementation (default: the global one). */
  fetch?: typeof fetch;
}

export interface CreateRunInput<S = unknown> {
  agent: string;
  input: string;
  /**
   * JSON Schema the final answer must match, instead of the agent's `output_schema` (a TypeBox schema
   * types the run's `output`). The run's `output` is the parsed answer; an answer that keeps missing it
   * ends the run `failed` with reason `invalid_output`.
   */
  outputSchema?: S;
  /** An existing session whose history the run continues. */
  sessionId?: string;
  metadata?: Record<string, string>;
  model?: string;
  /**
   * Tools that require a grant the run may call (each one the agent lists); in a session, they hold for
   * the rest of it.
   */
  grants?: string[];
  /**
   * Signed deliveries of the run's events (`finished`, `awaiting_approval`; default `finished`) to an
   * http(s) URL; check them with `verifyWebhook` (docs/callbacks.md).
   */
  callback?: RunCallback;
  /** The same key (per API key, 24 h) returns the same run instead of starting another. */
  idempotencyKey?: string;
  /**
   * Overrides of the agent's configuration for this run only (instructions, model, loop settings, tool
   * descriptions, aliases and examples…), kept with the run under the variant's name (docs/api.md).
   */
  variant?: { name: string; overrides: Record<string, unknown> };
}

export interface ListRunsFilter {
  agent?: string;
  status?: RunStatus;
  /** Epoch ms bounds on creation time. */
  since?: number;
  until?: number;
  limit?: number;
  /** Skip this many matches (prefer `cursor`). */
  offset?: number;
  /** Runs started with this metadata, e.g. `{ user_id: '42' }` (one pair). */
  metadata?: Record<string, string>;
  traceId?: string;
  /** Runs that called this tool. */
  tool?: string;
  /** Runs with a tool call that ended with this error kind (`timeout`, `forbidden`, …). */
  errorKind?: string;
  /** `next_cursor` of the previous page. */
  cursor?: string;
}

export interface CreateWorkflowInput {
  /** A workflow of the workflows file. */
  workflow: string;
  /** The request: `{{request}}` in its nodes' input templates. */
  input: string;
  metadata?: Record<string, string>;
  /** Signed delivery of `workflow_finished` to an http(s) URL (docs/callbacks.md). */
  callback?: RunCallback;
  /** The same key (per API key, 24 h) returns the same workflow instead of starting another. */
  idempotencyKey?: string;
}

export interface ListWorkflowsFilter {
  workflow?: string;
  status?: WorkflowStatus;
  limit?: number;
  offset?: number;
}

export interface StreamOptions {
  /** Resume after this event id (the `id` of the last event seen). */
  lastEventId?: string;
  signal?: AbortSignal;
  /**
   * Also yield `answer_delta` events: the text of a run's streamed model turns as it is produced (live
   * only, never replayed). Default false. Only for `streamEvents`.
   */
  answerDeltas?: boolean;
}

export interface WaitOptions {
  /** Give up after this long, in ms (a TIMEOUT error). Default 10 minutes. */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Pause before reconnecting a stream that ended early, in ms. Default 500. */
  reconnectDelayMs?: number;
}

export interface DecisionOptions {
  reason?: string;
  /** Who decided; default: the API key's name. */
  by?: string;
}

export interface AgentReachClient {
  createRun<S = unknown>(input: CreateRunInput<S>): Promise<Run<OutputOf<S>>>;
  /** Starts a run and waits for it to end (see `createRun` and `waitForRun`). */
  run<S = unknown>(input: CreateRunInput<S>, options?: WaitOptions): Promise<Run<OutputOf<S>>>;
  getRun<O = unknown>(runId: string): Promise<Run<O>>;
  listRuns(filter?: ListRunsFilter): Promise<RunList>;
  /** Follows the run's events until it ends (reconnecting as needed), then returns the final run. */
  waitForRun<O = unknown>(runId: string, options?: WaitOptions): Promise<Run<O>>;
  /** The run's events, stored then live, ending after `run_finished`. */
  /** The run's events, stored then live. */
  streamEvents(
    runId: string,
    options?: StreamOptions & { answerDeltas?: false },
  ): AsyncGenerator<StreamedEvent>;
  /** The run's events, stored then live, and the answer text of its model turns as it streams. */
  streamEvents(
    runId: string,
    options: StreamOptions & { answerDeltas: true },
  ): AsyncGenerator<StreamedEvent | StreamedAnswerDelta>;
  approve(runId: string, toolCallId: string, options?: DecisionOptions): Promise<Decision>;
  reject(runId: string, toolCallId: string, options?: DecisionOptions): Promise<Decision>;
  cancel(runId: string): Promise<Run>;
  createSession(sessionId?: string): Promise<{ session_id: string }>;
  /** Starts a run of `agent` in the session (continuing its history). */
  /** Without `agent`, the session's agent, going on with the agent its last run handed off to. */
  sendMessage(
    sessionId: string,
    input: Omit<CreateRunInput, 'sessionId' | 'agent'> & { agent?: string },
  ): Promise<Run>;
  listAgents(): Promise<Agent[]>;
  createWorkflow(input: CreateWorkflowInput): Promise<Workflow>;
  /** The workflow with each node's state, output and run. */
  getWorkflow(workflowId: string): Promise<Workflow>;
  listWorkflows(filter?: ListWorkflowsFilter): Promise<WorkflowList>;
  /** The workflow's events, stored then live, ending after `workflow_finished`. */
  streamWorkflowEvents(workflowId: string, options?: StreamOptions): AsyncGenerator<StreamedWorkflowEvent>;
  /** Follows the workflow's events until it ends (reconnecting as needed), then returns it. */
  waitForWorkflow(workflowId: string, options?: WaitOptions): Promise<Workflow>;
  /** Cancels the workflow and its running node runs. */
  cancelWorkflow(workflowId: string): Promise<Workflow>;
}
