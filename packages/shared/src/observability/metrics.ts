import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { ToolGroupLimits } from '../config/agents.js';

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
    toolJobsRefused: new Counter({
      name: `${METRIC_PREFIX}tool_jobs_refused_total`,
      help: 'Tool jobs refused unrun because they do not match their run record (a security event), by reason.',
      labelNames: ['reason'] as const,
      registers,
    }),
    toolDuplicateResults: new Counter({
      name: `${METRIC_PREFIX}tool_duplicate_results_total`,
      help: 'Results not stored because the call already had a recorded result (the first one wins), by tool.',
      labelNames: ['tool'] as const,
      registers,
    }),
    toolJobsReturned: new Counter({
      name: `${METRIC_PREFIX}tool_jobs_returned_total`,
      help: 'Calls handed back to their queue unfinished when the shutdown grace ran out.',
      registers,
    }),
    mcpServerUp: new Gauge({
      name: `${METRIC_PREFIX}mcp_server_up`,
      help: 'Whether an MCP server this executor mounts is connected (1) or down and restarting (0).',
      labelNames: ['server'] as const,
      registers,
    }),
    mcpServerState: new Gauge({
      name: `${METRIC_PREFIX}mcp_server_state`,
      help: 'The state of an MCP server this executor runs: 1 on its state (starting, up, down), 0 on the others.',
      labelNames: ['server', 'state'] as const,
      registers,
    }),
    mcpServerChangeRefused: new Gauge({
      name: `${METRIC_PREFIX}mcp_server_change_refused`,
      help: 'Whether a configuration change of an MCP server could not start, the server as it was serving instead (1).',
      labelNames: ['server'] as const,
      registers,
    }),
    mcpServerRestarts: new Counter({
      name: `${METRIC_PREFIX}mcp_server_restarts_total`,
      help: 'MCP server connections lost (crash, hang, unanswered ping, oversized message) and started again.',
      labelNames: ['server'] as const,
      registers,
    }),
    mcpToolsWithdrawn: new Gauge({
      name: `${METRIC_PREFIX}mcp_tools_withdrawn`,
      help: 'MCP tools hidden from the catalog, by server and reason (server_down, digest_changed, refused).',
      labelNames: ['server', 'reason'] as const,
      registers,
    }),
    openApiResponses: new Counter({
      name: `${METRIC_PREFIX}openapi_responses_total`,
      help: 'Answers to the requests of OpenAPI tools (every attempt), by tool and HTTP status ("none": no answer came).',
      labelNames: ['tool', 'status'] as const,
      registers,
    }),
    mcpProtocolErrors: new Counter({
      name: `${METRIC_PREFIX}mcp_protocol_errors_total`,
      help: 'Messages from an MCP server that are not valid JSON-RPC (garbage on stdout, malformed replies).',
      labelNames: ['server'] as const,
      registers,
    }),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;

/** Buckets for whole runs: from a second to an hour. */
export const RUN_DURATION_BUCKETS_S = [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600];

