import { AgentReachError, newRunId, newTraceId, type Keys } from '@agent-reach/protocol';
import {
  constants,
  mcpServersOf,
  parseAgentsCheck,
  withRunTrace,
  type AgentSpec,
  type AgentsFile,
  type Logger,
  type RedisClient,
} from '@agent-reach/shared';
import type { RunEvent, StepKind } from '../agent-loop/events.js';
import { agentLoopLimits, runAgent, type CheckpointWrite, type LoopLimits } from '../agent-loop/run-agent.js';
import {
  createRunState,
  type ChatMessage,
  type CompactionSummary,
  type RunOutcome,
  type RunState,
  type TaskStep,
} from '../agent-loop/run-state.js';
import { emitFinishedSpan } from './run-span.js';
import { BreakerView } from '../fleet/breaker-view.js';
import { Dispatcher } from '../fleet/dispatcher.js';
import type { LlmClient } from '../model/llm.js';
import { createAnswerDeltas, type AnswerDeltas } from '../model/answer-deltas.js';
import { ToolCatalog } from '../fleet/tool-catalog.js';

export interface AgentRunnerOptions {
  /** Producer connection; the dispatcher makes its own blocking duplicate. */
  connection: RedisClient;
  keys: Keys;
  /** The agents; a live view (LiveConfig.agents) makes changes apply to the next step of every run. */
  agents: AgentsFile;
  /** The configuration version a new run records as the one it started under. Default: none recorded. */
  configVersion?: () => number;
  llm: LlmClient;
  logger: Logger;
  limits?: Partial<LoopLimits>;
  /** How long to wait at start for executors to publish every tool the agents name, in ms. Default 30 000. */
  catalogWaitMs?: number;
  /** Wall-clock budget of a run whose agent sets no `max_wall_time_ms`, in ms. Default 10 minutes. */
  runDeadlineMs?: number;
  /** See DispatcherOptions.startWaitMs. */
  toolStartWaitMs?: number;
}

/** The runner's options with every default filled in. */
export type ResolvedAgentRunnerOptions = AgentRunnerOptions &
  Required<Pick<AgentRunnerOptions, 'catalogWaitMs' | 'runDeadlineMs'>>;

/** Every default of the agent runner in one place: its body reads the resolved options only. */
export function resolveAgentRunnerOptions(o: AgentRunnerOptions): ResolvedAgentRunnerOptions {
  return {
    ...o,
    catalogWaitMs: o.catalogWaitMs ?? constants.DEFAULT_CATALOG_WAIT_MS,
    runDeadlineMs: o.runDeadlineMs ?? constants.DEFAULT_RUN_DEADLINE_MS,
  };
}

export interface StartRun {
  agent: string;
  input: string;
  runId?: string;
  traceId?: string;
  /** The caller's span, as a W3C `traceparent`: the run joins its trace, its root span a child of it. */
  traceParent?: string;
  history?: ChatMessage[];
  summary?: CompactionSummary;
  steps?: TaskStep[];
  sessionId?: string;
  /** The tenant the run belongs to (default: `default`, left unrecorded). */
  tenant?: string;
  metadata?: Record<string, string>;
  /** The name of the API key that started the run. */
  key?: string;
  /** Tools requiring a grant the run may call. */
  grants?: string[];
  /** Epoch ms the run was created (its job's), when it is not now. */
  createdAt?: number;
  /** The model client for this run (default: the runner's). */
  llm?: LlmClient;
  onEvent?: (event: RunEvent, state: RunState) => void;
  checkpoint?: (state: RunState, events: RunEvent[], step: StepKind) => CheckpointWrite;
  signal?: AbortSignal;
  /** Aborting it makes the loop let go of the run without writing (see AgentLoopDeps.release). */
  release?: AbortSignal;
  /** The checkpoint hook writes on the dispatcher's connection (see AgentLoopDeps.orderedCheckpoints). */
  orderedCheckpoints?: boolean;
  limits?: Partial<LoopLimits>;
  /** Wall-clock budget of this run, in ms (overrides the runner's). */
  deadlineMs?: number;
  /** JSON Schema the final answer must match, instead of the agent's `output_schema`. */
  outputSchema?: Record<string, unknown>;
}

/** Runs agent tasks in this process: the loop, the LLM, and tool calls through the executor fleet. */
export class AgentRunner {
  readonly catalog: ToolCatalog;
  readonly breakers: BreakerView;
  readonly dispatcher: Dispatcher;
  readonly #opts: ResolvedAgentRunnerOptions;
  readonly #answerDeltas: AnswerDeltas;

  private constructor(opts: ResolvedAgentRunnerOptions) {
    this.#opts = opts;
    this.#answerDeltas = createAnswerDeltas(opts.connection, opts.keys, opts.logger);
    this.catalog = new ToolCatalog(opts.connection, opts.keys, {
      mcpServers: () => mcpServersOf(opts.agents.document),
      logger: opts.logger,
    }).follow();
    this.breakers = new BreakerView(opts.connection, opts.keys, opts.logger);
    this.dispatcher = new Dispatcher({
      connection: opts.connection,
      keys: opts.keys,
      catalog: this.catalog,
      logger: opts.logger,
      ...(opts.toolStartWaitMs === undefined ? {} : { startWaitMs: opts.toolStartWaitMs }),
    });
  }

  hasAgent(name: string): boolean {
    return this.#opts.agents.agents.has(name);
  }

  /** An agent of the agents file, by name. */
  agent(name: string): AgentSpec | undefined {
    return this.#opts.agents.agents.get(name);
  }

  get keys(): Keys {
    return this.#opts.keys;
  }

  get logger(): Logger {
    return this.#opts.logger;
  }

