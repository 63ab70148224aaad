import type {
  CompactionSummary,
  FinalStatus,
  GuardName,
  RunOutcome,
  RunStatus,
  StepRecord,
  RunVariant,
  TaskStep,
  ToolResult,
  Usage,
} from '@agent-reach/protocol';

export type { CompactionSummary, FinalStatus, GuardName, RunOutcome, RunStatus, StepRecord, TaskStep, Usage };
import type { IntentDecision } from './intent.js';
import type { TopicCheck } from './topic-gate.js';
import type { GuardrailVerdict } from './guardrail-verdicts.js';
import type { ChatMessage } from '../model/llm.js';

export type { ChatMessage };

/**
 * Everything a run is, as one plain serializable object: the loop reads and writes only this, so a
 * checkpoint of it is enough to resume the run anywhere.
 */
/** A person's decision on one call of a tool that requires confirmation. */
export interface Approval {
  toolCallId: string;
  tool: string;
  arguments: string;
  requestedAt: number;
  decision?: 'approved' | 'rejected';
  by?: string;
  reason?: string;
  decidedAt?: number;
  /** The request asks a person to grant the tool to the run (`grant_by_approval`), not only this call. */
  grant?: true;
}

/** A call of an agent tool and the child run it started (see agent-tools.ts). */
export interface ChildRunLink {
  toolCallId: string;
  tool: string;
  agent: string;
  runId: string;
  /** The call was answered from the child's recorded result. */
  answered?: true;
}

export interface RunState {
  v: 1;
  runId: string;
  traceId: string;
  /** The caller's span (W3C `traceparent`) the run's root span is a child of, when it came with one. */
  traceParent?: string;
  agent: string;
  input: string;
  sessionId?: string;
  /** The tenant the run belongs to; absent in runs recorded before tenants: `default`. */
  tenant?: string;
  /** Caller-supplied labels, kept with the run. */
  metadata?: Record<string, string>;
  /** Tools requiring a grant this run may call (its request's and its session's), checked by executors. */
  grants?: string[];
  /** How the request was classified before the first model call (multi-step runs get a plan). */
  intent?: IntentDecision;
  /** How the request stood against the agent's topics (absent when the agent has none). */
  topic?: TopicCheck;
  /** The agent's context providers were called (their calls are in the history, before the first turn). */
  contextRequested?: boolean;
  /** Version of the fleet configuration the run started under (0: a local agents file). */
  configVersion?: number;
  /** Calls waiting for, or decided by, a person, by tool call id. */
  approvals: Record<string, Approval>;
  status: RunStatus;
  createdAt: number;
  /** Epoch ms after which the run stops (`deadline` guard). */
  deadlineAt: number;
  plan: { requested: boolean; steps: TaskStep[] };
  summary?: CompactionSummary;
  /** History after the system prompt: user, assistant, tool and guard messages. */
  messages: ChatMessage[];
  iterations: number;
  usage: Usage;
  /** Tokens (and cost, where priced) by the `<provider>/<model>` that answered: see model/model-usage.ts. */
  modelUsage?: Record<string, ModelUsage>;
  /** What the run's model turns cost, from the price table; absent while no turn was priced. */
  cost?: number;
  /** The name of the API key that started the run, when one did. */
  key?: string;
  steps: StepRecord[];
  guard: {
    lastSignature?: string;
    repeatCount: number;
    nudged: boolean;
    failedRounds: number;
    /** Rounds in a row spent fixing the model's own arguments (absent in older records: 0). */
    argumentFixRounds?: number;
  };
  compactions: number;
  /**
   * Results decided when the model turn was read (a call of an unsupported type, oversized or cut-off
   * arguments): the owed calls they answer get them instead of a dispatch, in the calls' order.
   */
  localResults?: ToolResult[];
  /** A guard note for the model, added after the owed calls are answered (e.g. calls left out). */
  turnNote?: string;
  /** Verdicts of the agent's guardrails by check (see guardrails.ts): a resumed run does not ask again. */
  guardrailVerdicts?: Record<string, GuardrailVerdict>;
  /** Guardrail tool calls about to be published: the checkpoint puts them in the run's ledger, not the history. */
  guardrailCalls?: Array<{ id: string; name: string; arguments: string }>;
  /** A final answer waiting for the output guardrails: a resumed run checks it instead of asking again. */
  pendingFinal?: {
    answer: string;
    truncated: boolean;
    output?: unknown;
    /** The assistant message of the answer, kept out of the history until the guardrails pass. */
    said?: string;
  };
  /** JSON Schema the final answer must match (the run's own, else its agent's at the run's start). */
  outputSchema?: Record<string, unknown>;
  /** The run's variant: overrides of its agent's configuration for this run only, kept across resumes. */
  variant?: RunVariant;
  /** Final answers sent back to the model so far for missing the output schema. */
  outputRetries?: number;
  /** Final answers sent back to the model so far for leaving steps of the task stack open. */
  taskReminders?: number;
  outcome?: RunOutcome;
  /** The agent in charge once the run handed off (absent: `agent`, the one it started with). */
  inCharge?: string;
  /** Handoffs made so far (absent: none). */
  handoffs?: number;
  /** A handoff the last model turn asked for, made once that turn's calls are answered. */
  pendingHandoff?: PendingHandoff;
  /** Set on a child run (an agent called as a tool): the call of the parent run it answers. */
  parent?: { runId: string; callId: string; tool: string; depth: number; maxDepth: number };
  /** The child runs this run's agent-tool calls started, in order. */
  children?: ChildRunLink[];
}

