import type { ChatCompletion } from 'openai/resources/chat/completions';
import { AgentReachError } from '@agent-reach/protocol';
import {
  constants,
  DEFAULT_PROVIDER,
  type AgentReachConfig,
  type AgentSpec,
  type BreakerState,
  type Logger,
  type ModelPrice,
  type ProviderSpec,
  type ProvidersFile,
  declaredModels,
  undeclaredModels,
} from '@agent-reach/shared';
import { createLlmClient, type LlmClient, type TurnOptions } from './llm.js';
import { isBreakerOpen, Provider, type ModelRequest } from './provider.js';
import { classifyFailure, fallsBack, ModelCallFailed, publicUrl } from './provider-failure.js';
import type { FleetStore } from './provider-fleet-gate.js';
import type { ProviderMetrics } from './provider-metrics.js';
import type { AnswerDelta, DeltaListener } from './stream-completion.js';

/** A model that was not asked, or did not answer, before the one that did. */
export interface SkippedModel {
  /** `<provider>/<model>`. */
  model: string;
  /** `breaker_open`: its provider's breaker was open; `failed`: it failed after its retries. */
  reason: 'breaker_open' | 'failed';
  /** What the failure said: the provider, model, base URL, kind of failure and what to check. */
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
  readonly #options: ResolvedModelProvidersOptions;
  #file: ProvidersFile;
  #specs = new Map<string, string>();
  /** One set, refilled by each apply: holders of it (the API) see the models in force. */
  readonly #allowed = new Set<string>();
  /** The providers file this scheduler read at its start: in force while no version carries providers. */
  readonly local: ProvidersFile;
  readonly #defaultModel: string;
  readonly metrics: ProviderMetrics;
  #fleet: FleetStore | undefined;

