import { emitRunSpan } from '@agent-reach/shared';
import type { RunOutcome, RunState } from '../agent-loop/run-state.js';

/**
 * Emits a finished run's root span, with its outcome, tokens, iterations and tool calls: by the loop that
 * finished the run, or by the run worker for a run it ended itself (a refused job, a run out of attempts).
 */
export function emitFinishedSpan(state: RunState, outcome: RunOutcome): void {
  emitRunSpan(state, {
    agent: state.agent,
    startedAt: state.createdAt,
    status: outcome.status,
    reason: outcome.reason,
    attributes: {
      'gen_ai.usage.input_tokens': outcome.usage.prompt_tokens,
      'gen_ai.usage.output_tokens': outcome.usage.completion_tokens,
      'agent_reach.run.iterations': outcome.iterations,
      'agent_reach.run.tool_calls': outcome.steps.length,
    },
  });
}
