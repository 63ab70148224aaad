import CircuitBreaker from 'opossum';
import { APIError, APIUserAbortError } from 'openai';
import type { ChatCompletion } from 'openai/resources/chat/completions';
import { AgentReachError } from '@agent-reach/protocol';
import {
  BREAKER_STATE_VALUE,
  constants,
  DEFAULT_PROVIDER,
  type AgentReachConfig,
  type AgentSpec,
  type BreakerState,
  type Logger,
  type ModelPrice,
  type ProviderSpec,
  type ProvidersFile,
} from '@agent-reach/shared';
import { createLlmClient, type LlmClient } from './llm.js';
import { ProviderGate } from './provider-gate.js';
import type { ProviderMetrics } from './provider-metrics.js';
import type { AnswerDelta, DeltaListener } from './stream-completion.js';

/** A model that was not asked, or did not answer, before the one that did. */
export interface SkippedModel {
  /** `<provider>/<model>`. */
  model: string;
  /** `breaker_open`: its provider's breaker was open; `failed`: it failed after its retries. */
  reason: 'breaker_open' | 'failed';
  /** What the failure said (for `failed`). */
  message?: string;
}

/** Which declared model answered a turn, what it costs, and which ones were passed over first. */
export interface TurnRoute {
  provider: string;
  /** The model as its provider knows it. */
  model: string;
  /** `<provider>/<model>`. */
  id: string;
  price?: ModelPrice;
  skipped: SkippedModel[];
}

const routes = new WeakMap<object, TurnRoute>();

/** The route of a completion a routed client returned; undefined for a plain client's. */
export function routeOf(completion: object): TurnRoute | undefined {
  return routes.get(completion);
}

/** Every model of a turn was unavailable or failed: the last failure, with the list of what was tried. */
export class AllModelsFailed extends Error {
  readonly status: number | undefined;
  constructor(
    readonly skipped: SkippedModel[],
    last: unknown,
  ) {
    const tried = skipped.map((s) => `${s.model}: ${s.reason === 'failed' ? s.message : 'breaker open'}`);
    super(`no model of the turn answered (${tried.join('; ')})`);
    this.name = 'AllModelsFailed';
    const status = (last as { status?: unknown } | undefined)?.status;
    this.status = typeof status === 'number' ? status : undefined;
  }
}

/** HTTP statuses a retry may cure, as the openai SDK retries them. */
const RETRYABLE_STATUS = new Set([408, 409, 429]);

/**
 * Whether a failure (after the SDK's retries) says the provider is unavailable: connection errors,
 * timeouts, 408/409/429/5xx, a stream that broke. Such a failure counts on the provider's breaker and sends
 * the turn to the next model; any other (a 400 about the request, an abort) is the caller's.
 */
export function providerUnavailable(err: unknown): boolean {
  if (err instanceof APIUserAbortError) return false;
  if (err instanceof APIError && typeof err.status === 'number')
    return RETRYABLE_STATUS.has(err.status) || err.status >= 500;
  return !(err instanceof Error && err.name === 'AbortError');
}

type Call = () => Promise<ChatCompletion>;

/**
 * One provider in this process: its clients by model, its gate (concurrency and rate limits) and its
 * breaker. opossum opens on an error percentage over a rolling window; providers, like tools, open on
 * *consecutive* failures, so opossum's own rule is disabled and the breaker is opened here.
 */
class Provider {
  readonly #clients = new Map<string, LlmClient>();
  readonly #breaker: CircuitBreaker<[Call], ChatCompletion> | undefined;
  readonly gate: ProviderGate | undefined;
  #consecutive = 0;

