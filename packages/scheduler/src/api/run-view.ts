import type { RunState } from '../agent-loop/run-state.js';
import {
  upgradeRunJob,
  DEFAULT_TENANT,
  RESERVED_RUN_IDS as BULLMQ_KEY_NAMES,
  type RunJobData,
  type RunSummaryView,
  type RunView,
  type ToolResult,
} from '@agent-reach/protocol';
import type { RunControl } from '../runs/run-control.js';
import type { RunSummary, StoredEvent } from '../runs/run-store.js';
import { assertAgentAllowed, seesTenant, type Principal } from './auth.js';
import { notFound } from './errors.js';
import type { ApiContext } from './options.js';
import { hiddenSessions } from './session-access.js';

/** The workflow node a run is, from the metadata its coordinator gave it. */
const workflowLink = (metadata: Record<string, string> | undefined) =>
  metadata?.workflow_id && metadata.workflow_node
    ? { workflow: { workflow_id: metadata.workflow_id, node: metadata.workflow_node } }
    : {};

const num = (n: number | undefined) => (typeof n === 'number' && Number.isFinite(n) ? n : 0);

/** A run's listing fields on the wire. */
export function summaryView(s: RunSummary): RunSummaryView {
  return {
    run_id: s.runId,
    agent: s.agent,
    status: s.status,
    ...(s.traceId ? { trace_id: s.traceId } : {}),
    ...(s.sessionId ? { session_id: s.sessionId } : {}),
    tenant: s.tenant ?? DEFAULT_TENANT,
    created_at: num(s.createdAt),
    updated_at: num(s.updatedAt),
    iterations: num(s.iterations),
    cancel_requested: s.cancelRequested === true,
    ...(s.reason ? { reason: s.reason } : {}),
    ...(s.configVersion === undefined ? {} : { config_version: s.configVersion }),
    ...(s.metadata ? { metadata: s.metadata } : {}),
    ...(s.tools?.length ? { tools: s.tools } : {}),
    ...(s.errorKinds?.length ? { error_kinds: s.errorKinds } : {}),
    ...(s.inputPreview !== undefined ? { input_preview: s.inputPreview } : {}),
    ...(s.calls !== undefined ? { calls: s.calls } : {}),
    ...(s.errors !== undefined ? { errors: s.errors } : {}),
    ...(s.retries !== undefined ? { retries: s.retries } : {}),
  };
}

function stateView(state: RunState, summary: RunSummary | undefined): RunView {
  const outcome = state.outcome;
  return {
    ...summaryView(
      summary && summary.agent
        ? summary
        : {
            runId: state.runId,
            traceId: state.traceId,
            agent: state.agent,
            status: state.status,
            createdAt: state.createdAt,
            updatedAt: 0,
            iterations: state.iterations,
            cancelRequested: summary?.cancelRequested === true,
          },
    ),
    // The state is the newer record when the listing lags a step behind.
    status: state.status,
    ...(state.configVersion === undefined ? {} : { config_version: state.configVersion }),
    input: state.input,
    // The agent a handoff left the run with, and how often it handed off (docs/handoffs.md).
    ...(state.inCharge && state.inCharge !== state.agent ? { in_charge: state.inCharge } : {}),
    ...(state.handoffs ? { handoffs: state.handoffs } : {}),
    ...(state.sessionId ? { session_id: state.sessionId } : {}),
    tenant: state.tenant ?? DEFAULT_TENANT,
    ...(state.metadata ? { metadata: state.metadata } : {}),
    ...workflowLink(state.metadata),
    ...(outcome ? { reason: outcome.reason } : {}),
    ...(outcome?.answer !== undefined ? { answer: outcome.answer } : {}),
    ...(outcome?.output !== undefined ? { output: outcome.output } : {}),
    ...(outcome?.report !== undefined ? { report: outcome.report } : {}),
    usage: { ...state.usage },
    ...costView(state),
    steps: state.steps.map((s) => ({
      turn: s.turn,
      tool_call_id: s.tool_call_id,
      tool: s.tool,
      arguments: s.arguments,
      ok: s.ok,
      ...(s.error_kind ? { error_kind: s.error_kind } : {}),
      duration_ms: s.duration_ms,
      // A step answered from a recording (a replay) may carry no count of its own: it was tried once.
      attempts: s.attempts ?? 1,
      ...(s.attempt_log ? { attempt_log: s.attempt_log } : {}),
      ...(s.truncated ? { truncated: true } : {}),
      ...(s.kind ? { kind: s.kind } : {}),
      ...(s.answered ? { answered: s.answered } : {}),
      ...(s.executor_id ? { executor_id: s.executor_id } : {}),
      ...(s.ref ? { ref: s.ref } : {}),
      ...(s.child_run_id ? { child_run_id: s.child_run_id } : {}),
    })),
    // The task stack, each step done or open (a run that ended tasks_incomplete shows which).
    ...(state.plan?.steps.length ? { tasks: state.plan.steps.map((t) => ({ ...t })) } : {}),
    pending_approvals: Object.values(state.approvals)
      .filter((a) => !a.decision)
      .map((a) => ({
        tool_call_id: a.toolCallId,
        tool: a.tool,
        arguments: a.arguments,
        requested_at: a.requestedAt,
        ...(a.grant ? { grant: true as const } : {}),
      })),
    ...grantedView(state),
    ...(state.variant ? { variant: state.variant } : {}),
    ...familyView(state),
  };
}

