import {
  AgentReachError,
  newRunId,
  newTraceId,
  type Keys,
  type ParentLink,
  type RunVariant,
} from '@agent-reach/protocol';
import {
  constants,
  DEFAULT_VARIANT_CEILINGS,
  mcpServersOf,
  parseAgentsCheck,
  withRunTrace,
  type AgentSpec,
  type AgentsFile,
  type Logger,
  type RedisClient,
  type VariantCeilings,
  variantAgent,
  variantProblems,
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
import { inChargeDeps } from './agent-in-charge.js';
import { ChildRunControl } from './child-runs.js';
import type { TenantQuota } from './tenant-quotas.js';
import { variantAgentView, variantDeps, variantLimits } from './run-variant.js';

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
  /** Tenants' quotas (`TENANT_QUOTAS`): child runs of agent tools are admitted against them. */
  tenantQuotas?: ReadonlyArray<{ tenant: string } & TenantQuota>;
  /** The model client's output tokens per turn (`MAX_OUTPUT_TOKENS`): no variant raises a turn's past it. Default 2000. */
  maxOutputTokens?: number;
  /**
   * The agents an API key may use, by the key's name (undefined: every agent): a run's handoffs and agent
   * tools are checked against its key's at each call. Default: keys unknown, the doors' check stands alone.
   */
  keyAgents?: (key: string) => ReadonlySet<string> | undefined;
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
  /** The agent in charge from the start, when not `agent` (a session's last handoff target). */
  inCharge?: string;
  /** The model client of a handoff target, by agent (default: the runner's). */
  llmFor?: (agent: string) => LlmClient | undefined;
  /** The model client a run of that agent would ask, by agent: guardrail agents' (default: the runner's). */
  ownLlmFor?: (agent: string) => LlmClient | undefined;
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
  /** Overrides of the agent's configuration for this run only (checked by the door that took the run). */
  variant?: RunVariant;
  /** A child run's link to its parent's call (an agent called as a tool): its deadline is never later. */
  parent?: ParentLink;
}

/** Runs agent tasks in this process: the loop, the LLM, and tool calls through the executor fleet. */
export class AgentRunner {
  readonly catalog: ToolCatalog;
  readonly breakers: BreakerView;
  readonly dispatcher: Dispatcher;
  /** Child runs of agent-tool calls: started, read and cancelled on the run queue. */
  readonly children: ChildRunControl;
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
    this.children = new ChildRunControl(
      opts.connection,
      opts.keys,
      opts.agents,
      opts.logger,
      new Map((opts.tenantQuotas ?? []).map(({ tenant, ...q }) => [tenant, q])),
    );
  }

  hasAgent(name: string): boolean {
    return this.#opts.agents.agents.has(name);
  }

  /** An agent of the agents file, by name. */
  agent(name: string): AgentSpec | undefined {
    return this.#opts.agents.agents.get(name);
  }

  /** What is wrong with a variant for a run of `agent` (see `variantProblems`); empty when nothing is. */
  variantProblems(agent: string, variant: RunVariant): string[] {
    return variantProblems(
      {
        agents: this.#opts.agents,
        parametersOf: (tool) => this.catalog.get(tool)?.parameters,
        ceilings: this.variantCeilings(),
      },
      agent,
      variant,
    );
  }

  /** This fleet's limits of a run whose agent sets none: no variant may raise a run's past them. */
  variantCeilings(): VariantCeilings {
    const { limits = {} } = this.#opts;
    return {
      max_iterations: limits.maxIterations ?? DEFAULT_VARIANT_CEILINGS.max_iterations,
      max_tokens: limits.tokenBudget ?? DEFAULT_VARIANT_CEILINGS.max_tokens,
      max_wall_time_ms: this.#opts.runDeadlineMs,
      max_output_tokens:
        limits.maxOutputTokens ?? this.#opts.maxOutputTokens ?? DEFAULT_VARIANT_CEILINGS.max_output_tokens,
    };
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
    const agent = this.agent(req.agent);
    const spec = agent && variantAgent(agent, req.variant?.overrides);
    const ownDeadlineMs = req.deadlineMs ?? spec?.max_wall_time_ms ?? this.#opts.runDeadlineMs;
    const state = createRunState({
      runId,
      traceId: req.traceId ?? req.traceParent?.split('-')[1] ?? newTraceId(),
      ...(req.traceParent ? { traceParent: req.traceParent } : {}),
      agent: req.agent,
      input: req.input,
      deadlineMs: ownDeadlineMs,
      // A child run ends no later than its parent: its deadline is capped at the parent's instant (a
      // remaining time taken from the clock would land a millisecond past it when the clock moves on).
      ...(req.parent ? { deadlineCapAt: req.parent.deadline_at } : {}),
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
      ...(req.inCharge && req.inCharge !== req.agent ? { inCharge: req.inCharge } : {}),
      ...outputSchemaOf(req, spec),
      ...(req.variant ? { variant: req.variant } : {}),
    });
    if (req.parent) state.parent = parentOf(req.parent);
    return state;
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
      | 'llm'
      | 'llmFor'
      | 'ownLlmFor'
      | 'onEvent'
      | 'checkpoint'
      | 'signal'
      | 'release'
      | 'orderedCheckpoints'
      | 'limits'
    > = {},
  ): Promise<RunOutcome | 'parked' | 'released'> {
    const agents = this.#opts.agents;
    const started = agents.agents.get(state.agent);
    if (!started) throw new AgentReachError('AGENTS_INVALID', `unknown agent "${state.agent}"`);
    // An agent removed from the configuration mid-run keeps its other settings but reaches no tool.
    const removed: AgentSpec = { ...started, tools: [] };
    // A variant's overrides stand over the agent in force at each step, for this run only.
    const overrides = state.variant?.overrides;
    const asRunSees = variantAgentView(state.agent, overrides);
    const finishedBefore = state.outcome !== undefined;
    const startLimits = () =>
      agentLimits(variantAgent(started, overrides), this.#opts.limits, variantLimits(overrides, req.limits));
    // After a handoff the target's spec, limits and model stand in for the started agent's.
    const inCharge = inChargeDeps({
      state,
      agents,
      startLlm: req.llm ?? this.#opts.llm,
      limitsOf: (agent) => agentLimits(agent, this.#opts.limits, req.limits),
      ...(req.llmFor ? { llmFor: req.llmFor } : {}),
      defaultLlm: this.#opts.llm,
    });
    const outcome = await withRunTrace(state, () =>
      runAgent(state, {
        get llm() {
          return inCharge.llm();
        },
        answerDeltas: this.#answerDeltas,
        dispatcher: this.dispatcher,
        catalog: this.catalog,
        breakers: this.breakers,
        // Read at each step, so the tools offered follow the configuration in force.
        get agent() {
          return inCharge.agent(() => asRunSees(agents.agents.get(state.agent) ?? removed));
        },
        agentNamed: inCharge.agentNamed,
        llmOf: (name) => req.ownLlmFor?.(name) ?? this.#opts.llm,
        logger: this.#opts.logger,
        get limits() {
          return inCharge.limits(startLimits);
        },
        ...variantDeps(state.variant, this.catalog, this.dispatcher),
        children: this.children,
        keyAgents: state.key === undefined ? undefined : this.#opts.keyAgents?.(state.key),
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
    await this.children.close();
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

/** A child run's link to its parent as the run's state keeps it. */
function parentOf(link: ParentLink): NonNullable<RunState['parent']> {
  return {
    runId: link.run_id,
    callId: link.call_id,
    tool: link.tool,
    depth: link.depth,
    maxDepth: link.max_depth,
  };
}
