import AjvModule from 'ajv';
import {
  DEFAULT_BREAKER_FAILURE_THRESHOLD,
  DEFAULT_BREAKER_RESET_TIMEOUT_MS,
  DEFAULT_EXECUTOR_CONCURRENCY,
  DEFAULT_EXECUTOR_METRICS_PORT,
  DEFAULT_LOG_LEVEL,
  DEFAULT_OUTPUTS_DIR,
  DEFAULT_REDIS_URL,
  DEFAULT_SHUTDOWN_GRACE_MS,
} from '../constants.js';
import * as C from '../constants.js';
import {
  AgentReachError,
  DEFAULT_KEY_PREFIX,
  NAME_PATTERN,
  redisNodeUrls,
  TENANT_PATTERN,
} from '@agent-reach/protocol';

const Ajv = AjvModule.default;

/** Process configuration, resolved from the environment once and frozen. */
export interface AgentReachConfig {
  /** One Redis URL, or a Redis Cluster's startup nodes as comma-separated URLs (`REDIS_CLUSTER_NODES` wins). */
  readonly redisUrl: string;
  /** Connect to a Redis Cluster: set by `REDIS_CLUSTER=1`, `REDIS_CLUSTER_NODES`, or a URL listing several nodes. */
  readonly redisCluster: boolean;
  readonly keyPrefix: string;
  readonly logLevel: string;
  readonly agentsFile: string;
  /** The workflows file; unset: `workflows.yaml` beside the agents file, when there is one. */
  readonly workflowsFile: string | undefined;
  /** The model providers file; unset: `providers.yaml` beside the agents file, when there is one. */
  readonly providersFile?: string | undefined;
  readonly outputsDir: string;
  /** Address the executor's and scheduler's `/metrics` servers listen on (`0.0.0.0` in containers). */
  readonly metricsHost: string;
  readonly executor: {
    readonly concurrency: number;
    /** Tool groups whose queues to serve; unset means every group of the registry. */
    readonly groups: readonly string[] | undefined;
    /** Port of `/metrics`; 0 picks a free port (logged at start). */
    readonly metricsPort: number;
    readonly shutdownGraceMs: number;
    readonly breakerFailureThreshold: number;
    readonly breakerResetTimeoutMs: number;
  };
  readonly scheduler: {
    /** Runs in flight per scheduler process. */
    readonly concurrency: number;
    /** Port of the scheduler's `/metrics`; 0 picks a free port. */
    readonly metricsPort: number;
    readonly lockDurationMs: number;
    readonly stalledIntervalMs: number;
    readonly approvalTimeoutMs: number;
    readonly runRetentionS: number;
    readonly runRetentionCount: number;
    readonly shutdownGraceMs: number;
    readonly compactionThresholdTokens: number;
    readonly maxOutputTokens: number;
    readonly llmTimeoutMs: number;
    readonly llmMaxRetries: number;
    /** Ask model turns streamed and publish their text live (`LLM_STREAM`, default true). */
    readonly llmStream: boolean;
    /**
     * How checkpoints store a run's state (`CHECKPOINT_FORMAT`): `delta` (default), or `whole`, the state
     * whole at every checkpoint and tool messages whole, as the release before deltas wrote records.
     */
    readonly checkpointFormat: 'delta' | 'whole';
    /** How often the queue sampler leader samples queue depths, in ms. */
    readonly queueSampleIntervalMs: number;
    /** How long a tool call no executor has started may wait (republished) before it is `unavailable`, in ms. */
    readonly toolStartWaitMs: number;
    /** Tokens a run may use, for agents that set no `max_tokens`. */
    readonly runTokenBudget: number;
    /** Wall-clock budget of a run, in ms, for agents that set no `max_wall_time_ms`. */
    readonly runDeadlineMs: number;
    /** Answers missing a run's output schema sent back to the model, for agents without `output_retries`. */
    readonly outputRetries: number;
  };
  /** The HTTP API; a scheduler serves it only when `keys` has at least one key. */
  readonly api: {
    readonly keys: ReadonlyArray<{
      readonly name: string;
      readonly key: string;
      readonly agents?: readonly string[];
      /** The tenants the key sees (it creates in the first); absent: `default` only. */
      readonly tenants?: readonly string[];
      /** The key may start runs with a variant; absent: a key without `agents` may, a limited key may not. */
      readonly variants?: boolean;
    }>;
    readonly port: number;
    readonly host: string;
    readonly openHealth: boolean;
    readonly openMetrics: boolean;
    readonly rateLimitPerMinute: number;
    readonly bodyLimitBytes: number;
    readonly trustProxy: boolean;
    /**
     * Models a request may name in `model` (each one is a metric series and a cached client). Default:
     * the configured model (`OPENAI_MODEL`, else the default model) only.
     */
    readonly allowedModels: readonly string[];
    /** Largest run input, in tokens (inputs are capped by characters first). */
    readonly maxInputTokens: number;
    /** How long a request waits on one Redis command before answering 503, in ms. */
    readonly redisTimeoutMs: number;
  };
  /** Quotas of tenants (`TENANT_QUOTAS`); a tenant without an entry has no limit. */
  readonly tenantQuotas: ReadonlyArray<{
    readonly tenant: string;
    /** Runs of the tenant not yet ended (queued, running, parked) at most; new ones are refused with 429. */
    readonly maxRunsInFlight?: number;
    /** Tokens (prompt + completion) the tenant's runs may use per UTC day; past it, new runs get 429. */
    readonly maxTokensPerDay?: number;
  }>;
  /** The run archive in PostgreSQL; off (Redis only, as before) unless `databaseUrl` is set. */
  readonly archive: {
    /** `DATABASE_URL`: a `postgres://` URL; unset, finished runs stay in Redis for `runRetentionS`. */
    readonly databaseUrl: string | undefined;
    /** How long Redis keeps a finished run once the archive has it, in s. */
    readonly archivedRunRetentionS: number;
    /** How many days the archive keeps runs (whole daily partitions are dropped). */
    readonly retentionDays: number;
    /** Runs an archiver takes from the outbox per batch. */
    readonly batchSize: number;
    /** How long a claimed, unacknowledged batch stays hidden from other archivers, in ms. */
    readonly visibilityTimeoutMs: number;
    /** Port of the archiver's `/metrics`; 0 picks a free port. */
    readonly metricsPort: number;
  };
  readonly llm: {
    readonly apiKey: string | undefined;
    readonly baseUrl: string | undefined;
    readonly model: string | undefined;
  };
}

