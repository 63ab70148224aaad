import { errorResult, toolMessageContent, type ToolResult } from '@agent-reach/protocol';
import { closestName } from '@agent-reach/shared';
import { settledByApproval } from './approvals.js';
import type { AgentLoopDeps } from './loop-options.js';
import { agentInCharge, type RunState } from './run-state.js';

/**
 * Results for a turn's calls, in order. Names the agent cannot reach are answered here as `unknown_tool`
 * (with the closest reachable name) without publishing them, and recorded as the call's result unless it
 * has one (then that one is the answer); every other call goes to the executors in one publish, where
 * arguments are validated and the scope is checked again.
 */
export async function resolveToolCalls(
  state: RunState,
  calls: Array<{ id: string; name: string; arguments: string }>,
  deps: Pick<AgentLoopDeps, 'dispatcher' | 'catalog' | 'agent' | 'release'>,
  fresh = false,
  /** Filled with the ids of the calls answered here, without a dispatch. */
  answeredLocally?: Set<string>,
): Promise<ToolResult[]> {
  const reachable = deps.agent.tools.filter((name) => deps.catalog.has(name));
  // A listed tool of a configured MCP server that no executor announces yet is published to wait for one.
  const reachableSet = new Set([
    ...reachable,
    ...deps.agent.tools.filter((name) => deps.catalog.expectedGroup(name) !== undefined),
  ]);
  const local = new Map<number, ToolResult>();
  const remote: Array<{ index: number; call: (typeof calls)[number] }> = [];
  calls.forEach((call, index) => {
    if (reachableSet.has(call.name)) {
      const settled = settledByApproval(state, call, deps.catalog);
      if (settled) {
        local.set(index, settled);
        return;
      }
      remote.push({ index, call });
      return;
    }
    const guess = closestName(call.name, reachable);
    local.set(
      index,
      errorResult(
        { toolCallId: call.id, name: call.name },
        {
          kind: 'unknown_tool',
          message: `there is no tool named "${call.name}" for this agent${guess ? `; did you mean "${guess}"?` : ''}`,
          ...(guess ? { did_you_mean: guess } : {}),
          available_tools: reachable,
          retryable: false,
        },
      ),
    );
  });
  // Answers decided here are recorded first, like the executors' results: the model never reads an
  // answer its call's record does not hold.
  const localIndexes = [...local.keys()];
  const recorded =
    localIndexes.length > 0 && deps.dispatcher.recordLocal
      ? await deps.dispatcher.recordLocal(
          state.runId,
          localIndexes.map((i) => local.get(i) as ToolResult),
        )
      : undefined;
  recorded?.forEach((result, j) => local.set(localIndexes[j] as number, result));
  const dispatched = remote.length
    ? await deps.dispatcher.dispatch(
        // The agent in charge made the calls: executors check its reach, scopes and grants.
        {
          runId: state.runId,
          traceId: state.traceId,
          agent: agentInCharge(state),
          deadlineAt: state.deadlineAt,
        },
        remote.map(({ call }) => ({ toolCallId: call.id, name: call.name, arguments: call.arguments })),
        { fresh, ...(deps.release ? { signal: deps.release } : {}) },
      )
    : [];
  for (const i of local.keys()) answeredLocally?.add((calls[i] as (typeof calls)[number]).id);
  const byIndex = new Map(remote.map(({ index }, i) => [index, dispatched[i] as ToolResult]));
  return calls.map((_, i) => local.get(i) ?? (byIndex.get(i) as ToolResult));
}

/**
 * What a model reads of a tool's result, on every path a result takes to a model (tool messages, context
 * providers, the history a session or a checkpoint carries): the result without the executor's
 * `attempts`, `attempt_log` and `executor_id` (they stay in the run's record), and, with `maxChars`, cut
 * to that many characters with a notice saying so.
 */
export function resultForModel(result: ToolResult, maxChars?: number): string {
  const text = toolMessageContent(result);
  if (maxChars === undefined || text.length <= maxChars) return text;
  return JSON.stringify({
    ok: result.ok,
    name: result.name,
    truncated: true,
    notice: `context cut to ${maxChars} of ${text.length} characters`,
    content: text.slice(0, maxChars),
  });
}

/** Fields of a stored result that only the executor's record may show. */
const RECORD_ONLY = ['attempts', 'attempt_log', 'executor_id'] as const;

/**
 * A stored tool message's content as the model reads it. Histories written before every path shaped
 * results (a session's earlier runs, a checkpoint) can hold a result with the executor's fields: it is
 * shaped again. Any other content is returned as it is.
 */
export function storedContentForModel(content: string): string {
  if (!RECORD_ONLY.some((field) => content.includes(`"${field}"`))) return content;
  let parsed: unknown;
  try {
    parsed = JSON.parse(content);
  } catch {
    return content;
  }
  if (!isPlatformResult(parsed)) return content;
  return resultForModel(parsed);
}

function isPlatformResult(value: unknown): value is ToolResult {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    typeof (value as Record<string, unknown>).ok === 'boolean' &&
    typeof (value as Record<string, unknown>).tool_call_id === 'string' &&
    RECORD_ONLY.some((field) => field in value)
  );
}
