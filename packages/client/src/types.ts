import type {
  AgentList,
  DecisionView,
  RunEvent,
  RunEventType,
  RunList as RunListView,
  RunSummaryView,
  RunView,
} from '@agent-reach/protocol';

/** Wire types of the Agent-Reach HTTP API: the `Static` types of its schemas in `@agent-reach/protocol`. */

export type { RunStatus, Usage, RunEventType } from '@agent-reach/protocol';

/** A run's listing fields. Times are epoch ms (0 while the run is still only queued). */
export type RunSummary = RunSummaryView;
export type Run = RunView;
/** One tool call as the run saw it. */
export type RunStep = RunView['steps'][number];
export type PendingApproval = RunView['pending_approvals'][number];
export type RunList = RunListView;
export type Decision = DecisionView;
export type Agent = AgentList['agents'][number];
export type AgentTool = Agent['tools'][number];

/** A recorded event of a run: its type, when (epoch ms), and the fields of that type. */
export type RunEventData = RunEvent;

/** One message of a run's event stream; its `type` narrows its `data`. */
export type StreamedEvent = {
  [K in RunEventType]: {
    /** The Redis stream id: pass it as `lastEventId` to resume after this event. */
    id: string;
    type: K;
    data: Extract<RunEvent, { type: K }>;
  };
}[RunEventType];

export type WorkflowStatus = 'running' | 'succeeded' | 'failed' | 'aborted' | 'cancelled';

export const FINAL_WORKFLOW_STATUSES: ReadonlySet<WorkflowStatus> = new Set([
  'succeeded',
  'failed',
  'aborted',
  'cancelled',
]);

/** A workflow node's state: an ordinary run (`run_id`) once its dependencies finished. */
export interface WorkflowNode {
  id: string;
  agent: string;
  depends_on: string[];
  /** `defaulted`: its declared default (low-confidence); `cancelled` / `skipped` when the workflow ended first. */
  status: 'waiting' | 'running' | 'succeeded' | 'defaulted' | 'failed' | 'cancelled' | 'skipped';
  run_id?: string;
  timeout_ms: number;
  on_timeout: 'abort' | 'default';
  started_at?: number;
  finished_at?: number;
  waited_ms?: number;
  output?: string;
  low_confidence: boolean;
  /** Dependencies whose low-confidence outputs its input used. */
  low_confidence_inputs: string[];
  reason?: string;
}

/** Who was waiting on whom when the watchdog aborted a workflow, since when (epoch ms) and why. */
export interface WorkflowWait {
  node: string;
  agent: string;
  state: 'waiting' | 'running';
  waiting_on: string[];
  since: number;
  run_id?: string;
  why: string;
}

export interface WorkflowSummary {
  workflow_id: string;
  workflow: string;
  status: WorkflowStatus;
  created_at: number;
  updated_at: number;
  finished_at?: number;
  cancel_requested: boolean;
  reason?: string;
}

export interface Workflow extends WorkflowSummary {
  input: string;
  trace_id: string;
  metadata?: Record<string, string>;
  output?: string;
  low_confidence: boolean;
  error?: string;
  report?: { timed_out: string; timeout_ms: number; at: number; waits: WorkflowWait[]; text: string };
  nodes: WorkflowNode[];
}

export interface WorkflowList {
  workflows: WorkflowSummary[];
  next_offset?: number;
}

export type WorkflowEventType =
  | 'workflow_started'
  | 'node_started'
  | 'node_finished'
  | 'watchdog_fired'
  | 'cancel_requested'
  | 'workflow_finished';

/** One message of a workflow's event stream; node events carry the node's `run_id`. */
export interface StreamedWorkflowEvent {
  id: string;
  type: WorkflowEventType;
  data: { type: WorkflowEventType; at: number } & Record<string, unknown>;
}
