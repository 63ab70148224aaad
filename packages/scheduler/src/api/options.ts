import type { Counter, Registry } from 'prom-client';
import type { Keys } from '@agent-reach/protocol';
import type { AgentsFile, Logger, RedisClient } from '@agent-reach/shared';
import type { AgentRunner } from '../runs/agent-runner.js';
import type { RunControl } from '../runs/run-control.js';
import type { SessionStore } from '../runs/sessions.js';
import type { WorkflowControl } from '../workflows/workflow-control.js';
import type { CallbackConfig } from '../callbacks/callback-config.js';
import type { CallbackDeliveries } from '../callbacks/callback-deliveries.js';
import type { ApiKeyConfig, ApiKeyTable } from './auth.js';
import type { InboundEventsConfig } from '../triggers/inbound-events.js';
import { constants } from '@agent-reach/shared';
import {
  DEFAULT_API_BODY_LIMIT_BYTES,
  DEFAULT_API_MAX_INPUT_TOKENS,
  DEFAULT_API_REDIS_TIMEOUT_MS,
  DEFAULT_API_RATE_LIMIT_PER_MINUTE,
  DEFAULT_IDEMPOTENCY_TTL_S,
  DEFAULT_MAX_EVENT_STREAMS,
  DEFAULT_SSE_HEARTBEAT_MS,
} from './constants.js';
import type { IdempotencyStore } from './idempotency.js';
import type { TenantQuota, TenantQuotas } from '../runs/tenant-quotas.js';

/** What the API serves from: the scheduler's run control, sessions, tool catalog, agents and Redis. */
export interface ApiServerDeps {
  control: RunControl;
  /** Workflows of the workflows file; without it, no workflow can be started and none is found. */
  workflows?: WorkflowControl;
  sessions: SessionStore;
  /**
   * For the tool catalog (`/v1/agents`, Bull Board's tool queues), the fleet's breaker states and the
   * limits no variant may exceed (without `variantCeilings`: the defaults').
   */
  runner: Pick<AgentRunner, 'catalog' | 'breakers'> & Partial<Pick<AgentRunner, 'variantCeilings'>>;
  agents: AgentsFile;
  /** A non-blocking connection; event streams and rate limits make their own use of it (see docs/api.md). */
  redis: RedisClient;
  keys: Keys;
  /** Served at `/metrics`; without one, `/metrics` is a 404. */
  metricsRegistry?: Registry;
  logger: Logger;
  /** Callbacks: their policy (checked at the door) and delivery states; without them, a callback is a 400. */
  callbacks?: {
    config: CallbackConfig;
    deliveries: Pick<
      CallbackDeliveries,
      'deliveries' | 'callbackOf' | 'register' | 'deadLetters' | 'redeliver'
    >;
  };
  /**
   * Schedules and inbound events: whether this process fires schedules (default not), the lock of a
   * firing job and how often stalled ones are looked for (ms, default BullMQ's), the events file.
   */
  triggers?: {
    fireSchedules?: boolean;
    lockDurationMs?: number;
    stalledIntervalMs?: number;
    events?: InboundEventsConfig;
  };
}

