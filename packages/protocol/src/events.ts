import type { ToolErrorInfo } from './errors.js';
import type { AttemptTiming, ToolResult } from './tool-call.js';
import type { RunVariant } from './variant.js';
import {
  readStepRecord,
  type CompactionSummary,
  type GuardName,
  type RunOutcome,
  type StepResultKind,
  type TaskStep,
} from './run-outcome.js';

/**
 * What a request asks for, decided before the first model call: answered from knowledge, one tool
 * call, or several (only those get a plan).
 */
export type RunIntent = 'simple' | 'single_tool' | 'multi_step';

/** Where a guardrail looks: the request, the final answer, or a tool call's arguments or result. */
export type GuardrailStage = 'input' | 'output' | 'arguments' | 'result';

/** Everything that happens in a run, in order; each event gets `at` (epoch ms) when it is emitted. */
export type RunEventBody =
  | {
      type: 'run_started';
      agent: string;
      input: string;
      model: string;
      /** How the request was classified before the first model call (absent in older records). */
      intent?: RunIntent;
      /** The signals that decided it (stable words, e.g. `sequence`, `one_tool`). */
      intent_signals?: string[];
      /** The variant the run was started with (its configuration overrides), when it has one. */
      variant?: RunVariant;
      /** The agent in charge at the start, when not `agent`: a session going on after a handoff. */
      in_charge?: string;
    }
  | {
      /** The request was placed outside the agent's `allowed_topic` (before any model call). */
      type: 'topic';
      verdict: 'off_topic';
      /** `refuse`: the run ends `off_topic` without a model call; `warn`: it goes on. */
      action: 'refuse' | 'warn';
      topics: string[];
      /** The best score of the request against the agent's tools and topics (0–1), and its label. */
      score: number;
      best?: string;
    }
  | {
      /** The agent's context providers were called with the request before the first model turn. */
      type: 'context';
      providers: Array<{
        tool: string;
        tool_call_id: string;
        ok: boolean;
        required: boolean;
        /** Characters of the result attached to the model's input (0 when it failed). */
        chars: number;
        error?: string;
      }>;
    }
  | {
      type: 'plan';
      steps: TaskStep[];
      error?: string;
      /** Steps the model planned with a tool this agent cannot reach: left out of the task stack. */
      dropped?: Array<{ title: string; tool: string }>;
    }
  | {
      type: 'llm_request';
      turn: number;
      model: string;
      latency_ms: number;
      prompt_tokens: number;
      completion_tokens: number;
      finish_reason: string;
      tool_calls: number;
      tools_offered: string[];
      /**
       * The model's answer as the run recorded it: replay plays it back. Ids are the ones the run uses
       * (rewritten when the model's were missing, malformed or reused); arguments over the size limit
       * are kept as a prefix plus their length and sha256.
       */
      message: {
        content: string | null;
        refusal?: string;
        tool_calls?: Array<{
          id: string;
          name: string;
          arguments: string;
          arguments_chars?: number;
          arguments_sha256?: string;
        }>;
      };
      /** Tool calls past the per-turn limit, left out. */
      dropped_tool_calls?: number;
      /** The model's reasoning text, when the provider sent one (`reasoning_content` or `reasoning`). */
      reasoning?: string;
      /** The declared model that answered, as `<provider>/<model>` (routed runs: see docs/providers.md). */
      answered_by?: string;
      /** Models passed over before it: breaker open, or failed after their retries. */
      fallback?: Array<{ model: string; reason: 'breaker_open' | 'failed'; message?: string }>;
      /** What the turn cost, from the price table (tokens in and out × price per million). */
      cost?: number;
    }
  | {
      /**
       * A model request the platform made for the run beside its turns: the plan (`plan`) or a guardrail
       * agent's verdict (`guardrail`, naming the guardrail). Its tokens and cost are the run's as a turn's
       * are, and the metrics count it as they count a turn's `llm_request`.
       */
      type: 'llm_usage';
      purpose: 'plan' | 'guardrail';
      guardrail?: string;
      model: string;
      latency_ms: number;
      prompt_tokens: number;
      completion_tokens: number;
      answered_by?: string;
      fallback?: Array<{ model: string; reason: 'breaker_open' | 'failed'; message?: string }>;
      cost?: number;
    }
  | {
      type: 'llm_error';
      turn: number;
      model: string;
      latency_ms: number;
      message: string;
      status?: number;
      /** Every model of the turn, passed over or failed (routed runs). */
      fallback?: Array<{ model: string; reason: 'breaker_open' | 'failed'; message?: string }>;
    }
  | {
      type: 'tool_dispatched';
      turn: number;
      calls: Array<{ tool_call_id: string; tool: string; arguments: string }>;
    }
  | {
      type: 'tool_result';
      turn: number;
      tool_call_id: string;
      tool: string;
      arguments: string;
      ok: boolean;
      error?: ToolErrorInfo;
      duration_ms: number;
      attempts: number;
      /** Each attempt's start (after the call was taken), duration and outcome, when there was a retry. */
      attempt_log?: AttemptTiming[];
      truncated?: boolean;
      /** `ok`, `no_result` or `error`. */
      kind?: StepResultKind;
      /** Answered by the scheduler itself (`local`: refused, rejected) or by the executors. */
      answered?: 'local' | 'dispatched';
      executor_id?: string;
      /**
       * The result exactly as the model saw it (shaped: `truncated` and `ref` when shortened). The run's
       * stored stream leaves it and `arguments` out (its step and tool message hold them); readers of
       * stored events get both put back from the run's record.
       */
      result?: ToolResult;
      /** The child run that answered the call, for a call of an agent tool. */
      child_run_id?: string;
    }
  | {
      /** A call of an agent tool started a child run on the fleet (docs/agent-tools.md). */
      type: 'child_run_started';
      tool_call_id: string;
      tool: string;
      agent: string;
      child_run_id: string;
      depth: number;
    }
  | { type: 'step_done'; step: TaskStep }
  | {
      type: 'approval_requested';
      tool_call_id: string;
      tool: string;
      arguments: string;
      /** The request asks for a grant of the tool to the run, not only for this call. */
      grant?: true;
    }
  | {
      type: 'approval_decided';
      tool_call_id: string;
      tool: string;
      decision: 'approved' | 'rejected';
      by?: string;
      reason?: string;
      /** Approved, the tool is granted to the run (by `by`). */
      grant?: true;
    }
  | { type: 'guard'; guard: GuardName; action: 'nudge' | 'stop'; report: string }
  | {
      /**
       * A guardrail of the agent tripped, or failed and its `on_error` policy decided (docs/guardrails.md).
       * Passing verdicts are kept in the run's state, not streamed.
       */
      type: 'guardrail';
      guardrail: string;
      /** `input` (the request), `output` (the final answer), `arguments` / `result` (a tool call's). */
      stage: GuardrailStage;
      /** The kind of check: a built-in (`max_length`, `blocked_terms`, `regex`, `pii`), `tool` or `agent`. */
      check: string;
      /** `tripped`, or `error` (the check failed or timed out). */
      verdict: 'tripped' | 'error';
      /** What the platform did: ended the run, blocked the call, withheld its result, or let it through (`fail_open`). */
      action: 'stopped_run' | 'blocked_call' | 'withheld_result' | 'let_through';
      reason: string;
      tool_call_id?: string;
      tool?: string;
      /** An `agent` check: the model that answered (`provider/model`); its tokens and cost are the run's. */
      model?: string;
      duration_ms: number;
    }
  | {
      /**
       * The model answered while steps of the task stack that name a tool were open: `remind`, it is sent
       * back once more naming them; `accept`, the run ends with the answer, reason `tasks_incomplete`.
       */
      type: 'tasks_open';
      turn: number;
      open: TaskStep[];
      action: 'remind' | 'accept';
      /** Times the model may still be sent back for open steps (`loop.task_reminders`). */
      reminders_left: number;
    }
  | {
      /** A final answer missed the run's output schema: the model is told `problems` and asked again. */
      type: 'output_invalid';
      turn: number;
      problems: Array<{ field: string; constraint: string; expected: string; message: string }>;
      /** Times the model may still be asked again; 0: the run ends `invalid_output`. */
      retries_left: number;
    }
  | {
      type: 'compaction';
      before_tokens: number;
      after_tokens: number;
      folded_messages: number;
      folded_turns: number;
      /** sha256 (hex) of the folded messages as JSON, in order. */
      folded_digest?: string;
      /** The summary before this compaction (absent on the first), and after it. */
      summary_before?: CompactionSummary;
      summary: CompactionSummary;
    }
  | {
      /** The agent in charge called `transfer_to_<to>`: from the next turn on the run is `to`'s. */
      type: 'handoff';
      turn: number;
      tool_call_id: string;
      from: string;
      to: string;
      /** What of the conversation `to` keeps (`last_n`: the last `last_n` messages and the request). */
      filter: 'all' | 'summary' | 'last_n';
      last_n?: number;
      messages_before: number;
      messages_after: number;
      /** Handoffs of the run so far, this one included. */
      handoffs: number;
    }
  | { type: 'run_finished'; outcome: RunOutcome };

