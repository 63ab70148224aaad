import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import AjvModule from 'ajv';
import { parse } from 'yaml';
import { AgentReachError } from '@agent-reach/protocol';
import { describeSchemaError } from './schema-problems.js';
import { deepFreeze } from './config.js';

const Ajv = AjvModule.default;

/** The provider the single endpoint of `OPENAI_BASE_URL`/`OPENAI_API_KEY` is, undeclared or declared. */
export const DEFAULT_PROVIDER = 'default';

/** One model provider as the providers file declares it. */
export interface ProviderSpec {
  readonly name: string;
  /** OpenAI-compatible base URL. */
  readonly base_url: string;
  /** The environment variable holding the API key (its value is read when the scheduler starts). */
  readonly api_key_env?: string;
  /** Per-request timeout, in ms. Default: `LLM_TIMEOUT_MS`. */
  readonly timeout_ms?: number;
  /** Retries of one request before it counts as failed. Default: `LLM_MAX_RETRIES`. */
  readonly max_retries?: number;
  /** Requests to this provider in flight at once, per scheduler process. Default: no limit. */
  readonly concurrency?: number;
  /** Requests started per second or per minute, per scheduler process. Default: no limit. */
  readonly rate?: { readonly max: number; readonly per: 'second' | 'minute' };
  /** Consecutive failed requests that open the provider's breaker, and how long it stays open. */
  readonly breaker?: { readonly failures?: number; readonly reset_ms?: number };
  /** The models callers and agents may name as `<provider>/<model>`. */
  readonly models: readonly string[];
}

/** What a model costs, in currency units (e.g. USD) per million tokens. */
export interface ModelPrice {
  readonly input: number;
  readonly output: number;
}

/** The providers file, validated. */
export interface ProvidersFile {
  readonly providers: readonly ProviderSpec[];
  /** Prices by `<provider>/<model>` (the default provider's models as `default/<model>`). */
  readonly prices: Readonly<Record<string, ModelPrice>>;
  /** The file it was read from (absent: none, or a document given as text). */
  readonly path?: string;
}

const MODEL_NAME = '^[A-Za-z0-9_.:@+-][A-Za-z0-9_.:/@+-]{0,199}$';

const providersSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    providers: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['name', 'base_url', 'models'],
        properties: {
          name: { type: 'string', pattern: '^[a-z0-9][a-z0-9_-]{0,39}$' },
          base_url: { type: 'string', pattern: '^https?://' },
          api_key_env: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]*$' },
          timeout_ms: { type: 'integer', minimum: 1 },
          max_retries: { type: 'integer', minimum: 0, maximum: 20 },
          concurrency: { type: 'integer', minimum: 1, maximum: 100_000 },
          rate: {
            type: 'object',
            additionalProperties: false,
            required: ['max', 'per'],
            properties: {
              max: { type: 'integer', minimum: 1, maximum: 1_000_000 },
              per: { enum: ['second', 'minute'] },
            },
          },
          breaker: {
            type: 'object',
            additionalProperties: false,
            properties: {
              failures: { type: 'integer', minimum: 1 },
              reset_ms: { type: 'integer', minimum: 1 },
            },
          },
          models: {
            type: 'array',
            minItems: 1,
            uniqueItems: true,
            items: { type: 'string', pattern: MODEL_NAME },
          },
        },
      },
    },
    prices: {
      type: 'object',
      propertyNames: { pattern: '^[a-z0-9][a-z0-9_-]{0,39}/.+$' },
      additionalProperties: {
        type: 'object',
        additionalProperties: false,
        required: ['input', 'output'],
        properties: {
          input: { type: 'number', minimum: 0 },
          output: { type: 'number', minimum: 0 },
        },
      },
    },
  },
} as const;

const validateProviders = new Ajv({ allErrors: true, strict: true, verbose: true }).compile(providersSchema);

/** No provider declared and no price: what a configuration without a providers file has. */
export const NO_PROVIDERS: ProvidersFile = deepFreeze({ providers: [], prices: {} });

/**
 * Parses a providers document. Every problem is reported at once, naming the file and the field: a
 * provider declared twice, one named `default` (the implicit provider of `OPENAI_BASE_URL`), a price of a
 * provider that is not declared.
 */
