import type {
  AgentList,
  DecisionView,
  AnswerDeltaEvent,
  RunEvent,
  RunEventType,
  RunList as RunListView,
  RunSummaryView,
  RunView,
  WaitRecord,
  WorkflowEvent,
  WorkflowEventType,
  WorkflowList as WorkflowListView,
  WorkflowNode as WorkflowNodeView,
  WorkflowSummaryView,
  WorkflowView,
} from '@agent-reach/protocol';

/** Wire types of the Agent-Reach HTTP API: the `Static` types of its schemas in `@agent-reach/protocol`. */

export type { OutputOf, RunStatus, Usage, RunEventType, ToolResult } from '@agent-reach/protocol';

/** A run's listing fields. Times are epoch ms (`updated_at` is 0 while the run is still only queued). */
export type RunSummary = RunSummaryView;
/**
 * A run. `O` is the type of its `output` (the parsed answer of a run with an output schema): with a
 * TypeBox schema, `OutputOf<typeof schema>`; `unknown` otherwise.
 */
export type Run<O = unknown> = Omit<RunView, 'output'> & { output?: O };
/** One tool call as the run saw it. */
export type RunStep = RunView['steps'][number];
/** One model turn: tokens, latency, and the reasoning text when the provider sent one. */
export type ModelTurn = NonNullable<RunView['turns']>[number];
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

/**
 * The live text of a streamed model turn, yielded by `streamEvents` with `answerDeltas: true`. Never
 * stored: its `id` is the last stored event's (`''` before any), so resuming from it loses nothing.
 */
export interface StreamedAnswerDelta {
  id: string;
  type: 'answer_delta';
  data: AnswerDeltaEvent;
}

export type { WorkflowStatus, WorkflowEventType } from '@agent-reach/protocol';
export type Workflow = WorkflowView;
export type WorkflowSummary = WorkflowSummaryView;
export type WorkflowList = WorkflowListView;
/** A workflow node's state: an ordinary run (`run_id`) once its dependencies finished. */
export type WorkflowNode = WorkflowNodeView;
/** Who was waiting on whom when the watchdog aborted a workflow, since when (epoch ms) and why. */
export type WorkflowWait = WaitRecord;

/** One message of a workflow's event stream; node events carry the node's `run_id`. */
export type StreamedWorkflowEvent = {
  [K in WorkflowEventType]: {
    id: string;
    type: K;
    data: Extract<WorkflowEvent, { type: K }>;
  };
}[WorkflowEventType];
