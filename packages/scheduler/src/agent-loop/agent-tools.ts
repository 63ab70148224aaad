import { errorResult, type ToolErrorInfo, type ToolResult } from '@agent-reach/protocol';
import {
  agentToolTargets,
  constants,
  type AgentSpec,
  type AgentToolSpec,
  type ToolCatalogEntry,
  waitAtMost,
} from '@agent-reach/shared';
import { keyReachRefusal } from './handoffs.js';
import type { ChildRunLink, RunState } from './run-state.js';
import type { RunContext } from './run-context.js';
import type { OwedCall } from './steps.js';
import { resolveToolCalls } from './tool-calls.js';

/**
 * Agents called as tools. A call of an agent tool starts a child run on the fleet (an ordinary run of the
 * called agent, linked to this run and call) and the run parks until the child's end records the call's
 * result, as an executor would; the next pass answers the call from that record. The loop asks for child
 * runs through `ChildRuns`, which `runs/` implements.
 */

/** What a call of an agent tool asks for: a child run of `agent`, linked to its parent and call. */
export interface ChildRunRequest {
  parentRunId: string;
  callId: string;
  /** The parent's tool the call named. */
  tool: string;
  agent: string;
  input: string;
  traceId: string;
  tenant?: string;
  key?: string;
  /** The child's depth (the root run is 0). */
  depth: number;
  maxDepth: number;
  /** The parent's deadline: the child's own is never later. */
  deadlineAt: number;
}

/** The loop's interface to child runs (implemented by `runs/child-runs.ts`). */
export interface ChildRuns {
  /** A declared agent, by name (its description and output schema describe the tool). */
  agent(name: string): AgentSpec | undefined;
  /** Starts the child run of a call unless it exists (its id is derived from the parent and the call). */
  start(request: ChildRunRequest): Promise<string>;
  /** The recorded results of a run's calls, in order; undefined where a call has none yet. */
  answers(runId: string, callIds: string[]): Promise<Array<ToolResult | undefined>>;
  /** Asks child runs to stop; each answers its parent's call as cancelled when it ends. */
  cancel(runIds: string[]): Promise<void>;
  /**
   * Looks after a started child that has not answered: one whose job is gone (removed from the queue,
   * lost with Redis) is queued again under the same id, or answers from its record when it ended.
   */
  revive?(request: ChildRunRequest): Promise<'alive' | 'answered' | 'restarted'>;
  /**
   * Admits a child into its tenant's quota, knowing how many other children of the run are running;
   * a refusal is the call's error.
   */
  admit?(request: ChildRunRequest, othersRunning: number): Promise<ToolErrorInfo | undefined>;
}

/** Longest `input` a call of an agent tool may pass, in characters. */
const MAX_AGENT_TOOL_INPUT_CHARS = 32_000;

/** The agent tools `agent` declares, by tool name. */
export function agentToolsOf(agent: AgentSpec): Map<string, AgentToolSpec & { name: string }> {
  return new Map(agentToolTargets(agent).map((t) => [t.name, t]));
}

/** The agent tools the model is offered, as catalog entries (a child run has no executor timeout). */
export function agentToolEntries(run: RunContext): ToolCatalogEntry[] {
  const children = run.deps.children;
  if (!children) return [];
  return agentToolTargets(run.deps.agent).flatMap((t) => {
    const target = children.agent(t.agent);
    if (!target) return [];
    const returns = target.output_schema
      ? 'It answers with JSON matching its output schema.'
      : 'It answers with its final answer as text.';
    return [
      {
        name: t.name,
        description:
          `${t.description ?? target.description ?? `Ask the ${t.agent} agent.`} ${returns} ` +
          'It does not see this conversation: put everything it needs in "input".',
        parameters: {
          type: 'object',
          additionalProperties: false,
          required: ['input'],
          properties: {
            input: {
              type: 'string',
              minLength: 1,
              description: 'The request for the agent, complete on its own.',
            },
          },
        },
        group: 'agents',
        timeoutMs: Math.max(0, run.state.deadlineAt - Date.now()),
        maxAttempts: 1,
        backoffMs: 0,
        requiresConfirmation: false,
      },
    ];
  });
}