  /** The connection the dispatcher publishes tool calls on. */
  get connection(): RedisClient {
    return this.#opts.connection;
  }

  /**
   * Starts a runner once the fleet's catalog holds every tool the agents name; a tool that no executor
   * registers is a start-up error naming the agent and the tool.
   */
  static async start(opts: AgentRunnerOptions): Promise<AgentRunner> {
    const runner = new AgentRunner(resolveAgentRunnerOptions(opts));
    const deadline = Date.now() + runner.#opts.catalogWaitMs;
    for (;;) {
      await runner.catalog.refresh();
      const problems = parseAgentsCheck(opts.agents, runner.catalog.names());
      if (problems.length === 0) break;
      if (Date.now() >= deadline) {
        await runner.close();
        throw new AgentReachError(
          'AGENTS_INVALID',
          `tools named in the agents file are not registered by any executor:\n${problems.join('\n')}`,
          {
            details: problems,
          },
        );
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    return runner;
  }

  newState(req: StartRun): RunState {
    if (!this.#opts.agents.agents.has(req.agent)) {
      throw new AgentReachError(
        'AGENTS_INVALID',
        `unknown agent "${req.agent}"; known: ${[...this.#opts.agents.agents.keys()].join(', ')}`,
      );
    }
    const runId = req.runId ?? newRunId();
    return createRunState({
      runId,
      traceId: req.traceId ?? req.traceParent?.split('-')[1] ?? newTraceId(),
      ...(req.traceParent ? { traceParent: req.traceParent } : {}),
      agent: req.agent,
      input: req.input,
      deadlineMs:
        req.deadlineMs ??
        this.#opts.agents.agents.get(req.agent)?.max_wall_time_ms ??
        this.#opts.runDeadlineMs,
      ...(this.#opts.configVersion ? { configVersion: this.#opts.configVersion() } : {}),
      ...(req.history ? { history: req.history } : {}),
      ...(req.summary ? { summary: req.summary } : {}),
      ...(req.steps ? { steps: req.steps } : {}),
      ...(req.sessionId ? { sessionId: req.sessionId } : {}),
      ...(req.tenant ? { tenant: req.tenant } : {}),
      ...(req.metadata ? { metadata: req.metadata } : {}),
      ...(req.key ? { key: req.key } : {}),
      ...(req.grants ? { grants: req.grants } : {}),
      ...(req.createdAt !== undefined ? { createdAt: req.createdAt } : {}),
      ...outputSchemaOf(req, this.#opts.agents.agents.get(req.agent)),
    });
  }

  /** Runs a new task to its outcome, or until it parks waiting for an approval. */
  async run(req: StartRun): Promise<{ outcome: RunOutcome | 'parked' | 'released'; state: RunState }> {
    const state = this.newState(req);
    const outcome = await this.resume(state, req);
    return { outcome, state };
  }

  /**
   * Continues a run from its state (a checkpoint), to its outcome or to its next parking. Its model calls
   * and published tool calls are traced under the run's root span, which is emitted when it finishes.
   */
  async resume(
    state: RunState,
    req: Pick<
      StartRun,
      'llm' | 'onEvent' | 'checkpoint' | 'signal' | 'release' | 'orderedCheckpoints' | 'limits'
    > = {},
  ): Promise<RunOutcome | 'parked' | 'released'> {
    const agents = this.#opts.agents;
    const started = agents.agents.get(state.agent);
    if (!started) throw new AgentReachError('AGENTS_INVALID', `unknown agent "${state.agent}"`);
    // An agent removed from the configuration mid-run keeps its other settings but reaches no tool.
    const removed: AgentSpec = { ...started, tools: [] };
    const finishedBefore = state.outcome !== undefined;
    const outcome = await withRunTrace(state, () =>
      runAgent(state, {
        llm: req.llm ?? this.#opts.llm,
        answerDeltas: this.#answerDeltas,
        dispatcher: this.dispatcher,
        catalog: this.catalog,
        breakers: this.breakers,
        // Read at each step, so the tools offered follow the configuration in force.
        get agent() {
          return agents.agents.get(state.agent) ?? removed;
        },
        logger: this.#opts.logger,
        limits: agentLimits(started, this.#opts.limits, req.limits),
        ...(req.onEvent ? { onEvent: req.onEvent } : {}),
        ...(req.checkpoint ? { checkpoint: req.checkpoint } : {}),
        ...(req.signal ? { signal: req.signal } : {}),
        ...(req.release ? { release: req.release } : {}),
        ...(req.orderedCheckpoints ? { orderedCheckpoints: true } : {}),
      }),
    );
    if (typeof outcome === 'object' && !finishedBefore) {
      emitFinishedSpan(state, outcome);
    }
    return outcome;
  }

  async close(): Promise<void> {
    await this.dispatcher.close();
    await this.breakers.close();
    await this.catalog.close();
  }
}

/** A run's output schema, fixed at its start: its own, else its agent's (a copy, so the run keeps it). */
function outputSchemaOf(
  req: StartRun,
  agent: AgentSpec | undefined,
): { outputSchema?: Record<string, unknown> } {
  const schema = req.outputSchema ?? agent?.output_schema;
  return schema ? { outputSchema: structuredClone(schema) as Record<string, unknown> } : {};
}

/** A run's limits: the run's own, then its agent's budgets, then the runner's (environment) defaults. */
function agentLimits(
  agent: AgentSpec,
  runner: Partial<LoopLimits> = {},
  run: Partial<LoopLimits> = {},
): Partial<LoopLimits> {
  return {
    ...runner,
    ...(agent.max_tokens === undefined ? {} : { tokenBudget: agent.max_tokens }),
    ...agentLoopLimits(agent),
    ...run,
  };
}