  constructor(providersOptions: ModelProvidersOptions) {
    this.#options = resolveModelProvidersOptions(providersOptions);
    const { config, file, metrics } = this.#options;
    this.metrics = metrics;
    this.#defaultModel = defaultModelOf(config);
    this.#file = file;
    this.local = file;
    this.apply(file);
    if (config.providersFile && file.path === undefined)
      this.#options.logger.warn(
        { file: config.providersFile },
        'PROVIDERS_FILE does not exist: only the default provider until it does (read at start)',
      );
  }

  /**
   * Keeps the providers' concurrency and rate limits in Redis from now on, so they hold across every
   * scheduler on it (docs/providers.md, "Limits across the fleet"); before, each process holds them alone.
   */
  shareLimits(redis: FleetStore['redis'], prefix: string): void {
    this.#fleet = { redis, prefix };
  }

  /**
   * Problems of serving a providers file with these agents: a provider whose API key variable is not set
   * here, an agent's model or fallback the file (with `ALLOWED_MODELS` and the default model) does not
   * declare. Throws `CONFIG_INVALID` listing them all; changes nothing.
   */
  check(file: ProvidersFile, agents: Iterable<Pick<AgentSpec, 'name' | 'model' | 'fallback'>> = []): void {
    const { config, env } = this.#options;
    const where = file.path ?? 'providers file';
    const problems = file.providers.flatMap((spec) =>
      spec.api_key_env !== undefined && !env[spec.api_key_env]
        ? [
            `${where}: provider "${spec.name}": its API key variable ${spec.api_key_env} is not set in the scheduler's environment`,
          ]
        : [],
    );
    const declared = new Set([...config.api.allowedModels, ...declaredModels(file)]);
    for (const agent of agents)
      problems.push(
        ...undeclaredModels(agent, {
          declared,
          defaultModel: this.#defaultModel,
          agentsFile: config.agentsFile,
          ...(file.path ? { providersFile: file.path } : {}),
        }),
      );
    if (problems.length > 0)
      throw new AgentReachError('CONFIG_INVALID', problems.join('\n'), { details: problems });
  }

  /**
   * Serves a providers file: providers whose declaration is unchanged keep their breaker and limits,
   * others are built anew, and those no longer declared are dropped. Throws `CONFIG_INVALID` (changing
   * nothing) when a provider's API key variable is not set.
   */
  apply(file: ProvidersFile): void {
    const { config, env, logger, metrics } = this.#options;
    this.check(file);
    const routed = file.providers.length > 0;
    const breakerOf = (spec?: ProviderSpec) => ({
      failures: spec?.breaker?.failures ?? config.executor.breakerFailureThreshold,
      resetMs: spec?.breaker?.reset_ms ?? config.executor.breakerResetTimeoutMs,
    });
    const specs = new Map<string, string>();
    const defaultKey = JSON.stringify({ routed });
    specs.set(DEFAULT_PROVIDER, defaultKey);
    // Without a providers file the default provider is what it always was: no breaker of its own.
    if (this.#specs.get(DEFAULT_PROVIDER) !== defaultKey) {
      this.#replace(
        new Provider(DEFAULT_PROVIDER, this.#options.defaultClient, {
          ...(routed ? { breaker: breakerOf() } : {}),
          metrics,
          logger,
          place: {
            baseUrl: publicUrl(config.llm.baseUrl),
            keyEnv: 'OPENAI_API_KEY',
          },
          maxRetries: config.scheduler.llmMaxRetries,
          timeoutMs: config.scheduler.llmTimeoutMs,
        }),
      );
    }
    for (const spec of file.providers) {
      const key = JSON.stringify([spec, spec.api_key_env === undefined ? '' : env[spec.api_key_env]]);
      specs.set(spec.name, key);
      if (this.#specs.get(spec.name) !== key) this.#replace(this.#build(spec, breakerOf(spec), file.path));
    }
    for (const name of [...this.#providers.keys()])
      if (!specs.has(name)) {
        this.#providers.get(name)?.shutdown();
        this.#providers.delete(name);
      }
    this.#specs = specs;
    this.#file = file;
    this.#allowed.clear();
    for (const m of [...config.api.allowedModels, ...declaredModels(file)]) this.#allowed.add(m);
  }

  #replace(provider: Provider): void {
    this.#providers.get(provider.name)?.shutdown();
    this.#providers.set(provider.name, provider);
  }

  #build(spec: ProviderSpec, breaker: { failures: number; resetMs: number }, path?: string): Provider {
    const { config, env, logger, metrics } = this.#options;
    const apiKey = spec.api_key_env === undefined ? undefined : env[spec.api_key_env];
    const timeoutMs = spec.timeout_ms ?? config.scheduler.llmTimeoutMs;
    const maxRetries = spec.max_retries ?? config.scheduler.llmMaxRetries;
    const make = (model: string) =>
      createLlmClient({
        baseURL: spec.base_url,
        apiKey: apiKey ?? 'not-needed',
        model,
        timeoutMs,
        maxRetries,
        maxOutputTokens: config.scheduler.maxOutputTokens,
        stream: config.scheduler.llmStream,
      });
    const windowMs = spec.rate?.per === 'minute' ? 60_000 : 1000;
    return new Provider(spec.name, make, {
      breaker,
      limits: {
        ...(spec.concurrency === undefined ? {} : { concurrency: spec.concurrency }),
        ...(spec.rate ? { rate: { max: spec.rate.max, windowMs } } : {}),
      },
      fleet: () => this.#fleet,
      metrics,
      logger,
      place: {
        baseUrl: publicUrl(spec.base_url),
        ...(spec.api_key_env ? { keyEnv: spec.api_key_env } : {}),
        ...(path ? { file: path } : {}),
      },
      maxRetries,
      timeoutMs,
    });
  }

  /** The models a caller may name: `ALLOWED_MODELS` (the default provider's) and the declared ones. */
  get allowed(): ReadonlySet<string> {
    return this.#allowed;
  }

  /** Whether runs are routed (a providers file declares at least one provider). */
  get routed(): boolean {
    return this.#file.providers.length > 0;
  }

  /**
   * Whether a run that names no model may ask the scheduler's own client directly: no provider is
   * declared and no model has a price (else the run asks through {@link clientFor}, which prices it).
   */
  get plain(): boolean {
    return !this.routed && Object.keys(this.#file.prices).length === 0;
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

  /** The models a run asks in order: the request's (or its agent's, or the default), then the fallbacks. */
  modelsOf(agent: Pick<AgentSpec, 'model' | 'fallback'> | undefined, requested?: string): string[] {
    const first = requested ?? agent?.model ?? this.#defaultModel;
    return [first, ...(agent?.fallback ?? []).filter((m) => m !== first)];
  }

  /**
   * The client of a run that asks `models` in order. Without a providers file and with one model, the
   * default provider's client of that model, its retries the SDK's (as before providers existed).
   */
  clientFor(models: string[]): LlmClient {
    const [first = this.#defaultModel] = models;
    if (!this.routed && models.length <= 1) return this.#plain(this.resolve(first));
    return this.#routed(models.map((m) => this.resolve(m)));
  }

  #provider(name: string): Provider {
    // A provider dropped by a live apply while a run still names it: the default one answers for it.
    return (this.#providers.get(name) ?? this.#providers.get(DEFAULT_PROVIDER)) as Provider;
  }

  #route(r: Resolved, skipped: SkippedModel[]): TurnRoute {
    const price = this.#file.prices[r.id];
    return { ...r, ...(price ? { price } : {}), skipped };
  }

  /** One model of the default provider: the SDK retries; a failure is named, a price applies. */
  #plain(r: Resolved): LlmClient {
    const provider = this.#provider(r.provider);
    const client = provider.client(r.model);
    const named = async (call: () => Promise<ChatCompletion>): Promise<ChatCompletion> => {
      let res: ChatCompletion;
      try {
        res = await call();
      } catch (err) {
        const kind = classifyFailure(err);
        if (kind === undefined) throw err;
        provider.report(kind, r.model, err, 1);
        throw new ModelCallFailed(kind, provider.place(r.model), err, 1);
      }
      // Priced only when the providers file gives the default provider's model a price.
      if (this.#file.prices[r.id]) routes.set(res, this.#route(r, []));
      return res;
    };
    return {
      model: client.model,
      ...(client.baseURL ? { baseURL: client.baseURL } : {}),
      complete: (messages, tools, signal, onDelta, turn) =>
        named(() => client.complete(messages, tools, signal, onDelta, turn)),
      completeJson: (messages, signal, turn) => named(() => client.completeJson(messages, signal, turn)),
    };
  }

  #routed(chain: Resolved[]): LlmClient {
    const ask = async (
      call: (client: LlmClient, turn: TurnOptions, onDelta?: DeltaListener) => Promise<ChatCompletion>,
      signal?: AbortSignal,
      onDelta?: DeltaListener,
    ): Promise<ChatCompletion> => {
      const skipped: SkippedModel[] = [];
      let last: unknown;
      // Each request's stream starts the turn's text over: its attempt follows the failed one's.
      let tries = 0;
      const request: ModelRequest = (client, maxRetries) => {
        const base = tries;
        tries += 1;
        const relay = onDelta
          ? (d: AnswerDelta) => {
              tries = Math.max(tries, base + d.attempt);
              onDelta({ ...d, attempt: base + d.attempt });
            }
          : undefined;
        return call(client, { maxRetries }, relay);
      };
      for (const [i, r] of chain.entries()) {
        const provider = this.#provider(r.provider);
        if (provider.state === 'open') {
          skipped.push(breakerOpen(r));
          continue;
        }
        // A later model counts as a fallback only while its provider may be asked.
        const hasFallback = chain.slice(i + 1).some((n) => this.#provider(n.provider).state !== 'open');
        try {
          const res = await provider.ask(r.model, request, hasFallback, signal);
          routes.set(res, this.#route(r, skipped));
          return res;
        } catch (err) {
          if (signal?.aborted) throw err;
          if (isBreakerOpen(err)) {
            skipped.push(breakerOpen(r));
            continue;
          }
          if (!(err instanceof ModelCallFailed) || !fallsBack(err.kind)) throw err;
          last = err;
          skipped.push({ model: r.id, reason: 'failed', message: err.message.slice(0, 1000) });
        }
      }
      throw new AllModelsFailed(skipped, last);
    };
    const [first] = chain;
    return {
      model: first?.id ?? this.#defaultModel,
      complete: (messages, tools, signal, onDelta, turn) =>
        ask(
          (client, retries, relay) =>
            client.complete(messages, tools, signal, relay, { ...turn, ...retries }),
          signal,
          onDelta,
        ),
      completeJson: (messages, signal, turn) =>
        ask((client, retries) => client.completeJson(messages, signal, { ...turn, ...retries }), signal),
    };
  }

  close(): void {
    for (const p of this.#providers.values()) p.shutdown();
  }
}

type Resolved = { provider: string; model: string; id: string };

function breakerOpen(r: Resolved): SkippedModel {
  return {
    model: r.id,
    reason: 'breaker_open',
    message: `provider "${r.provider}": its breaker is open after consecutive failures; not asked`,
  };
}

/** A turn's cost from its tokens and its model's price (per million tokens); undefined without a price. */
export function turnCost(
  price: ModelPrice | undefined,
  usage: { prompt_tokens: number; completion_tokens: number },
): number | undefined {
  if (price === undefined) return undefined;
  return (usage.prompt_tokens * price.input + usage.completion_tokens * price.output) / 1_000_000;
}