/** Which environment variable feeds which config path. */
const ENV_MAP: ReadonlyArray<readonly [string, string]> = [
  ['REDIS_URL', 'redisUrl'],
  ['REDIS_CLUSTER_NODES', 'redisUrl'],
  ['REDIS_CLUSTER', 'redisCluster'],
  ['AR_KEY_PREFIX', 'keyPrefix'],
  ['LOG_LEVEL', 'logLevel'],
  ['AGENTS_FILE', 'agentsFile'],
  ['WORKFLOWS_FILE', 'workflowsFile'],
  ['PROVIDERS_FILE', 'providersFile'],
  ['OUTPUTS_DIR', 'outputsDir'],
  ['METRICS_HOST', 'metricsHost'],
  ['EXECUTOR_CONCURRENCY', 'executor.concurrency'],
  ['EXECUTOR_GROUPS', 'executor.groups'],
  ['EXECUTOR_METRICS_PORT', 'executor.metricsPort'],
  ['SHUTDOWN_GRACE_MS', 'executor.shutdownGraceMs'],
  ['BREAKER_FAILURE_THRESHOLD', 'executor.breakerFailureThreshold'],
  ['BREAKER_RESET_TIMEOUT_MS', 'executor.breakerResetTimeoutMs'],
  ['SCHEDULER_CONCURRENCY', 'scheduler.concurrency'],
  ['SCHEDULER_METRICS_PORT', 'scheduler.metricsPort'],
  ['RUN_LOCK_DURATION_MS', 'scheduler.lockDurationMs'],
  ['RUN_STALLED_INTERVAL_MS', 'scheduler.stalledIntervalMs'],
  ['APPROVAL_TIMEOUT_MS', 'scheduler.approvalTimeoutMs'],
  ['RUN_RETENTION_S', 'scheduler.runRetentionS'],
  ['RUN_RETENTION_COUNT', 'scheduler.runRetentionCount'],
  ['SCHEDULER_SHUTDOWN_GRACE_MS', 'scheduler.shutdownGraceMs'],
  ['COMPACTION_THRESHOLD_TOKENS', 'scheduler.compactionThresholdTokens'],
  ['MAX_OUTPUT_TOKENS', 'scheduler.maxOutputTokens'],
  ['LLM_TIMEOUT_MS', 'scheduler.llmTimeoutMs'],
  ['LLM_MAX_RETRIES', 'scheduler.llmMaxRetries'],
  ['LLM_STREAM', 'scheduler.llmStream'],
  ['CHECKPOINT_FORMAT', 'scheduler.checkpointFormat'],
  ['QUEUE_SAMPLE_INTERVAL_MS', 'scheduler.queueSampleIntervalMs'],
  ['TOOL_START_WAIT_MS', 'scheduler.toolStartWaitMs'],
  ['RUN_TOKEN_BUDGET', 'scheduler.runTokenBudget'],
  ['RUN_DEADLINE_MS', 'scheduler.runDeadlineMs'],
  ['OUTPUT_RETRIES', 'scheduler.outputRetries'],
  ['API_KEYS', 'api.keys'],
  ['API_PORT', 'api.port'],
  ['API_HOST', 'api.host'],
  ['API_OPEN_HEALTH', 'api.openHealth'],
  ['API_OPEN_METRICS', 'api.openMetrics'],
  ['API_RATE_LIMIT_PER_MINUTE', 'api.rateLimitPerMinute'],
  ['API_BODY_LIMIT_BYTES', 'api.bodyLimitBytes'],
  ['API_TRUST_PROXY', 'api.trustProxy'],
  ['ALLOWED_MODELS', 'api.allowedModels'],
  ['API_MAX_INPUT_TOKENS', 'api.maxInputTokens'],
  ['API_REDIS_TIMEOUT_MS', 'api.redisTimeoutMs'],
  ['TENANT_QUOTAS', 'tenantQuotas'],
  ['DATABASE_URL', 'archive.databaseUrl'],
  ['ARCHIVED_RUN_RETENTION_S', 'archive.archivedRunRetentionS'],
  ['ARCHIVE_RETENTION_DAYS', 'archive.retentionDays'],
  ['ARCHIVE_BATCH_SIZE', 'archive.batchSize'],
  ['ARCHIVE_VISIBILITY_TIMEOUT_MS', 'archive.visibilityTimeoutMs'],
  ['ARCHIVER_METRICS_PORT', 'archive.metricsPort'],
  ['OPENAI_API_KEY', 'llm.apiKey'],
  ['OPENAI_BASE_URL', 'llm.baseUrl'],
  ['OPENAI_MODEL', 'llm.model'],
];

