import { setTimeout as sleep } from 'node:timers/promises';
import CircuitBreaker from 'opossum';
import type { ChatCompletion } from 'openai/resources/chat/completions';
import { BREAKER_STATE_VALUE, constants, type BreakerState, type Logger } from '@agent-reach/shared';
import type { LlmClient } from './llm.js';
import {
  classifyFailure,
  countsOnBreaker,
  ModelCallFailed,
  retriedWithoutFallback,
  type ModelPlace,
  type ProviderFailureKind,
} from './provider-failure.js';
import { enterFleet, type FleetStore } from './provider-fleet-gate.js';
import { ProviderGate } from './provider-gate.js';
import type { ProviderMetrics } from './provider-metrics.js';

type Call = () => Promise<ChatCompletion>;

/** One request of a turn to one model; `maxRetries` 0: the provider loop owns retries. */
export type ModelRequest = (client: LlmClient, maxRetries: number) => Promise<ChatCompletion>;

/** What a provider is built from. */
export interface ProviderOptions {
  breaker?: { failures: number; resetMs: number };
  limits?: ConstructorParameters<typeof ProviderGate>[0];
  /** Where the limits are kept fleet-wide (undefined: this process alone holds them, as before Redis answers). */
  fleet?: () => FleetStore | undefined;
  metrics?: ProviderMetrics;
  logger: Logger;
  /** Where the provider is, for naming it in errors. */
  place: Omit<ModelPlace, 'model' | 'provider'>;
  /** Retries of one request at this provider (its `max_retries`). */
  maxRetries: number;
  /** Its per-request timeout, in ms: the longest Retry-After waited for without a fallback. */
  timeoutMs: number;
}

/** The rejection of a call while the provider's breaker is open. */
export const isBreakerOpen = (err: unknown) => (err as { code?: unknown })?.code === 'EOPENBREAKER';

/**
 * One provider in this process: its clients by model, its gate (concurrency and rate limits), its
 * breaker and its retries. opossum opens on an error percentage over a rolling window; providers, like
 * tools, open on *consecutive* failed requests, so opossum's own rule is disabled and the breaker is
 * opened here.
 */
export class Provider {
  readonly #clients = new Map<string, LlmClient>();
  readonly #breaker: CircuitBreaker<[Call], ChatCompletion> | undefined;
  readonly #options: ProviderOptions;
  readonly gate: ProviderGate | undefined;
  #consecutive = 0;
  /** Requests past this process's gate waiting for the fleet-wide limits. */
  #fleetWaiting = 0;

  constructor(
    readonly name: string,
    private readonly makeClient: (model: string) => LlmClient,
    options: ProviderOptions,
  ) {
    this.#options = options;
    const { metrics, limits } = options;
    if (limits && (limits.concurrency !== undefined || limits.rate !== undefined))
      this.gate = new ProviderGate(limits, (n) =>
        metrics?.waiting.set({ provider: name }, n + this.#fleetWaiting),
      );
    if (options.breaker !== undefined) this.#breaker = this.#makeBreaker(options.breaker);
  }

  #makeBreaker(settings: { failures: number; resetMs: number }): CircuitBreaker<[Call], ChatCompletion> {
    const { metrics, logger } = this.#options;
    const name = this.name;
    const breaker = new CircuitBreaker<[Call], ChatCompletion>((call: Call) => call(), {
      name,
      timeout: false, // the SDK owns timeouts
      resetTimeout: settings.resetMs,
      volumeThreshold: Number.MAX_SAFE_INTEGER,
      errorThresholdPercentage: 100,
      errorFilter: (err: unknown) => {
        const kind = classifyFailure(err);
        return kind === undefined || !countsOnBreaker(kind);
      },
    });
    breaker.on('success', () => {
      this.#consecutive = 0;
    });
    breaker.on('failure', () => {
      this.#consecutive += 1;
      if (this.#consecutive >= settings.failures && !breaker.opened) breaker.open();
    });
    const transition = (state: BreakerState) => {
      metrics?.breakerState.set({ provider: name }, BREAKER_STATE_VALUE[state]);
      metrics?.breakerTransitions.inc({ provider: name, to: state });
      (state === 'open' ? logger.warn : logger.info).call(
        logger,
        { provider: name, state },
        'provider breaker',
      );
    };
    breaker.on('open', () => transition('open'));
    breaker.on('halfOpen', () => transition('half_open'));
    breaker.on('close', () => {
      this.#consecutive = 0;
      transition('closed');
    });
    metrics?.breakerState.set({ provider: name }, BREAKER_STATE_VALUE.closed);
    return breaker;
  }

  get state(): BreakerState {
    const b = this.#breaker;
    return !b ? 'closed' : b.opened ? 'open' : b.halfOpen ? 'half_open' : 'closed';
  }

  /** Where a model of this provider is, for naming it in errors. */
  place(model: string): ModelPlace {
    return { provider: this.name, model, ...this.#options.place };
  }

  client(model: string): LlmClient {
    let client = this.#clients.get(model);
    if (client) this.#clients.delete(model);
    else client = this.makeClient(model);
    this.#clients.set(model, client);
    if (this.#clients.size > constants.MAX_MODEL_CLIENTS) {
      const oldest = this.#clients.keys().next().value;
      if (oldest !== undefined) this.#clients.delete(oldest);
    }
    return client;
  }

  /** One request through the gate and the breaker; rejects with code `EOPENBREAKER` when it is open. */
  async call(call: Call, signal?: AbortSignal): Promise<ChatCompletion> {
    const release = this.gate ? await this.gate.enter(signal) : () => undefined;
    let releaseFleet = () => undefined as void;
    try {
      const fleet = this.#options.fleet?.();
      if (this.gate && this.#options.limits && fleet)
        releaseFleet = await enterFleet(
          fleet,
          this.name,
          this.#options.limits,
          signal,
          (waiting) => {
            this.#fleetWaiting += waiting ? 1 : -1;
            this.#options.metrics?.waiting.set(
              { provider: this.name },
              this.gate!.waiting + this.#fleetWaiting,
            );
          },
          {
            onLeaseLost: (why) =>
              this.#options.logger.warn(
                { provider: this.name, why },
                "a request's fleet-wide slot was lost while it ran: the provider's concurrency limit may be exceeded until it ends",
              ),
          },
        );
      return this.#breaker ? await this.#breaker.fire(call) : await call();
    } finally {
      releaseFleet();
      release();
    }
  }

  /**
   * A model's answer, retried here only for what another attempt may cure (docs/providers.md has the
   * table): with a model to fall back to, only a 429 whose Retry-After is short, once; as the turn's last
   * model, up to `max_retries` times. A provider failure is thrown as a {@link ModelCallFailed} naming the
   * provider; an open breaker as opossum's `EOPENBREAKER`; anything else (a 400, a cancel) as it came.
   */
  async ask(model: string, request: ModelRequest, hasFallback: boolean, signal?: AbortSignal) {
    const client = this.client(model);
    const took = (started: number, result: 'ok' | 'error') =>
      this.#options.metrics?.requestDuration.observe(
        { provider: this.name, result },
        (performance.now() - started) / 1000,
      );
    for (let attempt = 1; ; attempt += 1) {
      const started = performance.now();
      try {
        const answer = await this.call(() => request(client, 0), signal);
        took(started, 'ok');
        return answer;
      } catch (err) {
        if (signal?.aborted || isBreakerOpen(err)) throw err;
        took(started, 'error');
        const kind = classifyFailure(err);
        if (kind === undefined) throw err;
        this.report(kind, model, err, attempt);
        const wait = this.#retryIn(kind, err, attempt, hasFallback);
        if (wait === undefined) throw new ModelCallFailed(kind, this.place(model), err, attempt);
        await sleep(wait, undefined, signal ? { signal } : {}).catch(() => {
          throw err;
        });
      }
    }
  }

