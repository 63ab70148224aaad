import CircuitBreaker from 'opossum';
import { BREAKER_FAILURE_KINDS, type Keys, type ToolErrorKind } from '@agent-reach/protocol';
import {
  activeSpanEvent,
  type BreakerSnapshot,
  type BreakerState,
  BREAKER_STATE_VALUE,
  type Logger,
  type Metrics,
  type RedisClient,
} from '@agent-reach/shared';

export type { BreakerSnapshot, BreakerState };

export interface BreakerOptions {
  /** Consecutive failures that open a tool's breaker. */
  failureThreshold: number;
  /** How long an open breaker stays open before it lets one probe through, in ms. */
  resetTimeoutMs: number;
}

/**
 * An attempt's failure, carried through opossum so its filter can tell which failures count. `counts`
 * false: not evidence against the tool even when its kind would be (an attempt cut short by its call's
 * deadline before the tool's own timeout: the call waited, the tool did not fail).
 */
export class AttemptFailure extends Error {
  constructor(
    readonly kind: ToolErrorKind,
    message: string,
    readonly type?: string,
    readonly field?: string,
    readonly counts = true,
    /** The upstream's HTTP status, and how long it asked to wait before a retry (ms). */
    readonly upstream: { readonly status?: number; readonly retryAfterMs?: number } = {},
  ) {
    super(message);
  }
}

type Attempt = () => Promise<unknown>;

/**
 * One opossum breaker per tool in this process. opossum opens on an error percentage over a rolling
 * window; the platform wants *consecutive* failures, so its own threshold is disabled and the breaker is
 * opened here when the count is reached. Transitions go to Redis (hash + pub/sub) for schedulers.
 */
export class BreakerBoard {
  readonly #breakers = new Map<
    string,
    { breaker: CircuitBreaker<[Attempt], unknown>; consecutive: number }
  >();

  constructor(
    private readonly options: BreakerOptions,
    private readonly deps: {
      redis: RedisClient;
      keys: Keys;
      executorId: string;
      logger: Logger;
      metrics: Metrics;
    },
  ) {}

  /** Runs an attempt through the tool's breaker; rejects with `EOPENBREAKER` code when open. */
  fire(tool: string, attempt: Attempt): Promise<unknown> {
    return this.#get(tool).breaker.fire(attempt);
  }

  state(tool: string): BreakerState {
    const entry = this.#breakers.get(tool);
    if (!entry) return 'closed';
    return entry.breaker.opened ? 'open' : entry.breaker.halfOpen ? 'half_open' : 'closed';
  }

  shutdown(): void {
    for (const { breaker } of this.#breakers.values()) breaker.shutdown();
  }

  #get(tool: string) {
    let entry = this.#breakers.get(tool);
    if (entry) return entry;
    const breaker = new CircuitBreaker<[Attempt], unknown>((attempt: Attempt) => attempt(), {
      name: tool,
      timeout: false, // the executor owns timeouts (it needs an AbortSignal per attempt)
      resetTimeout: this.options.resetTimeoutMs,
      volumeThreshold: Number.MAX_SAFE_INTEGER, // disables opossum's percentage rule; see class doc
      errorThresholdPercentage: 100,
      // Nothing reads opossum's rolling statistics: its latency percentiles (every latency of the window,
      // concatenated and sorted each second) and snapshots are per-call work and memory for nobody.
      rollingPercentilesEnabled: false,
      enableSnapshots: false,
      // Only failures of the tool or its upstream count; anything else is not the tool's fault.
      errorFilter: (err: unknown) =>
        !(err instanceof AttemptFailure && err.counts && BREAKER_FAILURE_KINDS.has(err.kind)),
    });
    const created = { breaker, consecutive: 0 };
    entry = created;
    breaker.on('success', () => {
      created.consecutive = 0;
    });
    breaker.on('failure', () => {
      created.consecutive += 1;
      if (created.consecutive >= this.options.failureThreshold && !breaker.opened) breaker.open();
    });
    breaker.on('open', () => this.#transition(tool, 'open'));
    breaker.on('halfOpen', () => this.#transition(tool, 'half_open'));
    breaker.on('close', () => {
      created.consecutive = 0;
      this.#transition(tool, 'closed');
    });
    this.deps.metrics.breakerState.set({ tool }, BREAKER_STATE_VALUE.closed);
    this.#breakers.set(tool, created);
    return created;
  }

  #transition(tool: string, state: BreakerState): void {
    const { redis, keys, executorId, logger, metrics } = this.deps;
    metrics.breakerState.set({ tool }, BREAKER_STATE_VALUE[state]);
    metrics.breakerTransitions.inc({ tool, to: state });
    // On the span of the call that caused it (a reset timer's half-open has none).
    activeSpanEvent('breaker_transition', { 'gen_ai.tool.name': tool, 'agent_reach.breaker.state': state });
    const snapshot: BreakerSnapshot = {
      tool,
      state,
      executorId,
      at: Date.now(),
      ...(state === 'open' ? { openUntil: Date.now() + this.options.resetTimeoutMs } : {}),
    };
    (state === 'open' ? logger.warn : logger.info).call(logger, { tool, state }, 'breaker state changed');
    const json = JSON.stringify(snapshot);
    redis
      .multi()
      .hset(keys.breakers, tool, json)
      .publish(keys.breakerChannel, json)
      .exec()
      .catch((err: unknown) => logger.error({ err, tool }, 'could not publish breaker state'));
  }
}