/** One `redis://` (or `rediss://`) URL, or several separated by commas. */
const REDIS_URLS_PATTERN = '^rediss?://[^,]+(,\\s*rediss?://[^,]+)*$';

const schema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    redisUrl: { type: 'string', pattern: REDIS_URLS_PATTERN, default: DEFAULT_REDIS_URL },
    redisCluster: { type: 'boolean', default: false },
    keyPrefix: { type: 'string', pattern: '^[a-zA-Z0-9_-]{1,32}$', default: DEFAULT_KEY_PREFIX },
    logLevel: {
      type: 'string',
      enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
      default: DEFAULT_LOG_LEVEL,
    },
    agentsFile: { type: 'string', minLength: 1, default: 'config/agents.yaml' },
    workflowsFile: { type: 'string', minLength: 1 },
    providersFile: { type: 'string', minLength: 1 },
    metricsHost: { type: 'string', minLength: 1, default: C.DEFAULT_METRICS_HOST },
    outputsDir: { type: 'string', minLength: 1, default: DEFAULT_OUTPUTS_DIR },
    executor: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        concurrency: { type: 'integer', minimum: 1, maximum: 10000, default: DEFAULT_EXECUTOR_CONCURRENCY },
        groups: {
          type: 'array',
          items: { type: 'string', pattern: '^[a-z0-9][a-z0-9_-]{0,39}$' },
          minItems: 1,
        },
        metricsPort: { type: 'integer', minimum: 0, maximum: 65535, default: DEFAULT_EXECUTOR_METRICS_PORT },
        shutdownGraceMs: { type: 'integer', minimum: 0, default: DEFAULT_SHUTDOWN_GRACE_MS },
        breakerFailureThreshold: { type: 'integer', minimum: 1, default: DEFAULT_BREAKER_FAILURE_THRESHOLD },
        breakerResetTimeoutMs: { type: 'integer', minimum: 1, default: DEFAULT_BREAKER_RESET_TIMEOUT_MS },
      },
    },
    scheduler: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        concurrency: {
          type: 'integer',
          minimum: 1,
          maximum: 10000,
          default: C.DEFAULT_SCHEDULER_CONCURRENCY,
        },
        metricsPort: {
          type: 'integer',
          minimum: 0,
          maximum: 65535,
          default: C.DEFAULT_SCHEDULER_METRICS_PORT,
        },
        lockDurationMs: { type: 'integer', minimum: 100, default: C.DEFAULT_RUN_LOCK_DURATION_MS },
        stalledIntervalMs: { type: 'integer', minimum: 100, default: C.DEFAULT_RUN_STALLED_INTERVAL_MS },
        approvalTimeoutMs: { type: 'integer', minimum: 1, default: C.DEFAULT_APPROVAL_TIMEOUT_MS },
        runRetentionS: { type: 'integer', minimum: 1, default: C.DEFAULT_RUN_RETENTION_S },
        runRetentionCount: { type: 'integer', minimum: 1, default: C.DEFAULT_RUN_RETENTION_COUNT },
        shutdownGraceMs: { type: 'integer', minimum: 0, default: C.DEFAULT_SHUTDOWN_GRACE_MS },
        compactionThresholdTokens: {
          type: 'integer',
          minimum: 500,
          default: C.DEFAULT_COMPACTION_THRESHOLD_TOKENS,
        },
        maxOutputTokens: { type: 'integer', minimum: 1, default: C.DEFAULT_MAX_OUTPUT_TOKENS },
        llmTimeoutMs: { type: 'integer', minimum: 1, default: C.DEFAULT_LLM_TIMEOUT_MS },
        llmMaxRetries: { type: 'integer', minimum: 0, maximum: 20, default: C.DEFAULT_LLM_MAX_RETRIES },
        llmStream: { type: 'boolean', default: C.DEFAULT_LLM_STREAM },
        checkpointFormat: { type: 'string', enum: ['delta', 'whole'], default: 'delta' },
        queueSampleIntervalMs: {
          type: 'integer',
          minimum: 100,
          default: C.DEFAULT_QUEUE_SAMPLE_INTERVAL_MS,
        },
        toolStartWaitMs: { type: 'integer', minimum: 0, default: C.CALL_START_WAIT_MS },
        runTokenBudget: { type: 'integer', minimum: 100, default: C.DEFAULT_RUN_TOKEN_BUDGET },
        runDeadlineMs: { type: 'integer', minimum: 1000, default: C.DEFAULT_RUN_DEADLINE_MS },
        outputRetries: { type: 'integer', minimum: 0, maximum: 10, default: C.DEFAULT_OUTPUT_RETRIES },
      },
    },
    api: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        keys: {
          type: 'array',
          default: [],
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['name', 'key'],
            properties: {
              name: { type: 'string', pattern: '^[A-Za-z0-9_.@-]{1,64}$' },
              key: { type: 'string', pattern: '^[A-Za-z0-9_.~+/=-]{16,256}$' },
              agents: { type: 'array', items: { type: 'string', pattern: NAME_PATTERN.source } },
              tenants: {
                type: 'array',
                minItems: 1,
                maxItems: 100,
                items: { type: 'string', pattern: TENANT_PATTERN.source },
              },
              variants: { type: 'boolean' },
            },
          },
        },
        port: { type: 'integer', minimum: 0, maximum: 65535, default: C.DEFAULT_API_PORT },
        host: { type: 'string', minLength: 1, default: C.DEFAULT_API_HOST },
        openHealth: { type: 'boolean', default: true },
        openMetrics: { type: 'boolean', default: false },
        rateLimitPerMinute: { type: 'integer', minimum: 1, default: C.DEFAULT_API_RATE_LIMIT_PER_MINUTE },
        bodyLimitBytes: {
          type: 'integer',
          minimum: 1024,
          maximum: 100 * 1024 * 1024,
          default: C.DEFAULT_API_BODY_LIMIT_BYTES,
        },
        trustProxy: { type: 'boolean', default: false },
        allowedModels: {
          type: 'array',
          minItems: 1,
          maxItems: 100,
          items: { type: 'string', pattern: '^[A-Za-z0-9_.:/@+-]{1,200}$' },
        },
        maxInputTokens: {
          type: 'integer',
          minimum: 1,
          default: C.DEFAULT_API_MAX_INPUT_TOKENS,
        },
        redisTimeoutMs: { type: 'integer', minimum: 10, default: C.DEFAULT_API_REDIS_TIMEOUT_MS },
      },
    },
    tenantQuotas: {
      type: 'array',
      default: [],
      maxItems: 1000,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['tenant'],
        properties: {
          tenant: { type: 'string', pattern: TENANT_PATTERN.source },
          maxRunsInFlight: { type: 'integer', minimum: 1 },
          maxTokensPerDay: { type: 'integer', minimum: 1 },
        },
      },
    },
    archive: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        databaseUrl: { type: 'string', pattern: '^postgres(ql)?://' },
        archivedRunRetentionS: { type: 'integer', minimum: 1, default: C.DEFAULT_ARCHIVED_RUN_RETENTION_S },
        retentionDays: {
          type: 'integer',
          minimum: 1,
          maximum: 36500,
          default: C.DEFAULT_ARCHIVE_RETENTION_DAYS,
        },
        batchSize: { type: 'integer', minimum: 1, maximum: 10000, default: C.DEFAULT_ARCHIVE_BATCH_SIZE },
        visibilityTimeoutMs: {
          type: 'integer',
          minimum: 100,
          default: C.DEFAULT_ARCHIVE_VISIBILITY_TIMEOUT_MS,
        },
        metricsPort: {
          type: 'integer',
          minimum: 0,
          maximum: 65535,
          default: C.DEFAULT_ARCHIVER_METRICS_PORT,
        },
      },
    },
    llm: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        apiKey: { type: 'string', minLength: 1 },
        baseUrl: { type: 'string', pattern: '^https?://' },
        model: { type: 'string', minLength: 1 },
      },
    },
  },
} as const;

