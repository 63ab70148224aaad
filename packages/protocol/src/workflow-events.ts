import type { AbortReport, WorkflowStatus } from './workflow-schemas.js';

/** A node's result: what dependants see, recorded once (the first result wins). */
export interface NodeResult {
  /**
   * `defaulted`: the declared default, injected by the watchdog or after the node's run failed.
   * `cancelled` (its run was cancelled) or `skipped` (it never started): nothing needs its output any
   * more, since the watchdog gave every node waiting on it a default (see `unneeded_by`).
   */
  status: 'succeeded' | 'defaulted' | 'failed' | 'cancelled' | 'skipped';
  output?: string;
  /**
   * The output is a declared default, or was made from one: a node whose input used a low-confidence
   * output is low-confidence too, and so on down the chain.
   */
  low_confidence: boolean;
  /** The defaulted nodes a low-confidence output rests on (itself, for a defaulted node). */
  low_confidence_from?: string[];
  /** Why the output is low-confidence, as later nodes are told. */
  note?: string;
  /** For a node nobody needs any more: the defaulted nodes whose defaults made it so. */
  unneeded_by?: string[];
  /** `timeout`, `run_failed`, …; absent on success. */
  reason?: string;
  /** How the node's run ended when it did not succeed: its status, reason and report, in words. */
  error?: string;
  /** Epoch ms. */
  at: number;
}

export interface WorkflowOutcome {
  status: Exclude<WorkflowStatus, 'running'>;
  /** `completed`, `node_failed`, `timeout`, `cancel_requested`, `coordinator_failed`. */
  reason: string;
  output?: string;
  /** Some node's output was a default the watchdog injected, or a node used one. */
  low_confidence: boolean;
  report?: AbortReport;
  /** What went wrong, for failed workflows. */
  error?: string;
  /** The node whose failed run ended the workflow (`reason: node_failed`). */
  failed_node?: string;
}

/**
 * What a workflow's event stream records, in snake_case as it goes on the wire. Every event about a node
 * names the node's run (`run_id`), whose own events are at `/v1/runs/{run_id}/events`.
 */
export type WorkflowEvent = { at: number } & (
  | {
      type: 'workflow_started';
      workflow: string;
      nodes: string[];
      /** The configuration version whose definition the workflow runs. */
      config_version?: number;
    }
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
      /** How a failed node's run ended. */
      error?: string;
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
