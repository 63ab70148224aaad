import { Counter, Histogram, type Registry } from 'prom-client';
import { DURATION_BUCKETS_S, METRIC_PREFIX } from './metrics.js';

/**
 * Metrics of workflow coordination, recorded by the scheduler whose coordinator made the transition (each
 * transition is made once fleet-wide, so the sums over schedulers count each workflow and node once).
 */
export function createWorkflowMetrics(registry: Registry) {
  const registers = [registry];
  return {
    workflows: new Counter({
      name: `${METRIC_PREFIX}workflows_total`,
      help: 'Workflows finished, by workflow and outcome (succeeded, failed, aborted, cancelled).',
      labelNames: ['workflow', 'outcome'] as const,
      registers,
    }),
    nodeWait: new Histogram({
      name: `${METRIC_PREFIX}workflow_node_wait_seconds`,
      help: "Time a workflow node waited for its dependencies, from the workflow's start to its run being queued.",
      labelNames: ['workflow'] as const,
      buckets: DURATION_BUCKETS_S,
      registers,
    }),
    watchdogFirings: new Counter({
      name: `${METRIC_PREFIX}workflow_watchdog_firings_total`,
      help: 'Nodes past their timeout, by workflow and action (default: injected, abort: the workflow ended).',
      labelNames: ['workflow', 'action'] as const,
      registers,
    }),
  };
}

export type WorkflowMetrics = ReturnType<typeof createWorkflowMetrics>;
