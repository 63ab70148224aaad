import {
  FINAL_WORKFLOW_STATUSES,
  type WorkflowOutcome,
  type WorkflowSummaryView,
  type WorkflowView,
} from '@agent-reach/protocol';
import type { WorkflowRecord, WorkflowSummary } from '../workflows/workflow-store.js';

/** A workflow's listing fields on the wire. */
export function workflowSummaryView(s: WorkflowSummary): WorkflowSummaryView {
  return {
    workflow_id: s.workflowId,
    workflow: s.name,
    status: s.status,
    created_at: s.createdAt,
    updated_at: s.updatedAt,
    ...(s.finishedAt ? { finished_at: s.finishedAt } : {}),
    cancel_requested: s.cancelRequested,
    ...(s.reason ? { reason: s.reason } : {}),
    low_confidence: s.lowConfidence,
  };
}

/** A workflow on the wire: its record with each node's state. */
export function workflowView(rec: WorkflowRecord): WorkflowView {
  const ended = FINAL_WORKFLOW_STATUSES.has(rec.status);
  const o = rec.outcome;
  return {
    ...workflowSummaryView(rec),
    input: rec.input,
    trace_id: rec.traceId,
    ...(rec.configVersion === undefined ? {} : { config_version: rec.configVersion }),
    ...(rec.metadata ? { metadata: rec.metadata } : {}),
    ...(o?.output !== undefined ? { output: o.output } : {}),
    low_confidence:
      o?.low_confidence ?? (rec.lowConfidence || [...rec.done.values()].some((d) => d.low_confidence)),
    ...(o?.error ? { error: o.error } : {}),
    ...(o?.failed_node ? { failed_node: o.failed_node } : {}),
    ...(o?.report ? { report: o.report } : {}),
    nodes: rec.spec.nodes.map((n) => {
      const start = rec.started.get(n.id);
      const done = rec.done.get(n.id);
      const status = done
        ? done.status
        : ended
          ? start
            ? 'cancelled'
            : 'skipped'
          : start
            ? 'running'
            : 'waiting';
      return {
        id: n.id,
        agent: n.agent,
        depends_on: [...n.depends_on],
        status,
        ...(start ? { run_id: start.run_id, started_at: start.at, waited_ms: start.at - rec.createdAt } : {}),
        timeout_ms: n.timeout_ms,
        on_timeout: n.on_timeout === 'abort' ? 'abort' : 'default',
        ...(done ? { finished_at: done.at } : {}),
        ...(done?.output !== undefined ? { output: done.output } : {}),
        low_confidence: done?.low_confidence ?? false,
        ...(done?.low_confidence_from ? { low_confidence_from: [...done.low_confidence_from] } : {}),
        low_confidence_inputs: start?.low_confidence_inputs ?? [],
        ...(done?.reason ? { reason: done.reason } : {}),
        ...(!done && o ? { reason: endedBy(o) } : {}),
        ...(done?.error ? { error: done.error } : {}),
      };
    }),
  };
}

/** What ended a workflow before a node could finish: the reason of its cancelled or skipped nodes. */
function endedBy(o: WorkflowOutcome): string {
  if (o.failed_node) return `node ${o.failed_node} failed`;
  if (o.report) return `node ${o.report.timed_out} timed out (on_timeout: abort)`;
  if (o.status === 'cancelled') return 'the workflow was cancelled';
  return `the workflow ended ${o.status} (${o.reason})`;
}