export type RunEvent = RunEventBody & { at: number };

/**
 * The text of a model turn as it streams, sent live to a run's event subscribers (SSE `event:
 * answer_delta`, without an `id`) and never stored: the recorded `llm_request` of the turn holds the
 * whole answer. A turn asked again after its stream broke starts over with the next `attempt`, whose
 * text replaces what the earlier attempt sent.
 */
export interface AnswerDeltaEvent {
  type: 'answer_delta';
  /** The model turn (the `turn` of its `llm_request`). */
  turn: number;
  /** The try of the turn, from 1. */
  attempt: number;
  /** Answer text, in order. */
  content?: string;
  /** Reasoning text of a thinking model, in order. */
  reasoning?: string;
  /** Epoch ms the batch was sent. */
  at: number;
}

/** Every event type, in the order a run may emit them. */
export const RUN_EVENT_TYPES = [
  'run_started',
  'topic',
  'context',
  'plan',
  'llm_request',
  'llm_usage',
  'llm_error',
  'tool_dispatched',
  'child_run_started',
  'tool_result',
  'step_done',
  'approval_requested',
  'approval_decided',
  'guard',
  'guardrail',
  'tasks_open',
  'output_invalid',
  'compaction',
  'handoff',
  'run_finished',
] as const satisfies ReadonlyArray<RunEventBody['type']>;
export type RunEventType = RunEventBody['type'];

/**
 * An event as stored, read back. Events of the previous release named the call `toolCallId`; they are
 * read with today's `tool_call_id`, their shape being otherwise the same.
 */
export function readEvent(json: string): RunEvent {
  const e = JSON.parse(json) as RunEvent & { toolCallId?: string; calls?: Array<{ toolCallId?: string }> };
  if (e.toolCallId !== undefined) {
    const { toolCallId, ...rest } = e;
    return { ...rest, tool_call_id: toolCallId } as RunEvent;
  }
  // A run's stored `run_finished` leaves its outcome to the run's state (the run store puts it back).
  if (e.type === 'run_finished' && e.outcome)
    return { ...e, outcome: { ...e.outcome, steps: e.outcome.steps.map(readStepRecord) } };
  if (e.type === 'tool_dispatched' && e.calls.some((c) => 'toolCallId' in c)) {
    const calls = (e.calls as Array<{ toolCallId?: string; tool_call_id?: string }>).map(
      ({ toolCallId, ...c }) => ({ ...c, tool_call_id: c.tool_call_id ?? toolCallId ?? '' }),
    );
    return { ...e, calls } as RunEvent;
  }
  return e;
}