// Environment values are strings: coercing them to the schema's types is the point here (never for tool args).
const validateConfig = new Ajv({
  allErrors: true,
  useDefaults: true,
  coerceTypes: 'array',
  strict: true,
}).compile(schema);

/** The spellings a boolean setting accepts, compared without case. */
const BOOLEAN_SPELLINGS = new Map([
  ...['1', 'true', 'yes', 'on'].map((v) => [v, true] as const),
  ...['0', 'false', 'no', 'off'].map((v) => [v, false] as const),
]);

/** Whether the schema declares the setting at `path` (`api.openHealth`) a boolean. */
function isBooleanSetting(path: string): boolean {
  let node: { type?: string; properties?: Record<string, unknown> } | undefined = schema;
  for (const part of path.split('.')) node = node?.properties?.[part] as typeof node;
  return node?.type === 'boolean';
}

/**
 * Reads the configuration from an environment (only `main.ts` files pass `process.env`), applies defaults,
 * reports every problem at once with the variable's name, and returns a frozen object.
 */
export function loadConfig(env: Record<string, string | undefined>): AgentReachConfig {
  const raw: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const [name, path] of ENV_MAP) {
    const value = env[name];
    if (value === undefined || value === '') continue;
    if (isBooleanSetting(path)) {
      const flag = BOOLEAN_SPELLINGS.get(value.trim().toLowerCase());
      if (flag === undefined)
        problems.push(
          `${name} must be one of 1/0, true/false, yes/no, on/off (got ${JSON.stringify(value)})`,
        );
      else setPath(raw, path, flag);
      continue;
    }
    setPath(
      raw,
      path,
      path === 'executor.groups' || path === 'api.allowedModels'
        ? value
            .split(',')
            .map((s) => s.trim())
            .filter(Boolean)
        : path === 'api.keys'
          ? parseApiKeys(value)
          : path === 'tenantQuotas'
            ? parseTenantQuotas(value)
            : value,
    );
  }
  markVariantKeys(raw, env.API_VARIANT_KEYS, problems);
  problems.push(...repeatedKeyNames(raw));
  if (!validateConfig(raw) || problems.length > 0) {
    // A path fed by two variables is reported under the one that is set.
    const byPath = new Map<string, string>();
    for (const [name, path] of ENV_MAP) {
      const key = `/${path.replace('.', '/')}`;
      if (!byPath.has(key) || env[name]) byPath.set(key, name);
    }
    const details = [
      ...problems,
      ...(validateConfig.errors ?? []).map((e) => {
        // An item's problem is reported under its list's variable (`/api/keys/0/key` → API_KEYS).
        const path = e.instancePath.replace(/\/\d+(\/.*)?$/, '');
        const name = byPath.get(path) ?? path;
        return `${name} ${e.message ?? 'is invalid'}`;
      }),
    ];
    throw new AgentReachError('CONFIG_INVALID', `invalid configuration: ${details.join('; ')}`, { details });
  }
  // A list of nodes, or nodes named as such, is a cluster whatever REDIS_CLUSTER says.
  if (env.REDIS_CLUSTER_NODES || redisNodeUrls(raw.redisUrl as string).length > 1) raw.redisCluster = true;
  const api = raw.api as { allowedModels?: string[] };
  const llm = raw.llm as { model?: string };
  // Without a list, callers may name only the model the scheduler would use anyway.
  api.allowedModels ??= [llm.model ?? C.DEFAULT_LLM_MODEL];
  return deepFreeze(raw) as unknown as AgentReachConfig;
}

