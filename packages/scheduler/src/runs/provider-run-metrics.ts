import { DEFAULT_TENANT } from '@agent-reach/protocol';
import type { RunEvent } from '../agent-loop/events.js';
import type { RunState } from '../agent-loop/run-state.js';
import type { ProviderMetrics } from '../model/provider-metrics.js';

/**
 * Counts answered requests, fallbacks and cost from a run's `llm_request` events (its turns) and
 * `llm_usage` events (its plan, its guardrail agents' verdicts), as the run's usage counts them, and
 * turns no model of the chain answered from its `llm_error` events that list the models passed over.
 */
export function recordProviderMetrics(metrics: ProviderMetrics): (event: RunEvent, state: RunState) => void {
  return (event, state) => {
    if (event.type === 'llm_error' && event.fallback?.length) metrics.unanswered.inc({ agent: state.agent });
    // Every model request of the run is counted and priced: its turns and the requests beside them.
    if (event.type !== 'llm_request' && event.type !== 'llm_usage') return;
    if (event.answered_by === undefined) return;
    const slash = event.answered_by.indexOf('/');
    const provider = event.answered_by.slice(0, slash);
    metrics.answered.inc({ provider, model: event.answered_by.slice(slash + 1) });
    for (const s of event.fallback ?? [])
      metrics.fallbacks.inc({ from: s.model, reason: s.reason, to: event.answered_by });
    if (event.cost !== undefined)
      metrics.cost.inc(
        {
          agent: state.agent,
          model: event.answered_by,
          key: state.key ?? '',
          tenant: state.tenant ?? DEFAULT_TENANT,
        },
        event.cost,
      );
  };
}