/** A child run's parent and a parent's children (agents called as tools). */
function familyView(state: RunState): Pick<RunView, 'parent' | 'children'> {
  const p = state.parent;
  return {
    ...(p ? { parent: { run_id: p.runId, tool_call_id: p.callId, tool: p.tool, depth: p.depth } } : {}),
    ...(state.children?.length
      ? {
          children: state.children.map((c) => ({
            tool_call_id: c.toolCallId,
            tool: c.tool,
            agent: c.agent,
            run_id: c.runId,
          })),
        }
      : {}),
  };
}

/** A run that is still a job only: no scheduler has checkpointed it yet. */
export function queuedView(data: RunJobData, createdAt: number, cancelRequested = false): RunView {
  return {
    run_id: data.run_id,
    agent: data.agent,
    status: 'queued',
    ...(data.trace_id ? { trace_id: data.trace_id } : {}),
    ...(data.session_id ? { session_id: data.session_id } : {}),
    tenant: data.tenant ?? DEFAULT_TENANT,
    created_at: createdAt,
    updated_at: createdAt,
    iterations: 0,
    cancel_requested: cancelRequested,
    input: data.input,
    ...(data.metadata ? { metadata: data.metadata } : {}),
    ...workflowLink(data.metadata),
    usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
    steps: [],
    pending_approvals: [],
    ...(data.variant ? { variant: data.variant } : {}),
    ...(data.parent
      ? {
          parent: {
            run_id: data.parent.run_id,
            tool_call_id: data.parent.call_id,
            tool: data.parent.tool,
            depth: data.parent.depth,
          },
        }
      : {}),
  };
}

/** A run as the API shows it (its checkpoint, else its queued job) with its state when it has one. */
export interface LoadedRun {
  view: RunView;
  state: RunState | undefined;
}

/** Loads a run; undefined when neither a checkpoint, a listing nor a job exists. */
export async function loadRun(control: RunControl, runId: string): Promise<LoadedRun | undefined> {
  if (BULLMQ_KEY_NAMES.has(runId)) return undefined;
  const got = await control.get(runId);
  if (got?.state) return { view: stateView(got.state, got.summary), state: got.state };
  const job = await control.queue.getJob(runId);
  if (job?.data?.agent) {
    const data = upgradeRunJob(job.data) as RunJobData;
    const view = queuedView(data, data.created_at ?? job.timestamp, got?.summary.cancelRequested === true);
    // Listed at its acceptance: the listing says whether a scheduler took it up already, and when.
    const listed = got?.summary.agent ? got.summary : undefined;
    return {
      view: listed ? { ...view, status: listed.status, updated_at: num(listed.updatedAt) } : view,
      state: undefined,
    };
  }
  // A listing without state or job: the job was removed but the record kept (or the reverse).
  if (got?.summary.agent) {
    const view: RunView = {
      ...summaryView(got.summary),
      usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
      steps: [],
      pending_approvals: [],
    };
    return { view, state: undefined };
  }
  return undefined;
}