/** The link of a call to the child run it started, if it started one. */
export function childOf(state: RunState, toolCallId: string): ChildRunLink | undefined {
  return state.children?.find((c) => c.toolCallId === toolCallId);
}

/**
 * Answers the owed calls of agent tools that have a recorded result (into `localResults`, where the
 * round reads them) once all of them have one; starts the child run of each call that has neither a
 * result nor a child; refuses a call the reach rule forbids now, one past the depth or child-run limit,
 * or one with a bad `input`. Returns true while a child has still to answer: the run then parks (no
 * worker slot held) until a child's end wakes it.
 */
export async function awaitChildren(run: RunContext, owed: OwedCall[]): Promise<boolean> {
  const { state, deps } = run;
  const children = deps.children;
  const tools = agentToolsOf(deps.agent);
  const calls = owed.filter((c) => tools.has(c.name));
  if (!children || calls.length === 0) return false;
  const ids = calls.map((c) => c.id);
  let answers = await children.answers(state.runId, ids);
  const refusals: ToolResult[] = [];
  const late = Date.now() >= state.deadlineAt;
  for (const [i, call] of calls.entries()) {
    if (answers[i]) continue;
    const child = childOf(state, call.id);
    const agent = tools.get(call.name)?.agent ?? '';
    if (child && !late) {
      await children.revive?.(childRequest(run, call, child.agent));
      continue;
    }
    const refused = late
      ? deadlinePassed(state)
      : (refusal(run, call, agent) ??
        (await children.admit?.(childRequest(run, call, agent), openChildren(state).length)));
    if (refused) {
      refusals.push(errorResult({ toolCallId: call.id, name: call.name }, refused));
      continue;
    }
    await startChild(run, call, agent, children);
  }
  if (refusals.length > 0) {
    await deps.dispatcher.recordLocal?.(state.runId, refusals);
    if (late)
      await children.cancel(
        openChildren(
          state,
          refusals.map((r) => r.tool_call_id),
        ),
      );
    // Recorded first-wins, so a child's answer recorded meanwhile stands; a loop with no record uses its own.
    const byId = new Map(refusals.map((r) => [r.tool_call_id, r]));
    answers = (await children.answers(state.runId, ids)).map((a, i) => a ?? byId.get(ids[i] as string));
  }
  if (answers.some((a) => a === undefined)) return true;
  state.localResults = [...(state.localResults ?? []), ...(answers as ToolResult[])];
  for (const id of ids) {
    const child = childOf(state, id);
    if (child) child.answered = true;
  }
  return false;
}

async function startChild(
  run: RunContext,
  call: OwedCall,
  agent: string,
  children: ChildRuns,
): Promise<void> {
  const { state } = run;
  const request = childRequest(run, call, agent);
  const { depth } = request;
  const runId = await children.start(request);
  if (childOf(state, call.id)) return;
  state.children = [...(state.children ?? []), { toolCallId: call.id, tool: call.name, agent, runId }];
  run.emit({
    type: 'child_run_started',
    tool_call_id: call.id,
    tool: call.name,
    agent,
    child_run_id: runId,
    depth,
  });
}

/** What starting the child run of a call asks for (the same every time: its id derives from it). */
function childRequest(run: RunContext, call: OwedCall, agent: string): ChildRunRequest {
  const { state } = run;
  return {
    parentRunId: state.runId,
    callId: call.id,
    tool: call.name,
    agent,
    input: inputOf(call.arguments) ?? '',
    traceId: state.traceId,
    ...(state.tenant ? { tenant: state.tenant } : {}),
    ...(state.key ? { key: state.key } : {}),
    depth: (state.parent?.depth ?? 0) + 1,
    maxDepth: maxDepthOf(run),
    deadlineAt: state.deadlineAt,
  };
}

/**
 * The other calls of a turn that waits for child runs go to the executors now, so they run while the
 * children do (as a turn's calls run in parallel); their results wait in the run's record, where the round
 * that answers the turn finds them without publishing them again.
 */