export function parseProviders(text: string, file: string): ProvidersFile {
  let doc: unknown;
  try {
    doc = parse(text) ?? {};
  } catch (err) {
    throw new AgentReachError('CONFIG_INVALID', `${file}: not valid YAML: ${(err as Error).message}`);
  }
  const problems: string[] = [];
  if (!validateProviders(doc)) {
    for (const e of validateProviders.errors ?? []) {
      if ((e as { propertyName?: string }).propertyName !== undefined) continue;
      const field = e.instancePath.slice(1).replace(/\//g, '.') || '(top level)';
      problems.push(`${file}: ${field}: ${describeSchemaError(e)}`);
    }
    throw new AgentReachError('CONFIG_INVALID', problems.join('\n'), { details: problems });
  }
  const parsed = doc as { providers?: ProviderSpec[]; prices?: Record<string, ModelPrice> };
  const providers = parsed.providers ?? [];
  const names = new Set<string>();
  for (const p of providers) {
    if (p.name === DEFAULT_PROVIDER)
      problems.push(
        `${file}: provider "${DEFAULT_PROVIDER}" is the endpoint of OPENAI_BASE_URL; give this one another name`,
      );
    if (names.has(p.name)) problems.push(`${file}: provider "${p.name}" is declared twice`);
    // fetch refuses a URL with credentials, and a key in the file would sit in every version's history.
    if (/^https?:\/\/[^/]*@/.test(p.base_url))
      problems.push(
        `${file}: provider "${p.name}": base_url holds credentials; put the key in a variable named by api_key_env`,
      );
    names.add(p.name);
  }
  for (const key of Object.keys(parsed.prices ?? {})) {
    const provider = key.slice(0, key.indexOf('/'));
    if (provider !== DEFAULT_PROVIDER && !names.has(provider))
      problems.push(`${file}: prices: "${key}" names provider "${provider}", which is not declared`);
  }
  if (problems.length > 0)
    throw new AgentReachError('CONFIG_INVALID', problems.join('\n'), { details: problems });
  return deepFreeze({ providers, prices: parsed.prices ?? {}, path: file });
}

/** Where a configuration's providers file is, whether or not it exists: `PROVIDERS_FILE`, else beside the agents. */
export function providersPathOf(config: { agentsFile: string; providersFile?: string | undefined }): string {
  return config.providersFile || path.join(path.dirname(config.agentsFile), 'providers.yaml');
}

/**
 * The providers file a configuration names (`PROVIDERS_FILE` when set, else `providers.yaml` beside the
 * agents file) when it exists; undefined when there is none (then only the default provider exists). An
 * optional file that does not exist declares nothing, named or not (docs/configuration.md, Optional files).
 */
export function providersFileOf(config: {
  agentsFile: string;
  providersFile?: string | undefined;
}): string | undefined {
  const file = providersPathOf(config);
  return existsSync(file) ? file : undefined;
}

/** Reads the providers file of a configuration; none: no provider beyond the default one. */
export function loadProviders(config: {
  agentsFile: string;
  providersFile?: string | undefined;
}): ProvidersFile {
  const file = providersFileOf(config);
  if (file === undefined) return NO_PROVIDERS;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new AgentReachError(
      'CONFIG_INVALID',
      `${file}: cannot read providers file: ${(err as Error).message}`,
    );
  }
  return parseProviders(text, file);
}

/** Every `<provider>/<model>` a providers file declares. */
export function declaredModels(file: ProvidersFile): string[] {
  return file.providers.flatMap((p) => p.models.map((m) => `${p.name}/${m}`));
}

/**
 * Problems of an agent's `model` and `fallback`: each must be declared (a model of the providers file,
 * one of `ALLOWED_MODELS`, or the default model). Each problem names the agent, the model, the declared
 * choices and where to declare it.
 */
export function undeclaredModels(
  agent: { name: string; model?: string | undefined; fallback?: readonly string[] | undefined },
  where: { declared: ReadonlySet<string>; defaultModel: string; providersFile?: string; agentsFile?: string },
): string[] {
  const choices = [...new Set([where.defaultModel, ...where.declared])].join(', ');
  const declareIn = where.providersFile
    ? `declare it under a provider's models in ${where.providersFile}`
    : 'declare it in a providers file (PROVIDERS_FILE, or providers.yaml beside the agents file)';
  const inFile = where.agentsFile ? `${where.agentsFile}: ` : '';
  return [
    ...(agent.model === undefined ? [] : [['model', agent.model] as const]),
    ...(agent.fallback ?? []).map((m) => ['fallback', m] as const),
  ].flatMap(([field, m]) =>
    m === where.defaultModel || where.declared.has(m)
      ? []
      : [
          `${inFile}agent "${agent.name}": ${field} "${m}" is not declared; declared: ${choices}; ${declareIn}, or add it to ALLOWED_MODELS for the default provider`,
        ],
  );
}
