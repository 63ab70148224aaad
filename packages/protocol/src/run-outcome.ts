import type { ToolErrorKind } from './errors.js';
import type { AttemptTiming } from './tool-call.js';
import type { FinalStatus } from './run-status.js';

/** The parts of a run that its events and its outcome carry on the wire. */

/** One step of the plan, shown to the model every turn and ticked off as tools complete. */
export interface TaskStep {
  title: string;
  /** The tool the step expects, when the plan named one. */
  tool?: string;
  done: boolean;
  /** Left open by an earlier run of the session: shown, but this run is not held to it. */
  carried?: true;
}

/** Earlier steps folded out of the history by compaction. */
export interface CompactionSummary {
  goal: string;
  done: Array<{
    tool: string;
    arguments: unknown;
    ok: boolean;
    key_values?: Record<string, unknown>;
    error?: string;
  }>;
  notes: string[];
  todo: string[];
  /** Assistant turns folded so far (the model's turn count stays right after compaction). */
  folded_turns: number;
}

/** One tool call as the run saw it. */
export interface StepRecord {
  turn: number;
  tool_call_id: string;
  tool: string;
  arguments: string;
  ok: boolean;
  error_kind?: ToolErrorKind;
  /** The error's `detail`: what the model did not read of it (an MCP server's whole error). */
  error_detail?: string;
  duration_ms: number;
  attempts: number;
  /** Each attempt's start, duration and outcome, when the executor tried more than once. */
  attempt_log?: AttemptTiming[];
  truncated?: boolean;
  /** `ok`, `no_result` (the tool ran and found nothing) or `error`. */
  kind?: StepResultKind;
  /** Where the result came from: the scheduler itself (a refusal, a rejection) or the executors. */
  answered?: 'local' | 'dispatched';
  /** The executor that ran the call, when one did. */
  executor_id?: string;
  /** Id under which the full result is kept, when the model saw a shortened one. */
  ref?: string;
  /** The child run that answered the call, for a call of an agent tool. */
  child_run_id?: string;
}

/** What a tool call came to, as the model saw it. */
export type StepResultKind = 'ok' | 'no_result' | 'error';

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export type GuardName =
  | 'max_iterations'
  | 'repeat'
  | 'failed_rounds'
  | 'argument_fix_rounds'
  | 'token_budget'
  | 'deadline'
  /** The run was to hand off once more than the agent in charge's `loop.max_handoffs` allows. */
  | 'max_handoffs';

/**
 * How a run ended. `reason` is one stable word:
 * - `succeeded`: `final_answer`, or `final_answer_truncated` (the answer hit the output token cap), or
 *   `off_topic` (the request is outside the agent's `allowed_topic`: answered with a refusal naming the
 *   topics, without a model call), or `tasks_incomplete` (the model gave its final answer while steps of
 *   the task stack naming a tool were still open, and again after being sent back with them: the answer is
 *   kept, the report names the open steps, the run's `tasks` show them);
 * - `not_converged`: a guard — `max_iterations`, `repeat`, `token_budget`, `deadline`, `max_handoffs`;
 * - `failed`: `failed_rounds`, `argument_fix_rounds` (guards); `context_failed` (a required context
 *   provider's call failed before the first model call); `refused` (the model declined: `message.refusal`);
 *   `content_filter` (the provider filtered the output); `empty_answer` (no text, no tool call);
 *   `output_truncated` (cut at the output token cap before any text); `no_tool_available` (the model
 *   answered, but every tool call it made was refused by the platform — unknown, forbidden, breaker open
 *   or unavailable — so no tool ever ran: the answer is kept, the report lists the refusals);
 *   `invalid_output` (the run declares an output schema and the model's answer missed it after every
 *   retry: the last answer is kept, the report lists the problems); `guardrail_tripped` (an input or output
 *   guardrail of the agent tripped: the report names it and why, and an output guardrail's run keeps no
 *   answer); `llm_error`, `internal_error`,
 *   `invalid_job`;
 * - `cancelled`: `cancelled`.
 */
export interface RunOutcome {
  status: FinalStatus;
  answer?: string;
  /** The parsed answer of a run that declares an output schema, valid against it (`answer` is its JSON text). */
  output?: unknown;
  /** Why the run ended, in one stable word (see above). */
  reason: string;
  /** What the caller should know or do (advice to split a task, the failures seen, …). */
  report?: string;
  usage: Usage;
  iterations: number;
  steps: StepRecord[];
}

/**
 * A step as stored, read back. Records of the previous release named its fields `toolCallId`,
 * `errorKind` and `durationMs`; they are read with today's names, the shape being otherwise the same.
 */
export function readStepRecord(step: StepRecord): StepRecord {
  const legacy = step as Partial<StepRecord> & {
    toolCallId?: string;
    errorKind?: ToolErrorKind;
    durationMs?: number;
  };
  if (legacy.toolCallId === undefined) return step;
  const { toolCallId, errorKind, durationMs, ...rest } = legacy;
  return {
    ...(rest as StepRecord),
    tool_call_id: toolCallId,
    ...(errorKind ? { error_kind: errorKind } : {}),
    duration_ms: durationMs ?? 0,
  };
}

/** Every `reason` a run's outcome may give (see {@link RunOutcome}). */
export const RUN_REASONS = [
  'final_answer',
  'final_answer_truncated',
  'tasks_incomplete',
  'max_iterations',
  'repeat',
  'token_budget',
  'deadline',
  'failed_rounds',
  'refused',
  'content_filter',
  'empty_answer',
  'output_truncated',
  'no_tool_available',
  'invalid_output',
  'guardrail_tripped',
  'llm_error',
  'internal_error',
  'invalid_job',
  'cancelled',
] as const;
export type RunReason = (typeof RUN_REASONS)[number];
