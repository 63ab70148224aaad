import { Counter, type Registry } from 'prom-client';

/** Counters of schedule firings and inbound events, registered once per registry. */
export interface TriggerMetrics {
  /** Firings by outcome: started, skipped_overlap, skipped_late, failed. */
  firings: Counter<'outcome'>;
  /** Inbound events by event name and outcome: started, duplicate, SIGNATURE_INVALID, EVENT_STALE, … */
  events: Counter<'event' | 'outcome'>;
}

function counter<L extends string>(
  registry: Registry,
  name: string,
  help: string,
  labelNames: L[],
): Counter<L> {
  return (
    (registry.getSingleMetric(name) as Counter<L> | undefined) ??
    new Counter({ name, help, labelNames, registers: [registry] })
  );
}

export function createTriggerMetrics(registry: Registry): TriggerMetrics {
  return {
    firings: counter(registry, 'agent_reach_schedule_firings_total', 'Schedule firings by outcome', [
      'outcome',
    ]),
    events: counter(
      registry,
      'agent_reach_inbound_events_total',
      'Inbound events by event and outcome (started, duplicate, or the refusal code)',
      ['event', 'outcome'],
    ),
  };
}
