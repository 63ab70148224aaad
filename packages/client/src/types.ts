/** Wire types of the Agent-Reach HTTP API (snake_case, as the API sends them). */

export type RunStatus =
  'queued' | 'running' | 'awaiting_approval' | 'succeeded' | 'not_converged' | 'failed' | 'cancelled';

export const FINAL_STATUSES: ReadonlySet<RunStatus> = new Set([
  'succeeded',
  'not_converged',
  'failed',
  'cancelled',
]);

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** One tool call as the run saw it. */
export interface RunStep {
  turn: number;
  tool_call_id: string;
  tool: string;
  arguments: string;
  ok: boolean;
  error_kind?: string;
  duration_ms: number;
  attempts: number;
  truncated?: boolean;
}

export interface PendingApproval {
  tool_call_id: string;
  tool: string;
  arguments: string;
  requested_at: number;
}

/** A run's listing fields. Times are epoch ms (0 while the run is still only queued). */
export interface RunSummary {
  run_id: string;
  agent: string;
  status: RunStatus;
  trace_id?: string;
  session_id?: string;
  created_at: number;
  updated_at: number;
  iterations: number;
  cancel_requested: boolean;
  /** Why the run ended (`final_answer`, a guard name, `cancelled`, …), once it has. */
  reason?: string;
}

export interface Run extends RunSummary {
  input?: string;
  metadata?: Record<string, string>;
  answer?: string;
  report?: string;
  usage: Usage;
  steps: RunStep[];
  pending_approvals: PendingApproval[];
}

export interface RunList {
  runs: RunSummary[];
  /** Offset of the next page; absent on the last page. */
  next_offset?: number;
}

export interface Decision {
  run_id: string;
  tool_call_id: string;
  tool: string;
  decision: 'approved' | 'rejected';
  by: string;
  reason?: string;
}

export interface AgentTool {
  name: string;
  registered: boolean;
  description?: string;
  group?: string;
  requires_confirmation?: boolean;
  breaker: { state: 'closed' | 'half_open' | 'open'; open_until?: number; hidden: boolean };
}

export interface Agent {
  name: string;
  description?: string;
  max_iterations?: number;
  allowed_topic?: string[];
  tools: AgentTool[];
}

export type RunEventType =
  | 'run_started'
  | 'plan'
  | 'llm_request'
  | 'llm_error'
  | 'tool_dispatched'
  | 'tool_result'
  | 'step_done'
  | 'approval_requested'
  | 'approval_decided'
  | 'guard'
  | 'compaction'
  | 'run_finished';

/** A recorded event of a run: its type, when (epoch ms), and the fields of that type. */
export type RunEventData = { type: RunEventType; at: number } & Record<string, unknown>;

/** One message of a run's event stream. */
export interface StreamedEvent {
  /** The Redis stream id: pass it as `lastEventId` to resume after this event. */
  id: string;
  type: RunEventType;
  data: RunEventData;
}