  constructor(
    readonly name: string,
    private readonly makeClient: (model: string) => LlmClient,
    options: {
      breaker?: { failures: number; resetMs: number };
      limits?: ConstructorParameters<typeof ProviderGate>[0];
      metrics?: ProviderMetrics;
      logger: Logger;
    },
  ) {
    const { metrics, logger } = options;
    const limits = options.limits;
    if (limits && (limits.concurrency !== undefined || limits.rate !== undefined))
      this.gate = new ProviderGate(limits, (n) => metrics?.waiting.set({ provider: name }, n));
    const settings = options.breaker;
    if (settings === undefined) return;
    const breaker = new CircuitBreaker<[Call], ChatCompletion>((call: Call) => call(), {
      name,
      timeout: false, // the SDK owns timeouts
      resetTimeout: settings.resetMs,
      volumeThreshold: Number.MAX_SAFE_INTEGER,
      errorThresholdPercentage: 100,
      errorFilter: (err: unknown) => !providerUnavailable(err),
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
    this.#breaker = breaker;
  }

  get state(): BreakerState {
    const b = this.#breaker;
    return !b ? 'closed' : b.opened ? 'open' : b.halfOpen ? 'half_open' : 'closed';
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
    try {
      return this.#breaker ? await this.#breaker.fire(call) : await call();
    } finally {
      release();
    }
  }

  shutdown(): void {
    this.#breaker?.shutdown();
  }
}

const isBreakerOpen = (err: unknown) => (err as { code?: unknown })?.code === 'EOPENBREAKER';

/**
 * The model providers of a scheduler: the default one (`OPENAI_BASE_URL`, `OPENAI_API_KEY`, the models
 * `ALLOWED_MODELS` lists) and those of the providers file. It hands each run a client that asks the
 * run's models in order: its model, then its agent's `fallback` list, passing over a provider whose
 * breaker is open or that failed after its retries.
 */
/** What the model providers are built from. */
export interface ModelProvidersOptions {
  config: AgentReachConfig;
  file: ProvidersFile;
  /** A client of the default provider for a model (the scheduler's own configuration). */
  defaultClient: (model: string) => LlmClient;
  logger: Logger;
  metrics: ProviderMetrics;
  /** The environment provider API keys are read from (`api_key_env`). Default: none set. */
  env?: Record<string, string | undefined>;
}

/** The providers' options with every default filled in. */
export type ResolvedModelProvidersOptions = Required<ModelProvidersOptions>;

/** Every default of the model providers in one place: their body reads the resolved options only. */
export function resolveModelProvidersOptions(o: ModelProvidersOptions): ResolvedModelProvidersOptions {
  return { ...o, env: o.env ?? {} };
}

/** The model a configuration runs when neither a run nor its agent names one. */
export function defaultModelOf(config: AgentReachConfig): string {
  return config.llm.model ?? constants.DEFAULT_LLM_MODEL;
}

export class ModelProviders {
  readonly #providers = new Map<string, Provider>();
  readonly #file: ProvidersFile;
  readonly #defaultModel: string;
  readonly #allowed: ReadonlySet<string>;
  readonly metrics: ProviderMetrics;

  constructor(providersOptions: ModelProvidersOptions) {
    const options = resolveModelProvidersOptions(providersOptions);
    const { config, file, logger, metrics, env } = options;
    this.metrics = metrics;
    this.#file = file;
    this.#defaultModel = defaultModelOf(config);
    const routed = file.providers.length > 0;
    const breakerOf = (spec?: ProviderSpec) => ({
      failures: spec?.breaker?.failures ?? config.executor.breakerFailureThreshold,
      resetMs: spec?.breaker?.reset_ms ?? config.executor.breakerResetTimeoutMs,
    });
    // Without a providers file the default provider is what it always was: no breaker of its own.
    this.#providers.set(
      DEFAULT_PROVIDER,
      new Provider(DEFAULT_PROVIDER, options.defaultClient, {
        ...(routed ? { breaker: breakerOf() } : {}),
        metrics,
        logger,
      }),
    );
    for (const spec of file.providers) {
      const apiKey = spec.api_key_env === undefined ? undefined : env[spec.api_key_env];
      if (spec.api_key_env !== undefined && !apiKey)
        throw new AgentReachError(
          'CONFIG_INVALID',
          `provider "${spec.name}": its API key variable ${spec.api_key_env} is not set`,
        );
      const make = (model: string) =>
        createLlmClient({
          baseURL: spec.base_url,
          apiKey: apiKey ?? 'not-needed',
          model,
          timeoutMs: spec.timeout_ms ?? config.scheduler.llmTimeoutMs,
          maxRetries: spec.max_retries ?? config.scheduler.llmMaxRetries,
          maxOutputTokens: config.scheduler.maxOutputTokens,
          stream: config.scheduler.llmStream,
        });
      const windowMs = spec.rate?.per === 'minute' ? 60_000 : 1000;
      this.#providers.set(
        spec.name,
        new Provider(spec.name, make, {
          breaker: breakerOf(spec),
          limits: {
            ...(spec.concurrency === undefined ? {} : { concurrency: spec.concurrency }),
            ...(spec.rate ? { rate: { max: spec.rate.max, windowMs } } : {}),
          },
          metrics,
          logger,
        }),
      );
    }
    const declared = file.providers.flatMap((p) => p.models.map((m) => `${p.name}/${m}`));
    this.#allowed = new Set([...config.api.allowedModels, ...declared]);
  }

  /** The models a caller may name: `ALLOWED_MODELS` (the default provider's) and the declared ones. */
  get allowed(): ReadonlySet<string> {
    return this.#allowed;
  }

  /** Whether runs are routed (a providers file declares at least one provider). */
  get routed(): boolean {
    return this.#file.providers.length > 0;
  }

