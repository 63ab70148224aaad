import type { ToolResult } from '@agent-reach/protocol';
import type { AgentSpec, Logger } from '@agent-reach/shared';
import { constants } from '@agent-reach/shared';
import type { DispatchCall, DispatchOptions, DispatchRun } from '../fleet/dispatcher.js';
import type { LlmClient } from '../model/llm.js';
import type { RunState } from './run-state.js';
import type { ToolCatalog } from '../fleet/tool-catalog.js';
import type { RunEvent, StepKind } from './events.js';
import type { Intent } from './intent.js';
import type { GuardLimits } from './guards.js';
import type { AnswerDeltas } from '../model/answer-deltas.js';
import type { ChildRuns } from './agent-tools.js';

export interface LoopLimits extends GuardLimits {
  /** Prompt size that triggers compaction, in tokens. Default 40 000. */
  compactionThresholdTokens: number;
  /** Model turns kept verbatim by a compaction. Default 2. */
  compactionKeepRounds: number;
  /** Ask the model for a plan before the first turn of a request classified multi-step. Default true. */
  planning: boolean;
  /** Answers that miss the output schema sent back to the model before `invalid_output`. Default 2. */
  outputRetries: number;
  /** Output tokens of one model turn. Default: the model client's own cap. */
  maxOutputTokens?: number;
  /** Handoffs a run may make before a further one stops it (`max_handoffs`). Default 5. */
  maxHandoffs: number;
  /** Final answers leaving task-stack steps open sent back to the model before `tasks_incomplete`. Default 1. */
  taskReminders: number;
}

export interface AgentLoopDeps {
  llm: LlmClient;
  /** Where the text of streamed model turns goes as it arrives (live subscribers). Default: nowhere. */
  answerDeltas?: AnswerDeltas;
  dispatcher: {
    dispatch(run: DispatchRun, calls: DispatchCall[], options?: DispatchOptions): Promise<ToolResult[]>;
    /**
     * Records results the loop decided itself (a name the agent cannot reach, a call a person rejected)
     * unless their calls already have one, and resolves to the recorded ones: an answer given here may
     * depend on what this attempt saw (the fleet's announcements, the configuration in force), so a call
     * that an earlier attempt published and an executor answered keeps that answer. Without it (a loop
     * with no record, as in benchmarks), local answers are used as they are.
     */
    recordLocal?(runId: string, results: ToolResult[]): Promise<ToolResult[]>;
  };
  catalog: ToolCatalog;
  breakers: { openTools(): Promise<Set<string>>; invalidate?(): void };
  /** The agent in charge (the one the run started with until it hands off). */
  agent: AgentSpec;
  /** Any agent of the configuration in force, by name: the targets of handoffs. Default: none. */
  agentNamed?: (name: string) => AgentSpec | undefined;
  /**
   * The model client a run started for `agent` would ask (its model and fallbacks through their
   * providers, else the default model): a guardrail agent's. Default: the run's client (`llm`).
   */
  llmOf?: (agent: string) => LlmClient;
  logger: Logger;
  limits?: Partial<LoopLimits>;
  /**
   * Called after every step with the state and that step's events: the durability seam. It snapshots
   * the step at once (synchronously) and returns the write, which the loop sends in order, possibly
   * later. A write that throws `RunLost` means another process owns the run now: the loop stops at once.
   * Any other failure of a write escapes `runAgent` as `CheckpointFailed` (the run is retried from its
   * last good checkpoint by whoever runs it).
   */
  checkpoint?: (state: RunState, events: RunEvent[], step: StepKind) => CheckpointWrite;
  /** Called for every event as it happens (progress printing, metrics). */
  onEvent?: (event: RunEvent, state: RunState) => void;
  /** Aborting it cancels the run: nothing more is dispatched. */
  signal?: AbortSignal;
  /**
   * The checkpoint hook writes on the connection the dispatcher publishes on, so a checkpoint issued
   * before a dispatch lands before it: the loop then need not wait for it. Default false.
   */
  orderedCheckpoints?: boolean;
  /**
   * Aborting it releases the run without ending it: this process lost the run (its lock lapsed and
   * another scheduler took over), so it stops at once and writes nothing more.
   */
  release?: AbortSignal;
  /** Starts and reads the child runs of agent-tool calls; without it, no agent tool is offered. */
  children?: ChildRuns;
  /**
   * The agents the run's API key may use when it is limited: each handoff and agent-tool call is checked
   * against them by the reach rule, as the configuration stands at the call. Default: no limit.
   */
  keyAgents?: ReadonlySet<string> | undefined;
}

/** A run's limits: the run's own, its agent's, then the defaults (15 model turns for multi-step requests). */
export function resolveLimits(
  agent: AgentSpec,
  limits: Partial<LoopLimits> = {},
  intent?: Intent,
): LoopLimits {
  return {
    maxIterations:
      limits.maxIterations ??
      agent.max_iterations ??
      (intent === 'multi_step'
        ? constants.DEFAULT_MAX_ITERATIONS_MULTI_STEP
        : constants.DEFAULT_MAX_ITERATIONS),
    repeatLimit: limits.repeatLimit ?? constants.DEFAULT_REPEAT_LIMIT,
    maxFailedRounds: limits.maxFailedRounds ?? constants.DEFAULT_MAX_FAILED_ROUNDS,
    maxArgumentFixRounds: limits.maxArgumentFixRounds ?? constants.DEFAULT_MAX_ARGUMENT_FIX_ROUNDS,
    tokenBudget: limits.tokenBudget ?? constants.DEFAULT_RUN_TOKEN_BUDGET,
    compactionThresholdTokens:
      limits.compactionThresholdTokens ?? constants.DEFAULT_COMPACTION_THRESHOLD_TOKENS,
    compactionKeepRounds: limits.compactionKeepRounds ?? constants.DEFAULT_COMPACTION_KEEP_ROUNDS,
    planning: limits.planning ?? true,
    maxHandoffs: limits.maxHandoffs ?? constants.DEFAULT_MAX_HANDOFFS,
    taskReminders: limits.taskReminders ?? constants.DEFAULT_TASK_REMINDERS,
    outputRetries: agent.output_retries ?? limits.outputRetries ?? constants.DEFAULT_OUTPUT_RETRIES,
    ...(limits.maxOutputTokens === undefined ? {} : { maxOutputTokens: limits.maxOutputTokens }),
  };
}

/**
 * An agent's own loop settings as limits: they stand over the fleet's defaults and under a run's own
 * limits (`{...fleet, ...agentLoopLimits(agent), ...run}`).
 */
export function agentLoopLimits(agent: AgentSpec): Partial<LoopLimits> {
  const loop = agent.loop ?? {};
  const set = <K extends keyof LoopLimits>(key: K, value: LoopLimits[K] | undefined) =>
    value === undefined ? {} : { [key]: value };
  return {
    ...set('repeatLimit', loop.repeat_limit),
    ...set('maxFailedRounds', loop.max_failed_rounds),
    ...set('maxArgumentFixRounds', loop.max_argument_fix_rounds),
    ...set('maxOutputTokens', loop.max_output_tokens),
    ...set('compactionThresholdTokens', loop.compaction_threshold_tokens),
    ...set('maxHandoffs', loop.max_handoffs),
    ...set('taskReminders', loop.task_reminders),
  };
}

/** The write of one prepared checkpoint. */
export type CheckpointWrite = () => Promise<void>;