  /** How long to wait before trying the same provider again; undefined: not again. */
  #retryIn(
    kind: ProviderFailureKind,
    err: unknown,
    attempt: number,
    hasFallback: boolean,
  ): number | undefined {
    const retryAfter = retryAfterMs(err);
    if (hasFallback) {
      const short = retryAfter !== undefined && retryAfter <= constants.FALLBACK_MAX_RETRY_AFTER_MS;
      return kind === 'rate_limit' && short && attempt === 1 ? retryAfter : undefined;
    }
    if (attempt > this.#options.maxRetries || !retriedWithoutFallback(kind)) return undefined;
    if (retryAfter !== undefined) return retryAfter <= this.#options.timeoutMs ? retryAfter : undefined;
    const backoff = Math.min(
      constants.PROVIDER_RETRY_MAX_MS,
      constants.PROVIDER_RETRY_BASE_MS * 2 ** (attempt - 1),
    );
    return Math.round(backoff * (0.75 + Math.random() * 0.25));
  }

  /** Counts a failed request; a refused key is a configuration problem, logged at error level. */
  report(kind: ProviderFailureKind, model: string, err: unknown, attempt: number): void {
    const { metrics, logger, place } = this.#options;
    metrics?.errors.inc({ provider: this.name, kind });
    const fields = { provider: this.name, model, kind, attempt, baseUrl: place.baseUrl };
    if (kind === 'auth') {
      metrics?.keyRefused.inc({ provider: this.name });
      logger.error(
        { ...fields, keyEnv: place.keyEnv, status: (err as { status?: unknown }).status },
        'model provider refused its API key: a configuration problem',
      );
    } else logger.warn({ ...fields, err }, 'model request failed');
  }

  shutdown(): void {
    this.#breaker?.shutdown();
  }
}

/** A 429's or 503's Retry-After, in ms (`retry-after-ms` first, as the SDKs read it). */
function retryAfterMs(err: unknown): number | undefined {
  const headers = (err as { headers?: unknown }).headers;
  const get = (name: string): string | undefined => {
    if (headers instanceof Headers) return headers.get(name) ?? undefined;
    const value = (headers as Record<string, unknown> | undefined)?.[name];
    return typeof value === 'string' ? value : undefined;
  };
  const ms = Number(get('retry-after-ms'));
  if (Number.isFinite(ms) && ms >= 0 && get('retry-after-ms') !== undefined) return ms;
  const raw = get('retry-after');
  if (raw === undefined) return undefined;
  const s = Number(raw);
  if (Number.isFinite(s)) return Math.max(0, s * 1000);
  const at = Date.parse(raw);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}