/**
 * `API_KEYS`: comma-separated `name:key` entries, a limited key adding `:agent|agent…`, a key of other
 * tenants than `default` adding `:tenant|tenant…` after its agents (`*`: every agent), e.g.
 * `ops:3f9c…,weather-desk:8b1e…:weather_only,acme-ops:5d0a…:*:acme`. Malformed entries are kept so the
 * schema reports them.
 */
function parseApiKeys(
  value: string,
): Array<{ name: string; key: string; agents?: string[]; tenants?: string[] }> {
  return value
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean)
    .map((entry) => {
      const [name = '', key = '', agents, ...rest] = entry.split(':');
      const tenants = rest.length > 0 ? rest.join(':').split('|').filter(Boolean) : undefined;
      return {
        name,
        key,
        ...(agents === undefined || agents === '*' ? {} : { agents: agents.split('|').filter(Boolean) }),
        ...(tenants ? { tenants } : {}),
      };
    });
}

/**
 * `API_VARIANT_KEYS`: comma-separated names of the API keys that may start runs with a variant; when set,
 * every other key may not (unset: keys without an agents limit may). A name no key has is a problem.
 */
function markVariantKeys(raw: Record<string, unknown>, value: string | undefined, problems: string[]): void {
  if (value === undefined) return;
  const names = new Set(
    value
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  );
  const keys = ((raw.api as { keys?: unknown } | undefined)?.keys ?? []) as Array<Record<string, unknown>>;
  const known = new Set(keys.map((k) => k.name));
  for (const name of names)
    if (!known.has(name)) problems.push(`API_VARIANT_KEYS names "${name}", which is not a key of API_KEYS`);
  for (const k of keys) k.variants = names.has(String(k.name));
}

