import {
  errorResult,
  readDecision,
  rejectedError,
  TOOL_CALL_ID_PATTERN,
  type ApprovalDecision,
  type ToolResult,
} from '@agent-reach/protocol';
import { constants, scopeRefusal, type AgentSpec, type ToolCatalogEntry } from '@agent-reach/shared';
import type { ToolCatalog } from '../fleet/tool-catalog.js';
import type { Approval, RunState } from './run-state.js';
import type { RunEvent, RunEventBody } from './events.js';
import type { AgentLoopDeps } from './loop-options.js';
import type { OwedCall } from './steps.js';

/**
 * Every decision the scheduler takes about approvals: which owed calls make a run park, how a stored
 * decision joins a parked run, what a rejected or overdue call answers. The executor's own check (a
 * recorded approval before a confirmation-requiring tool runs) shares `readDecision` from `shared`.
 */

/**
 * Whether the turn must wait for a person: a call, with valid arguments and no decision yet, to a tool
 * that requires confirmation, or to a `requires_grant` tool the run was not granted when the agent has
 * `grant_by_approval` (the request then asks for the grant). New requests are recorded in the state and
 * announced once; an approved grant joins the run's grants.
 */
export function requestApprovals(
  state: RunState,
  owed: OwedCall[],
  deps: Pick<AgentLoopDeps, 'catalog' | 'agent'>,
  emit: (e: RunEventBody) => void,
): boolean {
  let waiting = false;
  for (const call of owed) {
    const approval = state.approvals[call.id];
    if (approval?.decision) {
      if (approval.decision === 'approved' && approval.grant) grantTool(state, approval.tool);
      continue;
    }
    const entry = deps.catalog.get(call.name);
    if (!entry || !deps.agent.tools.includes(call.name)) continue;
    const grant = asksForGrant(state, deps.agent, entry);
    if (!entry.requiresConfirmation && !grant) continue;
    if (!deps.catalog.checkArguments(call.name, call.arguments).ok) continue; // refused without asking anyone
    waiting = true;
    if (!approval) {
      state.approvals[call.id] = {
        toolCallId: call.id,
        tool: call.name,
        arguments: call.arguments,
        requestedAt: Date.now(),
        ...(grant ? { grant: true } : {}),
      };
      emit({
        type: 'approval_requested',
        tool_call_id: call.id,
        tool: call.name,
        arguments: call.arguments,
        ...(grant ? { grant: true } : {}),
      });
    }
  }
  return waiting;
}

/**
 * Whether a call of `entry` must ask a person for a grant: the tool requires one the run does not hold,
 * the agent lets a person give it, and the tool is within the agent's scopes (no grant would let an
 * out-of-scope call run).
 */
function asksForGrant(
  state: RunState,
  agent: Pick<AgentSpec, 'name' | 'scopes' | 'grant_by_approval'>,
  entry: Pick<ToolCatalogEntry, 'name' | 'requiresGrant' | 'accessScope'>,
): boolean {
  if (!entry.requiresGrant || agent.grant_by_approval !== true) return false;
  if (state.grants?.includes(entry.name)) return false;
  return scopeRefusal(agent, { name: entry.name, accessScope: entry.accessScope }) === undefined;
}

/** A tool a person granted: held by the run from now on (the next checkpoint writes it to the record). */
function grantTool(state: RunState, tool: string): void {
  if (state.grants?.includes(tool)) return;
  state.grants = [...(state.grants ?? []), tool];
}

/**
 * The answer of a reachable call that is settled without going to an executor: a confirmation-requiring
 * call whose arguments are invalid (nobody was asked), or a call a person rejected.
 */
export function settledByApproval(
  state: RunState,
  call: OwedCall,
  catalog: Pick<ToolCatalog, 'get' | 'checkArguments'>,
): ToolResult | undefined {
  const approval = state.approvals[call.id];
  if (catalog.get(call.name)?.requiresConfirmation) {
    const check = catalog.checkArguments(call.name, call.arguments);
    if (!check.ok) return errorResult({ toolCallId: call.id, name: call.name }, check.error);
  }
  if (approval?.decision === 'rejected') {
    return errorResult({ toolCallId: call.id, name: call.name }, rejectedError(approval, call.name));
  }
  return undefined;
}

