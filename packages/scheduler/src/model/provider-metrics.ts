import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { METRIC_PREFIX } from '@agent-reach/shared';

/** Buckets of model requests: from a cached answer's tens of milliseconds to a long generation's minutes. */
const REQUEST_BUCKETS_S = [0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300];

/** Metrics of model providers: breakers, waiting requests, which model answered, fallbacks and cost. */
export function createProviderMetrics(registry: Registry) {
  const registers = [registry];
  return {
    breakerState: new Gauge({
      name: `${METRIC_PREFIX}llm_provider_breaker_state`,
      help: "A model provider's breaker in this scheduler: 0 closed, 1 half-open, 2 open.",
      labelNames: ['provider'] as const,
      registers,
    }),
    breakerTransitions: new Counter({
      name: `${METRIC_PREFIX}llm_provider_breaker_transitions_total`,
      help: "Transitions of a model provider's breaker, by provider and the state entered.",
      labelNames: ['provider', 'to'] as const,
      registers,
    }),
    waiting: new Gauge({
      name: `${METRIC_PREFIX}llm_provider_waiting`,
      help: "Model requests waiting for their provider's concurrency or rate limit, by provider.",
      labelNames: ['provider'] as const,
      registers,
    }),
    errors: new Counter({
      name: `${METRIC_PREFIX}llm_provider_errors_total`,
      help: 'Failed model requests, by provider and kind (connection_refused, dns, tls, auth, not_found, timeout, rate_limit, server_error, stream, …).',
      labelNames: ['provider', 'kind'] as const,
      registers,
    }),
    keyRefused: new Counter({
      name: `${METRIC_PREFIX}llm_provider_key_refused_total`,
      help: 'Model requests a provider answered 401 or 403: its API key is refused (a configuration problem).',
      labelNames: ['provider'] as const,
      registers,
    }),
    requestDuration: new Histogram({
      name: `${METRIC_PREFIX}llm_provider_request_duration_seconds`,
      help: "Requests to a model provider, each attempt (its concurrency or rate limit's wait included), by provider and result (ok, error).",
      labelNames: ['provider', 'result'] as const,
      buckets: REQUEST_BUCKETS_S,
      registers,
    }),
    answered: new Counter({
      name: `${METRIC_PREFIX}llm_turns_answered_total`,
      help: "Model requests of runs (turns, plans, guardrail agents' verdicts) by the provider and model that answered them (after any fallback).",
      labelNames: ['provider', 'model'] as const,
      registers,
    }),
    fallbacks: new Counter({
      name: `${METRIC_PREFIX}llm_fallbacks_total`,
      help: 'Models passed over in a turn, by that model, why (breaker_open, failed) and the model that answered.',
      labelNames: ['from', 'reason', 'to'] as const,
      registers,
    }),
    unanswered: new Counter({
      name: `${METRIC_PREFIX}llm_turns_unanswered_total`,
      help: "Model turns no model of the run's chain answered (each one's provider failed or its breaker was open), by agent.",
      labelNames: ['agent'] as const,
      registers,
    }),
    cost: new Counter({
      name: `${METRIC_PREFIX}llm_cost_total`,
      help: "Cost of runs' model requests (turns, plans, guardrail agents' verdicts) from the price table (tokens in and out × price), by agent, model, API key and tenant.",
      labelNames: ['agent', 'model', 'key', 'tenant'] as const,
      registers,
    }),
  };
}

export type ProviderMetrics = ReturnType<typeof createProviderMetrics>;
