import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createSchedulerMetrics } from '@agent-reach/shared';
import type { RunEvent } from '../agent-loop/events.js';
import type { RunState } from '../agent-loop/run-state.js';
import { recordRunMetrics } from './run-metrics.js';

const state = { agent: 'desk' } as RunState;

function guardrail(extra: Partial<Extract<RunEvent, { type: 'guardrail' }>>): RunEvent {
  return {
    type: 'guardrail',
    at: 0,
    guardrail: 'no_exfiltration',
    stage: 'arguments',
    check: 'pii',
    verdict: 'tripped',
    action: 'blocked_call',
    reason: 'PII',
    duration_ms: 0,
    ...extra,
  };
}

describe('guardrail metrics', () => {
  it('counts trips by guardrail and stage, a fail_closed error as a trip, a fail_open one only as an error', async () => {
    const registry = new Registry();
    const record = recordRunMetrics(createSchedulerMetrics(registry));
    record(guardrail({}), state);
    record(
      guardrail({ verdict: 'error', action: 'stopped_run', stage: 'input', guardrail: 'moderation' }),
      state,
    );
    record(
      guardrail({ verdict: 'error', action: 'let_through', stage: 'input', guardrail: 'moderation' }),
      state,
    );
    const text = await registry.metrics();
    expect(text).toContain(
      'agent_reach_guardrail_trips_total{guardrail="no_exfiltration",stage="arguments"} 1',
    );
    expect(text).toContain('agent_reach_guardrail_trips_total{guardrail="moderation",stage="input"} 1');
    expect(text).toContain(
      'agent_reach_guardrail_errors_total{guardrail="moderation",stage="input",policy="fail_closed"} 1',
    );
    expect(text).toContain(
      'agent_reach_guardrail_errors_total{guardrail="moderation",stage="input",policy="fail_open"} 1',
    );
  });
});
