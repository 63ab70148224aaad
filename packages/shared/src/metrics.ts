import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export const METRIC_PREFIX = 'agent_reach_';

/** Buckets for tool calls and waits: from a few milliseconds to minutes. */
export const DURATION_BUCKETS_S = [
  0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300,
];

/** Breaker states as gauge values. */
export const BREAKER_STATE_VALUE = { closed: 0, half_open: 1, open: 2 } as const;

/**
 * Every metric of the platform, registered on the given registry so that tests get a fresh one.
 * Labels have few values: tool, status, error kind, group, agent, model — never run ids or text.
 */
export function createMetrics(registry: Registry) {
  const registers = [registry];
  return {
    toolCalls: new Counter({
      name: `${METRIC_PREFIX}tool_calls_total`,
      help: 'Tool calls finished by an executor, by tool, status and error kind (kind "none" on success).',
      labelNames: ['tool', 'status', 'error_kind'] as const,
      registers,
    }),
    toolCallDuration: new Histogram({
      name: `${METRIC_PREFIX}tool_call_duration_seconds`,
      help: 'Time from an executor starting a call to its final outcome, retries included.',
      labelNames: ['tool', 'status'] as const,
      buckets: DURATION_BUCKETS_S,
      registers,
    }),
    toolCallAttempts: new Histogram({
      name: `${METRIC_PREFIX}tool_call_attempts`,
      help: 'Attempts a tool call took (1 = no retry).',
      labelNames: ['tool'] as const,
      buckets: [1, 2, 3, 4, 5, 10],
      registers,
    }),
    toolRetries: new Counter({
      name: `${METRIC_PREFIX}tool_retries_total`,
      help: 'Retries of tool calls after a timeout or transient failure.',
      labelNames: ['tool'] as const,
      registers,
    }),
    toolCallsInFlight: new Gauge({
      name: `${METRIC_PREFIX}tool_calls_in_flight`,
      help: 'Tool calls an executor process is running now.',
      registers,
    }),
    queueWait: new Histogram({
      name: `${METRIC_PREFIX}tool_queue_wait_seconds`,
      help: 'Time a tool call waited in its queue, from publication to an executor starting it.',
      labelNames: ['group'] as const,
      buckets: DURATION_BUCKETS_S,
      registers,
    }),
    breakerState: new Gauge({
      name: `${METRIC_PREFIX}breaker_state`,
      help: 'Circuit breaker state per tool in this process: 0 closed, 1 half-open, 2 open.',
      labelNames: ['tool'] as const,
      registers,
    }),
    breakerTransitions: new Counter({
      name: `${METRIC_PREFIX}breaker_transitions_total`,
      help: 'Circuit breaker state changes per tool, by the state entered.',
      labelNames: ['tool', 'to'] as const,
      registers,
    }),
    dispatchedCalls: new Counter({
      name: `${METRIC_PREFIX}dispatched_tool_calls_total`,
      help: 'Tool calls a scheduler published, and results it handed back, by outcome as the model saw it.',
      labelNames: ['outcome'] as const,
      registers,
    }),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