  /** A provider's breaker state (`closed` for one without a breaker); undefined for an unknown provider. */
  breakerState(provider: string): BreakerState | undefined {
    return this.#providers.get(provider)?.state;
  }

  /**
   * Which provider serves a model name: `<provider>/<model>` for a declared provider (and `default/…`),
   * else the default provider with the whole name (a model of `ALLOWED_MODELS` may hold a `/`).
   */
  resolve(name: string): { provider: string; model: string; id: string } {
    const slash = name.indexOf('/');
    const prefix = slash > 0 ? name.slice(0, slash) : '';
    if (prefix && this.#providers.has(prefix)) {
      const model = name.slice(slash + 1);
      return { provider: prefix, model, id: name };
    }
    return { provider: DEFAULT_PROVIDER, model: name, id: `${DEFAULT_PROVIDER}/${name}` };
  }

  /** Problems of an agent's `model` and `fallback`: each must be a model a caller could name. */
  agentProblems(agent: Pick<AgentSpec, 'name' | 'model' | 'fallback'>): string[] {
    return [agent.model, ...(agent.fallback ?? [])].flatMap((m) =>
      m === undefined || this.#allowed.has(m) || m === this.#defaultModel
        ? []
        : [`agent "${agent.name}": model "${m}" is not declared; declared: ${[...this.#allowed].join(', ')}`],
    );
  }

  /** The models a run asks in order: the request's (or its agent's, or the default), then the fallbacks. */
  modelsOf(agent: Pick<AgentSpec, 'model' | 'fallback'> | undefined, requested?: string): string[] {
    const first = requested ?? agent?.model ?? this.#defaultModel;
    return [first, ...(agent?.fallback ?? []).filter((m) => m !== first)];
  }

  /**
   * The client of a run that asks `models` in order. Without a providers file and with one model, the
   * plain client of that model (no routing, as before providers existed).
   */
  clientFor(models: string[]): LlmClient {
    const [first = this.#defaultModel] = models;
    if (!this.routed && models.length <= 1) return this.#client(this.resolve(first));
    return this.#routed(models.map((m) => this.resolve(m)));
  }

  #client(r: { provider: string; model: string }): LlmClient {
    return (this.#providers.get(r.provider) as Provider).client(r.model);
  }

  #routed(chain: Array<{ provider: string; model: string; id: string }>): LlmClient {
    const ask = async (
      call: (client: LlmClient, onDelta?: DeltaListener) => Promise<ChatCompletion>,
      signal?: AbortSignal,
      onDelta?: DeltaListener,
    ): Promise<ChatCompletion> => {
      const skipped: SkippedModel[] = [];
      let last: unknown;
      // Each model's stream starts the turn's text over: its attempts follow the failed one's.
      let attempts = 0;
      for (const r of chain) {
        const provider = this.#providers.get(r.provider) as Provider;
        if (provider.state === 'open') {
          skipped.push({ model: r.id, reason: 'breaker_open' });
          continue;
        }
        const base = attempts;
        const relay = onDelta
          ? (d: AnswerDelta) => {
              attempts = Math.max(attempts, base + d.attempt);
              onDelta({ ...d, attempt: base + d.attempt });
            }
          : undefined;
        try {
          const client = provider.client(r.model);
          const res = await provider.call(() => call(client, relay), signal);
          routes.set(res, {
            provider: r.provider,
            model: r.model,
            id: r.id,
            ...(this.#file.prices[r.id] ? { price: this.#file.prices[r.id] } : {}),
            skipped,
          });
          return res;
        } catch (err) {
          if (signal?.aborted) throw err;
          if (isBreakerOpen(err)) {
            skipped.push({ model: r.id, reason: 'breaker_open' });
            continue;
          }
          if (!providerUnavailable(err)) throw err;
          last = err;
          attempts += 1;
          const message = (err as { message?: unknown }).message;
          skipped.push({ model: r.id, reason: 'failed', message: String(message ?? err).slice(0, 300) });
        }
      }
      throw new AllModelsFailed(skipped, last);
    };
    const [first] = chain;
    return {
      model: first?.id ?? this.#defaultModel,
      complete: (messages, tools, signal, onDelta) =>
        ask((client, relay) => client.complete(messages, tools, signal, relay), signal, onDelta),
      completeJson: (messages, signal) => ask((client) => client.completeJson(messages, signal), signal),
    };
  }

  close(): void {
    for (const p of this.#providers.values()) p.shutdown();
  }
}

/** A turn's cost from its tokens and its model's price (per million tokens); undefined without a price. */
export function turnCost(
  price: ModelPrice | undefined,
  usage: { prompt_tokens: number; completion_tokens: number },
): number | undefined {
  if (price === undefined) return undefined;
  return (usage.prompt_tokens * price.input + usage.completion_tokens * price.output) / 1_000_000;
}
