import type { TurnOptions } from '../model/llm.js';
import { scopeRefusal, type Logger, type ToolCatalogEntry } from '@agent-reach/shared';
import type { RunState, Usage } from './run-state.js';
import { createCheckpoints, type Checkpoints } from './checkpoints.js';
import { resolveLimits, type AgentLoopDeps, type LoopLimits } from './loop-options.js';
import { handoffToolNames, handoffTools } from './handoffs.js';
import { agentToolEntries, agentToolsOf } from './agent-tools.js';

/** What every step of one run works with: its state, its dependencies, and how it records progress. */
export interface RunContext extends Checkpoints {
  state: RunState;
  deps: AgentLoopDeps;
  limits: LoopLimits;
  log: Logger;
}

export function createRunContext(state: RunState, deps: AgentLoopDeps): RunContext {
  return {
    state,
    deps,
    limits: resolveLimits(deps.agent, deps.limits, state.intent?.intent),
    log: deps.logger.child({ runId: state.runId, traceId: state.traceId, agent: state.agent }),
    ...createCheckpoints(state, deps),
  };
}

/** The tools offered to the model now: the agent's, less those whose breaker is open. */
export async function offeredTools(run: RunContext): Promise<ToolCatalogEntry[]> {
  const open = await run.deps.breakers.openTools();
  return run.deps.agent.tools
    .flatMap((name) => {
      const entry = run.deps.catalog.get(name);
      // A tool outside the agent's scopes would be refused by every executor: it is not offered.
      const inScope = entry && !scopeRefusal(run.deps.agent, { name, accessScope: entry.accessScope });
      return entry && inScope && !open.has(name) ? [entry] : [];
    })
    .concat(handoffTools(run), agentToolEntries(run));
}

/** Names the agent may call and the fleet serves (open breakers included: they close again). */
export function reachableTools(deps: Pick<AgentLoopDeps, 'agent' | 'catalog' | 'agentNamed'>): string[] {
  return [
    ...deps.agent.tools.filter((name) => deps.catalog.has(name)),
    ...handoffToolNames(deps),
    ...agentToolsOf(deps.agent).keys(),
  ];
}

/** The longest delay a Node timer takes (2^31 − 1 ms, about 24.8 days); a longer one fires after 1 ms. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** The signals of one model call (see `modelSignals`). */
export interface ModelSignals {
  /** Aborted at the run's deadline only. */
  deadline: AbortSignal;
  /** Aborted at the deadline, or when the run is cancelled or let go. */
  signal: AbortSignal;
  /** Lets go of the deadline's timer and of the listeners on the run's signals; call it once the call ended. */
  close(): void;
}

/**
 * Signals for one model call: it stops when the run is cancelled or let go (shutdown, lost ownership),
 * or at the run's deadline (`deadline` tells which). A timer and listeners of its own, released by
 * `close`, rather than `AbortSignal.timeout` and `AbortSignal.any`: those hold every call's timer and
 * signals (and what the HTTP client hung on them) until the run's deadline, minutes after the call.
 */
export function modelSignals(run: RunContext): ModelSignals {
  const deadline = new AbortController();
  const call = new AbortController();
  const stops = [run.deps.signal, run.deps.release].filter((s): s is AbortSignal => s !== undefined);
  const listeners = stops.map((stop) => [stop, () => call.abort(stop.reason)] as const);
  let timer: NodeJS.Timeout;
  // Node runs a timer of more than MAX_TIMER_MS at once: a deadline further off is waited for in steps.
  const arm = () => {
    const left = run.state.deadlineAt - Date.now();
    timer = setTimeout(
      left > MAX_TIMER_MS
        ? arm
        : () => {
            deadline.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError'));
            call.abort(deadline.signal.reason);
          },
      Math.max(1, Math.min(left, MAX_TIMER_MS)),
    );
    // Like AbortSignal.timeout's, the timer does not keep the process up.
    timer.unref();
  };
  arm();
  for (const [stop, onAbort] of listeners) {
    if (stop.aborted) call.abort(stop.reason);
    else stop.addEventListener('abort', onAbort, { once: true });
  }
  return {
    deadline: deadline.signal,
    signal: call.signal,
    close() {
      clearTimeout(timer);
      for (const [stop, onAbort] of listeners) stop.removeEventListener('abort', onAbort);
    },
  };
}

/** The settings of each model call of the run that stand over the client's own. */
export function turnOptions(run: RunContext): TurnOptions {
  return run.limits.maxOutputTokens === undefined ? {} : { maxOutputTokens: run.limits.maxOutputTokens };
}

export function addUsage(state: RunState, u: Usage): void {
  state.usage.prompt_tokens += u.prompt_tokens;
  state.usage.completion_tokens += u.completion_tokens;
  state.usage.total_tokens += u.total_tokens;
}
