import { errorResult, type ToolErrorInfo, type ToolResult } from '@agent-reach/protocol';
import {
  handoffTargets,
  handoffToolName,
  reachRefusal,
  type AgentSpec,
  type HandoffSpec,
  type ToolCatalogEntry,
} from '@agent-reach/shared';
import { filterConversation, filterName } from './handoff-filter.js';
import type { GuardStop } from './guards.js';
import { resolveLimits } from './loop-options.js';
import { agentInCharge, type RunState } from './run-state.js';
import type { RunContext } from './run-context.js';
import type { StepResult } from './steps.js';

/**
 * Handoffs: an agent's `handoffs` are offered to its model as `transfer_to_<agent>` tools (no arguments,
 * described by the target). A turn calling one hands the run over once the turn's calls are answered: the
 * transfer call is answered here, the turn's other calls run as the agent that made them, and the next
 * step (`handoff`) makes the target the agent in charge, keeping the conversation as the handoff's filter
 * says. As in the OpenAI Agents SDK, the first transfer call of a turn is taken and any other is answered
 * `Multiple handoffs detected, ignoring this one.`
 */

/** What a taken transfer call answers (the SDK's transfer message). */
const transferMessage = (to: string) => ({ assistant: to });

/** The targets of the agent in charge that are declared agents now, with their tool names. */
export function handoffsOf(
  agent: AgentSpec,
  agentNamed: ((name: string) => AgentSpec | undefined) | undefined,
): Array<HandoffSpec & { tool: string; target: AgentSpec }> {
  return handoffTargets(agent).flatMap((h) => {
    const target = agentNamed?.(h.agent);
    return target ? [{ ...h, tool: handoffToolName(h.agent), target }] : [];
  });
}

/** The transfer tools offered with the agent's own: one per target, described by the target. */
export function handoffTools(run: Pick<RunContext, 'deps'>): ToolCatalogEntry[] {
  return handoffsOf(run.deps.agent, run.deps.agentNamed).map((h) => ({
    name: h.tool,
    description:
      `Handoff to the ${h.agent} agent to handle the request. ${h.description ?? h.target.description ?? ''}`.trim(),
    parameters: { type: 'object', properties: {}, additionalProperties: false },
    group: '',
    timeoutMs: 0,
    maxAttempts: 1,
    backoffMs: 0,
    requiresConfirmation: false,
  }));
}

/** Names the model may call to hand off now. */
export function handoffToolNames(deps: Pick<RunContext['deps'], 'agent' | 'agentNamed'>): string[] {
  return handoffsOf(deps.agent, deps.agentNamed).map((h) => h.tool);
}

/**
 * Why the agent in charge may not reach `to` by the call `tool` (a transfer, an agent tool) under the
 * run's API key, as the configuration stands now (the reach rule, see `reachRefusal`), logged as a
 * security event. The doors checked the rule when the run started; a configuration changed since may have
 * taken the way away.
 */
function reachForbidden(run: RunContext, tool: string, to: string, edge: string): string | undefined {
  const from = run.deps.agent;
  const rule = reachRefusal(from, to, edge, run.deps.keyAgents);
  if (!rule) return undefined;
  run.log.warn({ tool, from: from.name, to, key: run.state.key }, 'call refused by the reach rule');
  return `this run's API key may not use agent "${to}", and ${rule} (the configuration in force)`;
}

/** The answer to a call the reach rule forbids now (see `reachForbidden`): `forbidden`, not run. */
export function keyReachRefusal(
  run: RunContext,
  tool: string,
  to: string,
  edge: string,
): ToolErrorInfo | undefined {
  const why = reachForbidden(run, tool, to, edge);
  return why === undefined
    ? undefined
    : { kind: 'forbidden', message: `"${tool}" was not run: ${why}; go on without it`, retryable: false };
}

/**
 * Reads a turn's calls for transfers: one the reach rule refuses now is answered `forbidden`; of the
 * others, the first is answered as taken and recorded as the run's pending handoff, any other as
 * ignored; the turn's other calls are left to run. Returns the guard stop when the run has already
 * handed off as often as the agent in charge allows (`loop.max_handoffs`).
 */