/**
 * Loads a run the caller may see: 404 when unknown, 403 when the key may not use its agent, and 404 when
 * the run belongs to a session that is not the caller's (the answer of a missing run: a session's
 * conversation does not leak through its runs, nor does their existence).
 */
export async function runForCaller(ctx: ApiContext, runId: string, principal: Principal): Promise<LoadedRun> {
  const run = await loadRun(ctx.deps.control, runId);
  // Another tenant's run is missing, whatever the key's agents: existence is not confirmed.
  if (!run || !seesTenant(principal, run.view.tenant)) throw notFound(`run ${runId}`);
  assertAgentAllowed(principal, run.view.agent);
  const sessionId = run.view.session_id;
  if (
    sessionId !== undefined &&
    (await hiddenSessions(ctx, principal, [sessionId], run.view.tenant)).has(sessionId)
  )
    throw notFound(`run ${runId}`);
  return run;
}

/**
 * The run with what its events hold: each step's result exactly as the model saw it, and its model turns
 * (tokens, latency, reasoning). Steps keep only small fields in the run's state, which is rewritten at
 * every checkpoint; results are read from the append-only event stream instead.
 */
export function withEvents(view: RunView, events: StoredEvent[]): RunView {
  const results = new Map<string, ToolResult>();
  const turns: NonNullable<RunView['turns']> = [];
  for (const { event: e } of events) {
    if (e.type === 'tool_result' && e.result !== undefined) results.set(e.tool_call_id, e.result);
    if (e.type === 'llm_request')
      turns.push({
        turn: e.turn,
        model: e.model,
        latency_ms: e.latency_ms,
        prompt_tokens: e.prompt_tokens,
        completion_tokens: e.completion_tokens,
        finish_reason: e.finish_reason,
        tool_calls: e.tool_calls,
        ...(e.reasoning !== undefined ? { reasoning: e.reasoning } : {}),
        ...(e.answered_by !== undefined ? { answered_by: e.answered_by } : {}),
        ...(e.fallback ? { fallback: e.fallback } : {}),
        ...(e.cost !== undefined ? { cost: e.cost } : {}),
      });
  }
  return {
    ...view,
    steps: view.steps.map((s) =>
      results.has(s.tool_call_id) ? { ...s, result: results.get(s.tool_call_id) } : s,
    ),
    turns,
  };
}

/** A run's cost and its tokens by the model that answered, when it has them. */
function costView(state: RunState): Pick<RunView, 'cost' | 'model_usage'> {
  return {
    ...(state.cost !== undefined ? { cost: state.cost } : {}),
    ...(state.modelUsage
      ? { model_usage: Object.entries(state.modelUsage).map(([model, u]) => ({ model, ...u })) }
      : {}),
  };
}

/** Tools a person granted the run by approving a grant request: who, when, for which call. */
function grantedView(state: RunState): Pick<RunView, 'granted_by_approval'> {
  const granted = Object.values(state.approvals).filter((a) => a.grant && a.decision === 'approved');
  if (granted.length === 0) return {};
  return {
    granted_by_approval: granted.map((a) => ({
      tool: a.tool,
      tool_call_id: a.toolCallId,
      ...(a.by ? { by: a.by } : {}),
      ...(a.reason ? { reason: a.reason } : {}),
      ...(a.decidedAt === undefined ? {} : { granted_at: a.decidedAt }),
    })),
  };
}