/**
 * Names `API_KEYS` gives twice: a key's name owns its callbacks (their signing secret in `CALLBACK_SECRETS`
 * and their dead letters) and marks it in `API_VARIANT_KEYS`, so two keys of one name (of two tenants,
 * say) would share them.
 */
function repeatedKeyNames(raw: Record<string, unknown>): string[] {
  const keys = ((raw.api as { keys?: unknown } | undefined)?.keys ?? []) as Array<Record<string, unknown>>;
  const seen = new Set<unknown>();
  const problems: string[] = [];
  for (const k of keys) {
    if (seen.has(k.name))
      problems.push(
        `API_KEYS names "${String(k.name)}" twice: each key needs a name of its own (its callbacks, their signing secret and dead letters belong to it by name)`,
      );
    seen.add(k.name);
  }
  return problems;
}

/**
 * `TENANT_QUOTAS`: comma-separated `tenant:runs=N:tokens=N` entries (either limit may be left out), e.g.
 * `acme:runs=20:tokens=2000000,beta:runs=5`. Unknown or malformed limits are kept for the schema to report.
 */
function parseTenantQuotas(value: string): Array<Record<string, unknown>> {
  const names: Record<string, string> = { runs: 'maxRunsInFlight', tokens: 'maxTokensPerDay' };
  return value
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean)
    .map((entry) => {
      const [tenant = '', ...limits] = entry.split(':');
      const quota: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
      quota.tenant = tenant;
      for (const limit of limits) {
        const [name = '', n = ''] = limit.split('=');
        quota[Object.hasOwn(names, name) ? (names[name] as string) : name] = /^\d+$/.test(n) ? Number(n) : n;
      }
      return { ...quota };
    });
}

function setPath(target: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.split('.');
  let node = target;
  for (const part of parts.slice(0, -1)) {
    node[part] ??= {};
    node = node[part] as Record<string, unknown>;
  }
  node[parts.at(-1) as string] = value;
}

export function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}