export async function dispatchBeside(run: RunContext, open: OwedCall[], fresh: boolean): Promise<void> {
  const tools = agentToolsOf(run.deps.agent);
  const local = new Set((run.state.localResults ?? []).map((r) => r.tool_call_id));
  const others = open.filter((c) => !tools.has(c.name) && !local.has(c.id));
  const remainingMs = run.state.deadlineAt - Date.now();
  if (others.length === 0 || remainingMs <= 0) return;
  const dispatched = resolveToolCalls(run.state, others, run.deps, fresh);
  // Calls still out at the deadline are answered by the round that ends the run, from what the record holds.
  dispatched.catch(() => undefined);
  await waitAtMost(dispatched, remainingMs);
}

/** How deep the run's tree of agent calls may grow: its root's limit, carried by every child. */
function maxDepthOf(run: RunContext): number {
  return run.state.parent?.maxDepth ?? run.deps.agent.max_agent_depth ?? constants.DEFAULT_MAX_AGENT_DEPTH;
}

/** Why a call of an agent tool is answered without a child run, if it is. */
function refusal(run: RunContext, call: OwedCall, agent: string): ToolErrorInfo | undefined {
  const forbidden = keyReachRefusal(run, call.name, agent, `agent tool ${call.name}`);
  if (forbidden) return forbidden;
  const depth = (run.state.parent?.depth ?? 0) + 1;
  const max = maxDepthOf(run);
  if (depth > max) {
    return {
      kind: 'forbidden',
      message:
        `"${call.name}" was not called: agents called as tools may nest ${max} deep (max_agent_depth) ` +
        `and this run is at depth ${depth - 1}; answer without it`,
      retryable: false,
    };
  }
  const started = run.state.children?.length ?? 0;
  if (started >= constants.MAX_CHILD_RUNS_PER_RUN) {
    return {
      kind: 'forbidden',
      message:
        `"${call.name}" was not called: a run may start at most ${constants.MAX_CHILD_RUNS_PER_RUN} runs of ` +
        `agents called as tools and this one has started ${started}; answer with what they gave`,
      retryable: false,
    };
  }
  if (inputOf(call.arguments) === undefined) {
    return {
      kind: 'invalid_arguments',
      message: `"${call.name}" takes {"input": "<the request for the agent>"}: a non-empty string of at most ${MAX_AGENT_TOOL_INPUT_CHARS} characters`,
      field: '/input',
      expected: 'a non-empty string',
      example: { input: 'What is the refund policy for damaged items?' },
      retryable: false,
    };
  }
  return undefined;
}

function deadlinePassed(state: RunState): ToolErrorInfo {
  return {
    kind: 'unavailable',
    message: `no answer from the called agent before the run's deadline (${new Date(state.deadlineAt).toISOString()})`,
    retryable: false,
  };
}

/** The `input` of an agent tool's arguments, when they are well formed. */
function inputOf(args: string): string | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(args);
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return undefined;
  const keys = Object.keys(parsed);
  const input = (parsed as { input?: unknown }).input;
  if (keys.length !== 1 || typeof input !== 'string' || !input.trim()) return undefined;
  return input.length <= MAX_AGENT_TOOL_INPUT_CHARS ? input : undefined;
}

/** Run ids of the run's children still owing an answer, among `callIds` (all when absent). */
function openChildren(state: RunState, callIds?: string[]): string[] {
  return (state.children ?? [])
    .filter((c) => !c.answered && (!callIds || callIds.includes(c.toolCallId)))
    .map((c) => c.runId);
}

/**
 * A run that ends stops its children still working (a cancelled parent cancels its children); each
 * ends `cancelled` and answers the call, which the ended parent no longer reads.
 */
export async function cancelChildren(run: RunContext): Promise<void> {
  const open = openChildren(run.state);
  if (open.length === 0 || !run.deps.children) return;
  try {
    await run.deps.children.cancel(open);
  } catch (err) {
    run.log.warn({ err }, 'cancelling child runs failed');
  }
}