/** Whether a person (or the timeout) rejected this call. */
export function rejectedByPerson(state: RunState, toolCallId: string): boolean {
  return Object.hasOwn(state.approvals, toolCallId) && state.approvals[toolCallId]?.decision === 'rejected';
}

/**
 * The request a person's decision on `toolCallId` would answer, or why none can be taken: the run never
 * asked about that call, or it was decided already. Looked up by own property only (ids come from callers).
 */
export function pendingRequest(
  state: RunState,
  toolCallId: string,
): { request: Approval } | { refused: 'no_request' | 'already_decided'; message: string } {
  const request = Object.hasOwn(state.approvals, toolCallId) ? state.approvals[toolCallId] : undefined;
  if (!request)
    return { refused: 'no_request', message: `run ${state.runId} has no approval request for ${toolCallId}` };
  if (request.decision)
    return { refused: 'already_decided', message: `call ${toolCallId} was already ${request.decision}` };
  return { request };
}

/** When a parked run wakes unasked: the approval timeout or the run's deadline (the loop then ends it). */
export function parkedUntil(state: RunState, timeoutMs = constants.DEFAULT_APPROVAL_TIMEOUT_MS): number {
  return Math.min(Date.now() + timeoutMs, state.deadlineAt);
}

/** Whether any request of the run has a decision (a parked run with one must be woken). */
export function anyDecided(state: RunState | undefined): boolean {
  return Object.values(state?.approvals ?? {}).some((a) => a.decision);
}

/** Pending approvals past the timeout count as rejected, so a forgotten run still ends. */
export function decideOverdue(state: RunState, timeoutMs = constants.DEFAULT_APPROVAL_TIMEOUT_MS): void {
  const now = Date.now();
  for (const a of Object.values(state.approvals)) {
    if (!a.decision && now - a.requestedAt >= timeoutMs) {
      Object.assign(a, {
        decision: 'rejected',
        by: 'agent-reach',
        reason: 'no decision before the approval timeout',
        decidedAt: now,
      });
    }
  }
}

/**
 * A stored run's requests joined with the decisions people made since it parked (`[id, json, id, json,
 * …]` as HGETALL gives them). Requests and decisions are looked up by own property only and their ids
 * checked (tool call ids as the loop makes them), so a record holding a hostile key (`__proto__`) never reaches a prototype; a request decided
 * already keeps its decision. Returns the requests and what was ignored.
 */
export function joinDecisions(
  stored: Record<string, Approval> | undefined,
  decisions: string[],
): { approvals: Record<string, Approval>; problems: string[] } {
  const approvals: Record<string, Approval> = Object.create(null) as Record<string, Approval>;
  for (const [id, a] of Object.entries(stored ?? {})) if (TOOL_CALL_ID_PATTERN.test(id)) approvals[id] = a;
  const problems: string[] = [];
  for (let i = 0; i + 1 < decisions.length; i += 2) {
    const id = decisions[i] as string;
    const pending = TOOL_CALL_ID_PATTERN.test(id) && Object.hasOwn(approvals, id) ? approvals[id] : undefined;
    if (!pending) {
      problems.push(`decision for unknown call ${JSON.stringify(id.slice(0, 80))} ignored`);
      continue;
    }
    if (pending.decision) continue;
    const d = readDecision(decisions[i + 1] as string);
    if (d) Object.assign(pending, d);
    else problems.push(`unreadable decision for call ${id} ignored`);
  }
  return { approvals, problems };
}

/** The event of a person's decision, appended while the run is parked. */
export function decisionEvent(
  request: Pick<Approval, 'toolCallId' | 'tool' | 'grant'>,
  decided: { decision: ApprovalDecision; by?: string; reason?: string },
): RunEvent {
  return {
    type: 'approval_decided',
    at: Date.now(),
    tool_call_id: request.toolCallId,
    tool: request.tool,
    decision: decided.decision,
    ...(decided.by ? { by: decided.by } : {}),
    ...(decided.reason ? { reason: decided.reason } : {}),
    ...(request.grant ? { grant: true } : {}),
  };
}