export function takeHandoff(
  run: RunContext,
  calls: ReadonlyArray<{ id: string; name: string; refused?: unknown }>,
): GuardStop | undefined {
  const { state, deps, limits } = run;
  const byTool = new Map(handoffsOf(deps.agent, deps.agentNamed).map((h) => [h.tool, h]));
  const forbidden: ToolResult[] = [];
  const transfers = calls.filter((c) => {
    if (c.refused || !byTool.has(c.name)) return false;
    const refused = keyReachRefusal(run, c.name, byTool.get(c.name)?.agent ?? '', 'handoff');
    if (refused) forbidden.push(errorResult({ toolCallId: c.id, name: c.name }, refused));
    return !refused;
  });
  const first = transfers[0];
  if (!first) {
    if (forbidden.length > 0) state.localResults = [...(state.localResults ?? []), ...forbidden];
    return undefined;
  }
  const made = state.handoffs ?? 0;
  if (made >= limits.maxHandoffs) {
    const to = byTool.get(first.name)?.agent ?? first.name;
    return {
      guard: 'max_handoffs',
      status: 'not_converged',
      report:
        `the run has handed off ${made} time(s), the most agent "${agentInCharge(state)}" allows ` +
        `(max_handoffs ${limits.maxHandoffs}); its call to hand off to "${to}" was not taken`,
    };
  }
  const answers: ToolResult[] = transfers.map((c, i) =>
    i === 0
      ? {
          tool_call_id: c.id,
          name: c.name,
          ok: true,
          status: 'ok',
          content: transferMessage(byTool.get(c.name)?.agent ?? ''),
          duration_ms: 0,
          attempts: 0,
        }
      : errorResult(
          { toolCallId: c.id, name: c.name },
          {
            kind: 'unavailable',
            message: 'Multiple handoffs detected, ignoring this one.',
            retryable: false,
          },
        ),
  );
  state.localResults = [...(state.localResults ?? []), ...forbidden, ...answers];
  state.pendingHandoff = { to: byTool.get(first.name)?.agent ?? '', toolCallId: first.id };
  return undefined;
}

/**
 * The handoff step: once the turn's calls are answered, the target becomes the agent in charge (its
 * instructions, tools, scopes, loop settings and model from the next turn on), the conversation is
 * filtered as the handoff declares, and the handoff is recorded and checkpointed as one step.
 */
export function handoffStep(run: RunContext): StepResult {
  const { state, deps } = run;
  const pending = state.pendingHandoff;
  delete state.pendingHandoff;
  if (!pending) return { next: { type: 'run_again' } };
  const from = agentInCharge(state);
  const target = deps.agentNamed?.(pending.to);
  if (!target) {
    // Removed from the configuration since the turn: the agent in charge goes on and is told why.
    state.messages.push({
      role: 'system',
      content: `Guard: the handoff to "${pending.to}" was not made: no such agent is declared any more. Go on yourself.`,
    });
    return { checkpoint: 'handoff', next: { type: 'run_again' } };
  }
  // The turn's other calls may have waited long (a person, a slow tool): the rule is asked again now.
  const forbidden = reachForbidden(run, handoffToolName(pending.to), pending.to, 'handoff');
  if (forbidden) {
    state.messages.push({
      role: 'system',
      content: `Guard: the handoff to "${pending.to}" was not made: ${forbidden}. Go on yourself.`,
    });
    return { checkpoint: 'handoff', next: { type: 'run_again' } };
  }
  const declared = handoffTargets(deps.agent).find((h) => h.agent === pending.to);
  const filter = declared?.input_filter ?? 'all';
  const before = state.messages.length;
  filterConversation(state, filter);
  state.inCharge = pending.to;
  state.handoffs = (state.handoffs ?? 0) + 1;
  // From here on `deps.agent` and `deps.limits` are the target's: its loop settings apply.
  run.limits = resolveLimits(deps.agent, deps.limits, state.intent?.intent);
  run.emit({
    type: 'handoff',
    turn: state.iterations,
    tool_call_id: pending.toolCallId,
    from,
    to: pending.to,
    filter: filterName(filter),
    ...(typeof filter === 'object' ? { last_n: filter.last_n } : {}),
    messages_before: before,
    messages_after: state.messages.length,
    handoffs: state.handoffs,
  });
  return { checkpoint: 'handoff', next: { type: 'run_again' } };
}

/** Whether a handoff waits to be made (the calls of its turn are answered). */
export function handoffPending(state: RunState): boolean {
  return state.pendingHandoff !== undefined;
}
