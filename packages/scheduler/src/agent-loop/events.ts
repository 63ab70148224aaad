import type { ToolErrorInfo } from '@agent-reach/shared';
import type { CompactionSummary, GuardName, RunOutcome, TaskStep } from './run-state.js';

/** Everything that happens in a run, in order; each event gets `at` (epoch ms) when it is emitted. */
export type RunEventBody =
  | { type: 'run_started'; agent: string; input: string; model: string }
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
    }
  | { type: 'llm_error'; turn: number; model: string; latency_ms: number; message: string; status?: number }
  | {
      type: 'tool_dispatched';
      turn: number;
      calls: Array<{ toolCallId: string; tool: string; arguments: string }>;
    }
  | {
      type: 'tool_result';
      turn: number;
      toolCallId: string;
      tool: string;
      arguments: string;
      ok: boolean;
      error?: ToolErrorInfo;
      duration_ms: number;
      attempts: number;
      truncated?: boolean;
    }
  | { type: 'step_done'; step: TaskStep }
  | { type: 'approval_requested'; toolCallId: string; tool: string; arguments: string }
  | {
      type: 'approval_decided';
      toolCallId: string;
      tool: string;
      decision: 'approved' | 'rejected';
      by?: string;
      reason?: string;
    }
  | { type: 'guard'; guard: GuardName; action: 'nudge' | 'stop'; report: string }
  | {
      type: 'compaction';
      before_tokens: number;
      after_tokens: number;
      folded_messages: number;
      folded_turns: number;
      summary: CompactionSummary;
    }
  | { type: 'run_finished'; outcome: RunOutcome };

export type RunEvent = RunEventBody & { at: number };

/** What the loop just did, for checkpointing. */
export type StepKind = 'plan' | 'llm_response' | 'tool_results' | 'compaction' | 'parked' | 'finished';
