import type { RunJobData } from '@agent-reach/protocol';
import type { CallbackEventInput } from '../callbacks/callback-deliveries.js';
import type { RunState } from '../agent-loop/run-state.js';

/** Where a run's events go to be delivered to its callback (the callbacks queue). */
export interface CallbackSink {
  notify(input: CallbackEventInput): Promise<void>;
}

/**
 * Hands a run's event to the callbacks queue: `finished` once it has an outcome, `awaiting_approval`
 * when it parks for a person (one event per set of calls waiting). `data` is the run's job when the caller
 * has it; without it the sink reads the job. Awaited: an event that could not be queued fails the attempt,
 * and the run's job, tried again, hands it over again (a repeat queues nothing twice).
 */
export async function notifyRunCallback(
  sink: CallbackSink | undefined,
  state: RunState,
  event: 'finished' | 'awaiting_approval',
  data?: RunJobData,
): Promise<void> {
  if (!sink || (data && !data.callback)) return;
  const pending = Object.values(state.approvals)
    .filter((a) => a.decision === undefined)
    .map((a) => ({ tool_call_id: a.toolCallId, tool: a.tool }))
    .sort((a, b) => a.tool_call_id.localeCompare(b.tool_call_id));
  await sink.notify({
    runId: state.runId,
    event,
    ...(event === 'awaiting_approval' ? { occurrence: pending.map((p) => p.tool_call_id).join(',') } : {}),
    callback: data?.callback,
    key: data?.key,
    data: {
      run_id: state.runId,
      agent: state.agent,
      status: state.outcome?.status ?? state.status,
      ...(state.outcome ? { reason: state.outcome.reason } : {}),
      ...(state.tenant ? { tenant: state.tenant } : {}),
      ...(state.sessionId ? { session_id: state.sessionId } : {}),
      ...(state.metadata ? { metadata: state.metadata } : {}),
      ...(event === 'awaiting_approval' ? { pending_approvals: pending } : {}),
    },
  });
}