/** The scheduler's metrics: runs, model calls, guards, compactions and tool results as the model saw them. */
export function createSchedulerMetrics(registry: Registry) {
  const registers = [registry];
  return {
    runs: new Counter({
      name: `${METRIC_PREFIX}runs_total`,
      help: 'Runs finished, by agent and outcome (succeeded, not_converged, failed, cancelled).',
      labelNames: ['agent', 'outcome'] as const,
      registers,
    }),
    runDuration: new Histogram({
      name: `${METRIC_PREFIX}run_duration_seconds`,
      help: 'Time from a run being created to its outcome (parked time included).',
      labelNames: ['agent', 'outcome'] as const,
      buckets: RUN_DURATION_BUCKETS_S,
      registers,
    }),
    runSteps: new Histogram({
      name: `${METRIC_PREFIX}run_steps`,
      help: 'Model turns a finished run took.',
      labelNames: ['agent'] as const,
      buckets: [1, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 50],
      registers,
    }),
    llmDuration: new Histogram({
      name: `${METRIC_PREFIX}llm_request_duration_seconds`,
      help: 'Model calls as the scheduler saw them (SDK retries included), by model and result.',
      labelNames: ['model', 'result'] as const,
      buckets: DURATION_BUCKETS_S,
      registers,
    }),
    llmErrors: new Counter({
      name: `${METRIC_PREFIX}llm_errors_total`,
      help: 'Model calls that failed after the SDK retries, by model.',
      labelNames: ['model'] as const,
      registers,
    }),
    llmTokens: new Counter({
      name: `${METRIC_PREFIX}llm_tokens_total`,
      help: 'Tokens reported by the model, by model, kind (prompt, completion), agent and tenant.',
      labelNames: ['model', 'kind', 'agent', 'tenant'] as const,
      registers,
    }),
    guardFirings: new Counter({
      name: `${METRIC_PREFIX}guard_firings_total`,
      help: 'Guards that fired, by guard and action (nudge, stop).',
      labelNames: ['guard', 'action'] as const,
      registers,
    }),
    guardrailTrips: new Counter({
      name: `${METRIC_PREFIX}guardrail_trips_total`,
      help: 'Guardrails that tripped (a failed check under fail_closed included), by guardrail and stage.',
      labelNames: ['guardrail', 'stage'] as const,
      registers,
    }),
    guardrailErrors: new Counter({
      name: `${METRIC_PREFIX}guardrail_errors_total`,
      help: 'Guardrail checks that failed or timed out, by guardrail, stage and policy (fail_closed, fail_open).',
      labelNames: ['guardrail', 'stage', 'policy'] as const,
      registers,
    }),
    compactions: new Counter({
      name: `${METRIC_PREFIX}compactions_total`,
      help: 'History compactions performed.',
      registers,
    }),
    toolResults: new Counter({
      name: `${METRIC_PREFIX}tool_results_total`,
      help: 'Tool results handed to the model, by error kind ("none" when ok).',
      labelNames: ['error_kind'] as const,
      registers,
    }),
    approvalsRequested: new Counter({
      name: `${METRIC_PREFIX}approvals_requested_total`,
      help: 'Calls that parked a run until a person decides.',
      registers,
    }),
    childRunsStarted: new Counter({
      name: `${METRIC_PREFIX}child_runs_started_total`,
      help: 'Child runs started by calls of agent tools, by the calling agent and the called one.',
      labelNames: ['parent_agent', 'child_agent'] as const,
      registers,
    }),
    childRuns: new Counter({
      name: `${METRIC_PREFIX}child_runs_total`,
      help: "Calls of agent tools answered by their child run, by the calling agent, the called one and how the child ended (succeeded, failed, not_converged, cancelled, unanswered: the caller's deadline came first).",
      labelNames: ['parent_agent', 'child_agent', 'outcome'] as const,
      registers,
    }),
  };
}

export type SchedulerMetrics = ReturnType<typeof createSchedulerMetrics>;

/**
 * Gauges of the configuration a process runs under, read at each scrape: its version, and the fleet-wide
 * limits of each tool group it declares (a group without a limit has no series).
 */
export function registerConfigMetrics(
  registry: Registry,
  config: {
    current(): {
      version: number;
      agents: { toolGroups: ReadonlyMap<string, ToolGroupLimits> };
    };
  },
): void {
  const registers = [registry];
  new Gauge({
    name: `${METRIC_PREFIX}config_version`,
    help: 'Version of the fleet configuration this process runs under (0: its local file, nothing published).',
    registers,
    collect() {
      this.set(config.current().version);
    },
  });
  const perGroup = (read: (limits: ToolGroupLimits) => number | undefined) =>
    function (this: Gauge<'group'>) {
      this.reset();
      for (const [group, limits] of config.current().agents.toolGroups) {
        const value = read(limits);
        if (value !== undefined) this.set({ group }, value);
      }
    };
  new Gauge({
    name: `${METRIC_PREFIX}tool_group_concurrency_limit`,
    help: 'Calls of a tool group allowed to run at once across the fleet (BullMQ global concurrency).',
    labelNames: ['group'] as const,
    registers,
    collect: perGroup((l) => l.concurrency),
  });
  new Gauge({
    name: `${METRIC_PREFIX}tool_group_rate_limit_max`,
    help: 'Calls of a tool group allowed to start per rate window across the fleet (BullMQ global rate limit).',
    labelNames: ['group'] as const,
    registers,
    collect: perGroup((l) => l.rate?.max),
  });
  new Gauge({
    name: `${METRIC_PREFIX}tool_group_rate_limit_window_seconds`,
    help: "Length of a tool group's rate window.",
    labelNames: ['group'] as const,
    registers,
    collect: perGroup((l) => (l.rate ? l.rate.per_ms / 1000 : undefined)),
  });
}
