import { DEFAULT_TENANT } from '@agent-reach/protocol';
import type { SchedulerMetrics } from '@agent-reach/shared';
import type { RunEvent } from '../agent-loop/events.js';
import { agentInCharge, type RunState } from '../agent-loop/run-state.js';

/** Turns run events into scheduler metrics; labels stay bounded (agent, model, tenant, guard, error kind). */
export function recordRunMetrics(metrics: SchedulerMetrics): (event: RunEvent, state: RunState) => void {
  return (event, state) => {
    switch (event.type) {
      // A plan's or a guardrail agent's request (`llm_usage`) is the run's like a turn: counted alike.
      case 'llm_request':
      case 'llm_usage': {
        metrics.llmDuration.observe({ model: event.model, result: 'ok' }, event.latency_ms / 1000);
        // Tokens are the agent's in charge of the turn (after a handoff, not the one the run started with).
        const labels = {
          model: event.model,
          agent: agentInCharge(state),
          tenant: state.tenant ?? DEFAULT_TENANT,
        };
        metrics.llmTokens.inc({ ...labels, kind: 'prompt' }, event.prompt_tokens);
        metrics.llmTokens.inc({ ...labels, kind: 'completion' }, event.completion_tokens);
        break;
      }
      case 'llm_error':
        metrics.llmDuration.observe({ model: event.model, result: 'error' }, event.latency_ms / 1000);
        metrics.llmErrors.inc({ model: event.model });
        break;
      case 'tool_result':
        metrics.toolResults.inc({ error_kind: event.error?.kind ?? 'none' });
        if (event.child_run_id) countChildAnswer(metrics, event, state);
        break;
      case 'child_run_started':
        metrics.childRunsStarted.inc({ parent_agent: agentInCharge(state), child_agent: event.agent });
        break;
      case 'guard':
        metrics.guardFirings.inc({ guard: event.guard, action: event.action });
        break;
      case 'guardrail': {
        const labels = { guardrail: event.guardrail, stage: event.stage };
        if (event.action !== 'let_through') metrics.guardrailTrips.inc(labels);
        if (event.verdict === 'error')
          metrics.guardrailErrors.inc({
            ...labels,
            policy: event.action === 'let_through' ? 'fail_open' : 'fail_closed',
          });
        break;
      }
      case 'compaction':
        metrics.compactions.inc();
        break;
      case 'approval_requested':
        metrics.approvalsRequested.inc();
        break;
      case 'run_finished': {
        const labels = { agent: state.agent, outcome: event.outcome.status };
        metrics.runs.inc(labels);
        metrics.runDuration.observe(labels, Math.max(0, event.at - state.createdAt) / 1000);
        metrics.runSteps.observe({ agent: state.agent }, event.outcome.iterations);
        break;
      }
      default:
    }
  };
}

/** A call of an agent tool answered by its child run: counted by how the child ended. */
function countChildAnswer(
  metrics: SchedulerMetrics,
  event: Extract<RunEvent, { type: 'tool_result' }>,
  state: RunState,
): void {
  const child = state.children?.find((c) => c.runId === event.child_run_id);
  const ended = event.error?.type?.startsWith('agent_') ? event.error.type.slice('agent_'.length) : undefined;
  const outcome = event.ok ? 'succeeded' : (ended ?? 'unanswered');
  metrics.childRuns.inc({
    parent_agent: agentInCharge(state),
    child_agent: child?.agent ?? 'unknown',
    outcome,
  });
}