/** A `transfer_to_<to>` call taken, waiting for the other calls of its turn (see agent-loop/handoffs.ts). */
export interface PendingHandoff {
  to: string;
  toolCallId: string;
}

/** The agent whose instructions, tools, scopes, limits and model the run's next step uses. */
export function agentInCharge(state: Pick<RunState, 'agent' | 'inCharge'>): string {
  return state.inCharge ?? state.agent;
}

/** Tokens one model spent in a run, and their cost when the model has a price. */
export interface ModelUsage {
  turns: number;
  prompt_tokens: number;
  completion_tokens: number;
  cost?: number;
}

/** Notes a summary keeps at most (the latest), so a long session stays bounded. */
export const MAX_SUMMARY_NOTES = 30;

/** A summary carried into a run whose goal is `goal`: the earlier goal becomes a note. */
export function retarget(summary: CompactionSummary, goal: string): CompactionSummary {
  if (summary.goal === goal) return summary;
  return {
    ...summary,
    goal,
    notes: [...summary.notes, `earlier request: ${summary.goal.slice(0, 300)}`].slice(-MAX_SUMMARY_NOTES),
  };
}

export function createRunState(init: {
  runId: string;
  traceId?: string;
  traceParent?: string;
  agent: string;
  input: string;
  deadlineMs: number;
  /** The latest the deadline may be, epoch ms (a child run's parent's deadline). */
  deadlineCapAt?: number;
  history?: ChatMessage[];
  /** Carried from a session's earlier runs. */
  summary?: CompactionSummary;
  steps?: TaskStep[];
  sessionId?: string;
  tenant?: string;
  metadata?: Record<string, string>;
  key?: string;
  grants?: string[];
  configVersion?: number;
  now?: number;
  /** When the run was created, if before now (it waited in the queue). Default: now. */
  createdAt?: number;
  outputSchema?: Record<string, unknown>;
  variant?: RunVariant;
  /** The agent in charge from the start, when not `agent` (a session continuing after a handoff). */
  inCharge?: string;
}): RunState {
  const now = init.now ?? Date.now();
  return {
    v: 1,
    runId: init.runId,
    traceId: init.traceId ?? init.runId,
    ...(init.traceParent ? { traceParent: init.traceParent } : {}),
    agent: init.agent,
    input: init.input,
    ...(init.sessionId ? { sessionId: init.sessionId } : {}),
    ...(init.tenant ? { tenant: init.tenant } : {}),
    ...(init.metadata ? { metadata: init.metadata } : {}),
    ...(init.key ? { key: init.key } : {}),
    ...(init.grants && init.grants.length > 0 ? { grants: init.grants } : {}),
    ...(init.configVersion === undefined ? {} : { configVersion: init.configVersion }),
    ...(init.outputSchema ? { outputSchema: init.outputSchema } : {}),
    ...(init.inCharge ? { inCharge: init.inCharge } : {}),
    ...(init.variant ? { variant: init.variant } : {}),
    approvals: {},
    status: 'queued',
    createdAt: init.createdAt ?? now,
    deadlineAt: Math.min(now + init.deadlineMs, init.deadlineCapAt ?? Infinity),
    // Steps a session's earlier run left open stay in view, marked as carried (see open-tasks.ts).
    plan: {
      requested: false,
      steps: (init.steps ?? []).filter((s) => !s.done).map((s) => ({ ...s, carried: true as const })),
    },
    // A session's summary was written for an earlier run: this run's goal is its own input.
    ...(init.summary ? { summary: retarget(init.summary, init.input) } : {}),
    messages: [...(init.history ?? []), { role: 'user', content: init.input }],
    iterations: 0,
    usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
    steps: [],
    guard: { repeatCount: 0, nudged: false, failedRounds: 0 },
    compactions: 0,
  };
}

/*
 * Status transitions. A run is `queued` until the loop first takes it up, `running` while the loop
 * works on it, `awaiting_approval` while parked for a person, and final once it has an outcome.
 */

/** The loop takes the run up; returns true when it starts for the first time (it was queued). */
export function markRunning(state: RunState): boolean {
  if (state.status === 'awaiting_approval') state.status = 'running';
  if (state.status !== 'queued') return false;
  state.status = 'running';
  return true;
}

/** The run waits for a person's decision on a call (the approvals say which). */
export function markParked(state: RunState): void {
  state.status = 'awaiting_approval';
}

/** The run ended: its status is its outcome's, for good. */
export function markFinished(state: RunState, outcome: RunOutcome): void {
  state.outcome = outcome;
  state.status = outcome.status;
}

/** The tool calls of the last assistant message that have no tool message yet (a resumed run owes them). */
export function unansweredCalls(state: RunState): Array<{ id: string; name: string; arguments: string }> {
  for (let i = state.messages.length - 1; i >= 0; i -= 1) {
    const m = state.messages[i] as ChatMessage;
    if (m.role !== 'assistant') continue;
    const calls = (m.tool_calls ?? []).flatMap((c) => (c.type === 'function' ? [c] : []));
    const answered = new Set(
      state.messages.slice(i + 1).flatMap((x) => (x.role === 'tool' ? [x.tool_call_id] : [])),
    );
    return calls
      .filter((c) => !answered.has(c.id))
      .map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments }));
  }
  return [];
}
