import { DEFAULT_TENANT, NAME_PATTERN, RUN_ID_PATTERN, TENANT_PATTERN, TRACEPARENT_PATTERN } from './ids.js';
import { renameVersion1Fields, WIRE_VERSION } from './version.js';
import { RUN_VARIANT_SCHEMA, type RunVariant } from './variant.js';
import { PARENT_LINK_SCHEMA, type ParentLink } from './parent-link.js';

/** Events a callback may ask for (see docs/callbacks.md). */
export const CALLBACK_EVENTS = ['finished', 'awaiting_approval', 'workflow_finished'] as const;
export type CallbackEventName = (typeof CALLBACK_EVENTS)[number];
/** Longest callback URL accepted, in characters. */
export const MAX_CALLBACK_URL_CHARS = 2048;

/** Where a run's events are delivered: an http(s) URL, and which events (default: `finished`). */
export interface RunCallback {
  url: string;
  events?: CallbackEventName[];
}

/** JSON Schema of {@link RunCallback}. */
export const RUN_CALLBACK_SCHEMA = {
  type: 'object',
  required: ['url'],
  additionalProperties: false,
  properties: {
    url: { type: 'string', minLength: 8, maxLength: MAX_CALLBACK_URL_CHARS, pattern: '^https?://' },
    events: {
      type: 'array',
      items: { type: 'string', enum: [...CALLBACK_EVENTS] },
      minItems: 1,
      uniqueItems: true,
    },
  },
} as const;

/**
 * Data of a job on the `agent-runs` queue: what any service (in any language, with its own BullMQ
 * client) adds to start a run. The job id must be the run id.
 */
export interface RunJobData {
  /** Wire version: 2. Version 1 (or no `v`) named `run_id`, `session_id`, `trace_id` in camelCase. */
  v: typeof WIRE_VERSION;
  run_id: string;
  agent: string;
  /**
   * The agent in charge at the run's start, when not `agent`: a session's run continues with the agent a
   * handoff left it with (see docs/handoffs.md). An undeclared one is ignored.
   */
  in_charge?: string;
  input: string;
  session_id?: string;
  /** The model to use instead of the scheduler's default. */
  model?: string;
  trace_id?: string;
  /**
   * The caller's span, as a W3C `traceparent`: the run's root span becomes its child, and the run's trace
   * is the caller's (its trace id must then be `trace_id`).
   */
  trace_parent?: string;
  metadata?: Record<string, string>;
  /** Epoch ms the run was created (by the API or the library): the run keeps it as its `createdAt`. */
  created_at?: number;
  /** The tenant the run belongs to; absent: `default`. Only keys of that tenant see the run. */
  tenant?: string;
  /**
   * JSON Schema the run's final answer must match (instead of its agent's `output_schema`): the parsed
   * answer becomes the run's `output`. A schema the scheduler cannot use ends the run `invalid_job`.
   */
  output_schema?: Record<string, unknown>;
  /** The name of the API key that started the run (set by the API): its cost is counted under it. */
  key?: string;
  /**
   * Tools that require a grant which this run may call (beside those its session was granted). The
   * executor still runs only tools the agent reaches.
   */
  grants?: string[];
  /** Signed deliveries of the run's events to a URL (see docs/callbacks.md). */
  callback?: RunCallback;
  /** Overrides of the agent's configuration for this run only (see docs/api.md#variants). */
  variant?: RunVariant;
  /** Set on a child run (an agent called as a tool): the parent run and call it answers (docs/agent-tools.md). */
  parent?: ParentLink;
}

/** JSON Schema of `RunJobData`, as docs/api.md documents it for services in other languages. */
export const RUN_JOB_SCHEMA = {
  type: 'object',
  required: ['v', 'run_id', 'agent', 'input'],
  additionalProperties: false,
  properties: {
    v: { const: WIRE_VERSION },
    run_id: { type: 'string', pattern: RUN_ID_PATTERN.source },
    agent: { type: 'string', minLength: 1 },
    in_charge: { type: 'string', minLength: 1 },
    input: { type: 'string', minLength: 1, pattern: '\\S' },
    session_id: { type: 'string', minLength: 1 },
    model: { type: 'string', minLength: 1 },
    trace_id: { type: 'string', minLength: 1 },
    trace_parent: { type: 'string', pattern: TRACEPARENT_PATTERN.source },
    metadata: { type: 'object', additionalProperties: { type: 'string' } },
    created_at: { type: 'integer', minimum: 0 },
    tenant: { type: 'string', pattern: TENANT_PATTERN.source },
    output_schema: { type: 'object' },
    key: { type: 'string', minLength: 1, maxLength: 64 },
    grants: {
      type: 'array',
      items: { type: 'string', pattern: NAME_PATTERN.source },
      uniqueItems: true,
      maxItems: 200,
    },
    callback: RUN_CALLBACK_SCHEMA,
    variant: RUN_VARIANT_SCHEMA,
    parent: PARENT_LINK_SCHEMA,
  },
} as const;

/** The data of a run's job, with its version and without the optional fields left unset. */
export function runJob(
  fields: Pick<RunJobData, 'run_id' | 'agent' | 'input'> & {
    [
      K in
        | 'session_id'
        | 'model'
        | 'trace_id'
        | 'trace_parent'
        | 'metadata'
        | 'created_at'
        | 'tenant'
        | 'output_schema'
        | 'key'
        | 'grants'
        | 'callback'
        | 'in_charge'
        | 'variant'
        | 'parent'
    ]?: RunJobData[K] | undefined;
  },
): RunJobData {
  return {
    v: WIRE_VERSION,
    run_id: fields.run_id,
    agent: fields.agent,
    input: fields.input,
    ...(fields.session_id ? { session_id: fields.session_id } : {}),
    ...(fields.model ? { model: fields.model } : {}),
    ...(fields.trace_id ? { trace_id: fields.trace_id } : {}),
    ...(fields.trace_parent ? { trace_parent: fields.trace_parent } : {}),
    ...(fields.metadata ? { metadata: fields.metadata } : {}),
    ...(fields.created_at !== undefined ? { created_at: fields.created_at } : {}),
    // The default tenant is left unsaid, so jobs of a configuration without tenants stay as they were.
    ...(fields.tenant && fields.tenant !== DEFAULT_TENANT ? { tenant: fields.tenant } : {}),
    ...(fields.output_schema ? { output_schema: fields.output_schema } : {}),
    ...(fields.key ? { key: fields.key } : {}),
    ...(fields.grants && fields.grants.length > 0 ? { grants: fields.grants } : {}),
    ...(fields.callback ? { callback: fields.callback } : {}),
    ...(fields.in_charge && fields.in_charge !== fields.agent ? { in_charge: fields.in_charge } : {}),
    ...(fields.variant ? { variant: fields.variant } : {}),
    ...(fields.parent ? { parent: fields.parent } : {}),
  };
}

/** Version-1 field names of a run job, and their names since version 2. */
const RUN_JOB_V1_FIELDS = { runId: 'run_id', sessionId: 'session_id', traceId: 'trace_id' } as const;

/**
 * A run job's data in this release's shape, to be checked against {@link RUN_JOB_SCHEMA}: a version-1 job
 * (camelCase, with or without `v`) is renamed field by field and given version 2; anything else is returned
 * as it is (the schema then names what is wrong, an unknown version included).
 */
export function upgradeRunJob(data: unknown): unknown {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return data;
  const d = data as Record<string, unknown>;
  if (d.v !== undefined && d.v !== 1) return data;
  return renameVersion1Fields(d, RUN_JOB_V1_FIELDS);
}
