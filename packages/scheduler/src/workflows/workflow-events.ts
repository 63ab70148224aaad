import type { AbortReport, NodeResult, WorkflowOutcome } from './workflow-store.js';

/**
 * What a workflow's event stream records, in snake_case as it goes on the wire. Every event about a node
 * names the node's run (`run_id`), whose own events are at `/v1/runs/{run_id}/events`.
 */
export type WorkflowEvent = { at: number } & (
  | { type: 'workflow_started'; workflow: string; nodes: string[] }
  | {
      type: 'node_started';
      node: string;
      agent: string;
      run_id: string;
      /** How long the node waited for its dependencies, in ms. */
      waited_ms: number;
      /** Dependencies whose outputs were low-confidence defaults when the node's input was made. */
      low_confidence_inputs: string[];
    }
  | {
      type: 'node_finished';
      node: string;
      run_id?: string;
      status: NodeResult['status'];
      low_confidence: boolean;
      reason?: string;
    }
  | {
      type: 'watchdog_fired';
      node: string;
      action: 'default' | 'abort';
      timeout_ms: number;
      /** The node's run, when it had been started (it is cancelled). */
      run_id?: string;
      report?: AbortReport;
    }
  | { type: 'cancel_requested' }
  | { type: 'workflow_finished'; outcome: WorkflowOutcome }
);

export type WorkflowEventType = WorkflowEvent['type'];