/** Options of the API server; all optional but `apiKeys`. */
export interface ApiServerOptions {
  /** The keys accepted as `Authorization: Bearer <key>`. An empty list refuses every keyed route. */
  apiKeys: ApiKeyConfig[];
  /** `/healthz` and `/readyz` need no key. Default true. */
  openHealth?: boolean;
  /** `/metrics` needs no key. Default false. */
  openMetrics?: boolean;
  /** Requests per minute per API key (per IP without a valid key), shared by every API process. Default 600. */
  rateLimitPerMinute?: number;
  /** Largest request body, in bytes. Default 1 MiB. */
  bodyLimitBytes?: number;
  /** How long an `Idempotency-Key` is remembered, in seconds. Default 24 h. */
  idempotencyTtlS?: number;
  /** Interval of the heartbeat comments of an event stream, in ms. Default 15 000. */
  sseHeartbeatMs?: number;
  /** Event streams open at once in this process (each holds a Redis connection). Default 500. */
  maxEventStreams?: number;
  /** Serve Bull Board at `/admin/queues`. Default true. */
  board?: boolean;
  /** Bull Board may only look, not retry, remove or promote jobs. Default true. */
  boardReadOnly?: boolean;
  /** Serve the run inspector at `/ui` (login with an API key; a session cookie after). Default true. */
  ui?: boolean;
  /** Serve `/docs` (Swagger UI). `/openapi.json` is always served. Default true. */
  docs?: boolean;
  /**
   * Trust `X-Forwarded-For` from these proxies (Fastify's `trustProxy`: true, an address, a CIDR list), so
   * that requests without a valid key are rate limited per client rather than per proxy. Default false.
   */
  trustProxy?: boolean | string | string[];
  /**
   * Models a request may name in `model`; any other is a 400 MODEL_NOT_ALLOWED (every model is a metric
   * series and a cached client). A request without `model` uses the scheduler's. Default: the default
   * model (`gpt-4o-mini`) only; the scheduler passes `ALLOWED_MODELS`.
   */
  allowedModels?: readonly string[] | ReadonlySet<string>;
  /** Largest run input, in tokens (o200k), checked after the character limit. Default 32 000. */
  maxInputTokens?: number;
  /**
   * How long a request waits on Redis calls made on connections that queue through an outage (the tool
   * catalog, breakers) before answering 503 UNAVAILABLE, in ms. Default 3000. The API's own connection
   * should fail fast too (`commandTimeout`, no offline queue), as the scheduler's is.
   */
  redisTimeoutMs?: number;
  /**
   * Quotas of tenants (runs in flight, tokens per UTC day), enforced when a run or workflow is started
   * (429 QUOTA_EXCEEDED). A tenant without an entry has no limit. Default: none.
   */
  tenantQuotas?: ReadonlyArray<{ tenant: string } & TenantQuota>;
}

export type ResolvedApiOptions = Required<
  Omit<ApiServerOptions, 'apiKeys' | 'allowedModels' | 'tenantQuotas'>
> & {
  readonly allowedModels: ReadonlySet<string>;
  /** Quotas by tenant. */
  readonly tenantQuotas: ReadonlyMap<string, TenantQuota>;
};

/** Every default of the API in one place: routes read the resolved options only. */
export function resolveApiOptions(o: ApiServerOptions): ResolvedApiOptions {
  return {
    openHealth: o.openHealth ?? true,
    openMetrics: o.openMetrics ?? false,
    rateLimitPerMinute: o.rateLimitPerMinute ?? DEFAULT_API_RATE_LIMIT_PER_MINUTE,
    bodyLimitBytes: o.bodyLimitBytes ?? DEFAULT_API_BODY_LIMIT_BYTES,
    idempotencyTtlS: o.idempotencyTtlS ?? DEFAULT_IDEMPOTENCY_TTL_S,
    sseHeartbeatMs: o.sseHeartbeatMs ?? DEFAULT_SSE_HEARTBEAT_MS,
    maxEventStreams: o.maxEventStreams ?? DEFAULT_MAX_EVENT_STREAMS,
    board: o.board ?? true,
    boardReadOnly: o.boardReadOnly ?? true,
    docs: o.docs ?? true,
    ui: o.ui ?? true,
    trustProxy: o.trustProxy ?? false,
    // A set is kept as given: its holder (the model providers) refills it when a version changes them.
    allowedModels:
      o.allowedModels instanceof Set
        ? o.allowedModels
        : new Set(o.allowedModels ?? [constants.DEFAULT_LLM_MODEL]),
    maxInputTokens: o.maxInputTokens ?? DEFAULT_API_MAX_INPUT_TOKENS,
    redisTimeoutMs: o.redisTimeoutMs ?? DEFAULT_API_REDIS_TIMEOUT_MS,
    tenantQuotas: new Map((o.tenantQuotas ?? []).map(({ tenant, ...q }) => [tenant, q])),
  };
}

/** Everything a route module needs. */
/**
 * The quota metrics of an API server: refusals it made (tenant-admission.ts registers them with every
 * tenant's figures and limits).
 */
export interface TenantMetrics {
  refusals: Counter<'tenant' | 'quota'>;
}

export interface ApiContext {
  readonly deps: ApiServerDeps;
  readonly options: ResolvedApiOptions;
  readonly auth: ApiKeyTable;
  readonly idempotency: IdempotencyStore;
  readonly quotas: TenantQuotas;
  /** Quota metrics, when the server has a metrics registry. */
  readonly metrics?: TenantMetrics;
  readonly log: Logger;
}
