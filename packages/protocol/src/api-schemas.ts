import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { API_ERROR_CODES } from './api-errors.js';
import { NAME_PATTERN, PROTOTYPE_KEYS, RUN_ID_PATTERN, TOOL_CALL_ID_PATTERN } from './ids.js';
import { RUN_STATUSES } from './run-status.js';
import { StringEnum } from './tool.js';
import type { ToolResult } from './tool-call.js';
import { RUN_CALLBACK_SCHEMA, type RunCallback } from './run-job.js';
import { RUN_VARIANT_SCHEMA, type RunVariant } from './variant.js';

/**
 * JSON Schemas of every request part and response of the HTTP API: the server validates and serializes
 * with them and publishes them as its OpenAPI document; the client's types are their `Static` types.
 */

/** Longest `Idempotency-Key` accepted, in characters. */
export const MAX_IDEMPOTENCY_KEY_CHARS = 255;
export const DEFAULT_LIST_LIMIT = 50;
export const MAX_LIST_LIMIT = 200;
export const MAX_LIST_OFFSET = 100_000;
/** Largest run input accepted, in characters (the body limit applies as well). */
export const MAX_INPUT_CHARS = 200_000;
export const MAX_METADATA_ENTRIES = 50;
export const MAX_METADATA_VALUE_CHARS = 1000;

/** A pattern that also refuses the prototype keys (`__proto__`, …), so no id can pollute an object. */
const safePattern = (p: RegExp) => `^(?!(?:${[...PROTOTYPE_KEYS].join('|')})$)${p.source.slice(1)}`;
const ID_PATTERN = safePattern(RUN_ID_PATTERN);
const CALL_ID_PATTERN = safePattern(TOOL_CALL_ID_PATTERN);
const ID_RULE = '1-128 of A-Z a-z 0-9 _ . -, not __proto__, constructor or prototype';
const AGENT_PATTERN = NAME_PATTERN.source;
const METADATA_KEY_PATTERN = safePattern(/^[A-Za-z0-9_.:-]{1,64}$/);
export const STREAM_ID_PATTERN = /^\d{1,20}-\d{1,20}$/;

const RunStatusSchema = StringEnum(RUN_STATUSES);

const Id = (what: string) => Type.String({ pattern: ID_PATTERN, description: `${what}: ${ID_RULE}` });
const AgentName = Type.String({ pattern: AGENT_PATTERN, description: 'an agent of the agents file' });
const Grants = Type.Array(Type.String({ pattern: NAME_PATTERN.source }), {
  uniqueItems: true,
  maxItems: 200,
  description:
    "tools the run may call that require a grant (`requires_grant`); each must be one of the agent's tools. In a session they hold for the rest of the session",
});
export const Input = Type.String({
  minLength: 1,
  maxLength: MAX_INPUT_CHARS,
  pattern: '\\S',
  description: 'the task, as the user would say it',
});
const Model = Type.String({
  minLength: 1,
  maxLength: 200,
  description: 'a model of the allowed list instead of the default (400 MODEL_NOT_ALLOWED otherwise)',
});
export const Metadata = Type.Unsafe<Record<string, string>>({
  type: 'object',
  propertyNames: {
    pattern: METADATA_KEY_PATTERN,
    description: 'a metadata key: 1-64 of A-Z a-z 0-9 _ . : -, not __proto__, constructor or prototype',
  },
  additionalProperties: { type: 'string', maxLength: MAX_METADATA_VALUE_CHARS },
  maxProperties: MAX_METADATA_ENTRIES,
  description: 'caller labels kept with the run (string values)',
});
export const Millis = (description: string) => Type.Number({ description });
export const OutputSchema = Type.Unsafe<Record<string, unknown>>({
  type: 'object',
  description:
    "a JSON Schema the run's final answer must match, instead of the agent's output_schema (400 VALIDATION_FAILED naming the problem when it is not usable): the parsed answer is the run's `output`",
});

/** Where a run's events are delivered, signed (docs/callbacks.md). */
export const Callback = Type.Unsafe<RunCallback>({
  ...RUN_CALLBACK_SCHEMA,
  description:
    "signed deliveries (Standard Webhooks) of the run's events to an http(s) URL: `events` of finished, awaiting_approval, workflow_finished (default: finished). A URL that resolves to a loopback, private or link-local address is refused (400 VALIDATION_FAILED) unless the operator allows its host",
});
/** A run's variant: overrides of its agent's configuration for that run only (docs/api.md#variants). */
export const Variant = Type.Unsafe<RunVariant>({
  ...RUN_VARIANT_SCHEMA,
  description:
    "overrides of the agent's configuration for this run only: `{name, overrides}`; an unknown key, a tool the agent does not list or a merged agent the agents file would refuse is a 400 naming it; a key needs `variants` (403)",
});
/** A run's variant as shown: every override as it was sent (a loose schema, so the serializer keeps each). */
const VariantView = Type.Unsafe<RunVariant>({
  type: 'object',
  required: ['name', 'overrides'],
  properties: { name: { type: 'string' }, overrides: { type: 'object', additionalProperties: true } },
  description: 'the variant the run was started with: its configuration overrides (docs/api.md#variants)',
});
const CallbackDelivery = Type.Object({
  id: Type.String({ description: "the delivery's webhook-id: the same on every attempt, for deduplication" }),
  event: Type.String({ description: 'run.finished, run.awaiting_approval or workflow.finished' }),
  state: StringEnum(['pending', 'delivered', 'dead_lettered']),
  attempts: Type.Integer({ minimum: 0, description: 'attempts made so far' }),
  last_status: Type.Optional(Type.Integer({ description: 'HTTP status of the last attempt' })),
  last_error: Type.Optional(Type.String({ description: 'why the last attempt failed' })),
  updated_at: Millis('epoch ms of the last change'),
});
export const CallbackView = Type.Object({
  url: Type.String(),
  events: Type.Array(Type.String()),
  deliveries: Type.Array(CallbackDelivery),
});

/** The type of a run's `output` for an output schema: `Static` of a TypeBox schema, else `unknown`. */
export type OutputOf<S> = S extends TSchema ? Static<S> : unknown;

export const ErrorResponse = Type.Object(
  {
    error: Type.Object({
      code: StringEnum(API_ERROR_CODES),
      message: Type.String(),
      details: Type.Optional(Type.Array(Type.Unknown())),
    }),
  },
  { description: 'every error: a stable code, a message, sometimes details' },
);

export type ErrorResponse = Static<typeof ErrorResponse>;

export const RunParams = Type.Object({ id: Id('run id') }, { additionalProperties: false });
export const SessionParams = Type.Object({ id: Id('session id') }, { additionalProperties: false });

export const CreateRunBody = Type.Object(
  {
    agent: AgentName,
    input: Input,
    session_id: Type.Optional(Id('an existing session whose history the run continues')),
    metadata: Type.Optional(Metadata),
    model: Type.Optional(Model),
    output_schema: Type.Optional(OutputSchema),
    grants: Type.Optional(Grants),
    callback: Type.Optional(Callback),
    variant: Type.Optional(Variant),
  },
  { additionalProperties: false },
);
export type CreateRunBody = Static<typeof CreateRunBody>;

export const CreateRunHeaders = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: MAX_IDEMPOTENCY_KEY_CHARS,
      pattern: '^[\\x21-\\x7e]+$',
      description: 'the same key (per API key, 24 h) returns the same run; with another body, 409',
    }),
  ),
  traceparent: Type.Optional(
    Type.String({
      description:
        "the caller's span (W3C Trace Context): the run joins its trace and its root span is a child of it; a malformed value is ignored, as the standard asks",
    }),
  ),
});

export const MessageBody = Type.Object(
  {
    /** Absent: the session's agent, going on with the agent its last run handed off to. */
    agent: Type.Optional(AgentName),
    input: Input,
    metadata: Type.Optional(Metadata),
    model: Type.Optional(Model),
    output_schema: Type.Optional(OutputSchema),
    grants: Type.Optional(Grants),
    callback: Type.Optional(Callback),
    variant: Type.Optional(Variant),
  },
  { additionalProperties: false },
);
export type MessageBody = Static<typeof MessageBody>;

/** The latest time a JavaScript Date holds, in epoch ms: a bound past it is no time (and overflows SQL's bigint). */
const MAX_EPOCH_MS = 8_640_000_000_000_000;

export const ListRunsQuery = Type.Object(
  {
    agent: Type.Optional(AgentName),
    status: Type.Optional(RunStatusSchema),
    since: Type.Optional(
      Type.Integer({ minimum: 0, maximum: MAX_EPOCH_MS, description: 'created at or after (epoch ms)' }),
    ),
    until: Type.Optional(
      Type.Integer({ minimum: 0, maximum: MAX_EPOCH_MS, description: 'created at or before (epoch ms)' }),
    ),
    trace_id: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_.-]{1,128}$', description: 'a trace id' })),
    tool: Type.Optional(
      Type.String({ pattern: '^[A-Za-z0-9_-]{1,64}$', description: 'runs that called this tool' }),
    ),
    error_kind: Type.Optional(
      Type.String({
        pattern: '^[a-z_]{1,64}$',
        description: 'runs with a tool call that ended with this error kind',
      }),
    ),
    metadata: Type.Optional(
      Type.String({
        pattern: '^[A-Za-z0-9_.:-]{1,64}=',
        maxLength: 64 + 1 + MAX_METADATA_VALUE_CHARS,
        description: 'KEY=VALUE: runs started with this metadata pair',
      }),
    ),
    cursor: Type.Optional(
      Type.String({
        pattern: '^[A-Za-z0-9_-]{1,400}$',
        description: 'next_cursor of the previous page: pages that stay fast however many runs there are',
      }),
    ),
    limit: Type.Integer({ minimum: 1, maximum: MAX_LIST_LIMIT, default: DEFAULT_LIST_LIMIT }),
    offset: Type.Integer({
      minimum: 0,
      maximum: MAX_LIST_OFFSET,
      default: 0,
      description: 'skip this many matches (prefer cursor: an offset reads every run it skips)',
    }),
  },
  { additionalProperties: false },
);
export type ListRunsQuery = Static<typeof ListRunsQuery>;

export const EventsHeaders = Type.Object({
  'last-event-id': Type.Optional(
    Type.String({ pattern: STREAM_ID_PATTERN.source, description: 'resume after this event id' }),
  ),
});

export const DecisionBody = Type.Object(
  {
    tool_call_id: Type.String({
      pattern: CALL_ID_PATTERN,
      description: 'a tool call id: 1-64 of A-Z a-z 0-9 _ -, not __proto__, constructor or prototype',
    }),
    decision: StringEnum(['approve', 'reject']),
    reason: Type.Optional(Type.String({ maxLength: 2000 })),
    by: Type.Optional(
      Type.String({
        description:
          'refused (400 VALIDATION_FAILED): the approver recorded is always the name of the API key that decides, never text from the body',
      }),
    ),
  },
  {
    additionalProperties: false,
    description: 'the decision is recorded as made by the authenticated key (its name); `by` is refused',
  },
);
export type DecisionBody = Static<typeof DecisionBody>;

export const CreateSessionBody = Type.Object(
  {
    session_id: Type.Optional(Id('a client-chosen id; default: generated')),
    agent: Type.Optional(
      Type.String({
        pattern: AGENT_PATTERN,
        description: 'the agent whose runs the session holds; default: the agent of its first message',
      }),
    ),
    grants: Type.Optional(Grants),
  },
  { additionalProperties: false },
);

const Usage = Type.Object({
  prompt_tokens: Type.Number(),
  completion_tokens: Type.Number(),
  total_tokens: Type.Number(),
});
const Step = Type.Object({
  turn: Type.Number(),
  tool_call_id: Type.String(),
  tool: Type.String(),
  arguments: Type.String(),
  ok: Type.Boolean(),
  error_kind: Type.Optional(Type.String()),
  error_detail: Type.Optional(
    Type.String({ description: "the error's whole story (an MCP server's own error); the model read less" }),
  ),
  duration_ms: Type.Number(),
  attempts: Type.Number(),
  attempt_log: Type.Optional(
    Type.Array(
      Type.Object({
        attempt: Type.Number(),
        offset_ms: Type.Number({
          description: 'when the attempt started, in ms after the executor took the call',
        }),
        duration_ms: Type.Number(),
        outcome: Type.String({ description: 'ok, or the error kind the attempt ended with' }),
      }),
      { description: "each attempt's timing and outcome, when the executor tried more than once" },
    ),
  ),
  truncated: Type.Optional(Type.Boolean()),
  child_run_id: Type.Optional(
    Type.String({ description: 'the child run that answered the call, for a call of an agent tool' }),
  ),
  kind: Type.Optional(StringEnum(['ok', 'no_result', 'error'])),
  answered: Type.Optional(
    StringEnum(['local', 'dispatched'], {
      description: 'local: answered by the scheduler without running anything (refused, rejected)',
    }),
  ),
  executor_id: Type.Optional(Type.String({ description: 'the executor that ran the call' })),
  ref: Type.Optional(
    Type.String({ description: 'id of the full result when the model saw a shortened one' }),
  ),
  result: Type.Optional(
    Type.Unsafe<ToolResult>({
      description: 'the result exactly as the model saw it (shaped; truncated and ref kept)',
    }),
  ),
});
const Turn = Type.Object({
  turn: Type.Number(),
  model: Type.String(),
  latency_ms: Type.Number(),
  prompt_tokens: Type.Number(),
  completion_tokens: Type.Number(),
  finish_reason: Type.String(),
  tool_calls: Type.Number(),
  reasoning: Type.Optional(
    Type.String({ description: "the model's reasoning text, when the provider sent one" }),
  ),
  answered_by: Type.Optional(
    Type.String({ description: 'the declared model that answered, as provider/model (routed runs)' }),
  ),
  fallback: Type.Optional(
    Type.Array(
      Type.Object({
        model: Type.String(),
        reason: StringEnum(['breaker_open', 'failed']),
        message: Type.Optional(Type.String()),
      }),
      { description: 'models passed over before the one that answered' },
    ),
  ),
  cost: Type.Optional(Type.Number({ description: "the turn's cost from the price table" })),
});
const ModelUsageView = Type.Object({
  model: Type.String({ description: 'provider/model' }),
  turns: Type.Number(),
  prompt_tokens: Type.Number(),
  completion_tokens: Type.Number(),
  cost: Type.Optional(Type.Number()),
});
const PendingApproval = Type.Object({
  tool_call_id: Type.String(),
  tool: Type.String(),
  arguments: Type.String(),
  requested_at: Millis('epoch ms'),
  grant: Type.Optional(
    Type.Literal(true, {
      description:
        'the request asks a person to grant the tool to the run (approving grants it for the rest of the run)',
    }),
  ),
});
const GrantView = Type.Object({
  tool: Type.String(),
  by: Type.Optional(Type.String({ description: 'who approved the grant' })),
  reason: Type.Optional(Type.String()),
  granted_at: Type.Optional(Millis('epoch ms')),
  tool_call_id: Type.String({ description: 'the call whose approval request asked for the grant' }),
});

const summaryFields = {
  run_id: Type.String(),
  agent: Type.String(),
  status: RunStatusSchema,
  trace_id: Type.Optional(Type.String()),
  session_id: Type.Optional(Type.String()),
  tenant: Type.Optional(Type.String({ description: 'the tenant the run belongs to' })),
  created_at: Millis('epoch ms the run was created'),
  updated_at: Millis('epoch ms of the last checkpoint; 0 while queued'),
  iterations: Type.Number(),
  cancel_requested: Type.Boolean(),
  reason: Type.Optional(
    Type.String({
      description:
        'why the run ended, once it has: final_answer, final_answer_truncated, tasks_incomplete, max_iterations, repeat, token_budget, deadline, failed_rounds, refused, content_filter, empty_answer, output_truncated, no_tool_available, invalid_output, llm_error, internal_error, invalid_job or cancelled',
    }),
  ),
  config_version: Type.Optional(
    Type.Integer({
      minimum: 0,
      description: 'version of the fleet configuration the run started under (0: a local agents file)',
    }),
  ),
  metadata: Type.Optional(Metadata),
  tools: Type.Optional(Type.Array(Type.String(), { description: 'tools the run called' })),
  error_kinds: Type.Optional(Type.Array(Type.String(), { description: 'error kinds of its tool calls' })),
  input_preview: Type.Optional(Type.String({ description: 'the first 160 characters of its input' })),
  calls: Type.Optional(Type.Integer({ minimum: 0, description: 'tool calls it made so far' })),
  errors: Type.Optional(
    Type.Integer({ minimum: 0, description: 'its tool calls that did not succeed (refusals included)' }),
  ),
  retries: Type.Optional(
    Type.Integer({ minimum: 0, description: 'retries the executors made of its calls' }),
  ),
};
export const RunSummaryView = Type.Object(summaryFields);
export const RunView = Type.Object({
  ...summaryFields,
  input: Type.Optional(Type.String()),
  in_charge: Type.Optional(
    Type.String({
      description: 'the agent in charge of the run now, when a handoff made it another than `agent`',
    }),
  ),
  handoffs: Type.Optional(
    Type.Integer({ minimum: 1, description: 'handoffs the run made (docs/handoffs.md)' }),
  ),
  workflow: Type.Optional(
    Type.Object(
      { workflow_id: Type.String(), node: Type.String() },
      { description: 'the workflow node this run is: /v1/workflows/{workflow_id}' },
    ),
  ),
  answer: Type.Optional(Type.String()),
  output: Type.Optional(
    Type.Unknown({
      description:
        'the parsed answer of a run with an output schema, valid against it (`answer` holds its JSON text)',
    }),
  ),
  report: Type.Optional(Type.String()),
  usage: Usage,
  cost: Type.Optional(
    Type.Number({ description: "what the run's model turns cost, from the price table (docs/providers.md)" }),
  ),
  model_usage: Type.Optional(
    Type.Array(ModelUsageView, { description: 'tokens and cost by the model that answered' }),
  ),
  steps: Type.Array(Step),
  tasks: Type.Optional(
    Type.Array(
      Type.Object({
        title: Type.String(),
        tool: Type.Optional(Type.String()),
        done: Type.Boolean(),
        carried: Type.Optional(
          Type.Literal(true, {
            description: "left open by a session's earlier run; this run is not held to it",
          }),
        ),
      }),
      {
        description:
          "the run's task stack: the steps of its plan in order, each done or still open (absent: the run was not planned)",
      },
    ),
  ),
  turns: Type.Optional(Type.Array(Turn, { description: 'model turns: tokens, latency, reasoning' })),
  pending_approvals: Type.Array(PendingApproval),
  granted_by_approval: Type.Optional(
    Type.Array(GrantView, { description: 'tools a person granted to the run by approving a grant request' }),
  ),
  callback: Type.Optional(CallbackView),
  variant: Type.Optional(VariantView),
  parent: Type.Optional(
    Type.Object(
      { run_id: Type.String(), tool_call_id: Type.String(), tool: Type.String(), depth: Type.Integer() },
      { description: 'set on a child run: the parent run and the agent-tool call it answers' },
    ),
  ),
  children: Type.Optional(
    Type.Array(
      Type.Object({
        tool_call_id: Type.String(),
        tool: Type.String(),
        agent: Type.String(),
        run_id: Type.String(),
      }),
      { description: 'the child runs its agent-tool calls started (docs/agent-tools.md)' },
    ),
  ),
});
export type RunView = Static<typeof RunView>;
export type RunSummaryView = Static<typeof RunSummaryView>;

export const RunList = Type.Object({
  runs: Type.Array(RunSummaryView),
  next_offset: Type.Optional(Type.Integer({ description: 'offset of the next page; absent on the last' })),
  next_cursor: Type.Optional(Type.String({ description: 'cursor of the next page; absent on the last' })),
});

/** `GET /v1/archive/dead-letters`: finished runs the archive refused every try, set aside (kept in Redis). */
export const DeadLetterList = Type.Object({
  dead_letters: Type.Array(
    Type.Object({
      run_id: Type.String(),
      agent: Type.String(),
      tenant: Type.String(),
      status: Type.String({ description: 'the run’s final status' }),
      error: Type.String({ description: 'what PostgreSQL (or the record) said at the last try' }),
      tries: Type.Integer(),
      dead_lettered_at: Type.Integer({ description: 'epoch ms' }),
    }),
  ),
});

export const DecisionView = Type.Object({
  run_id: Type.String(),
  tool_call_id: Type.String(),
  tool: Type.String(),
  decision: StringEnum(['approved', 'rejected']),
  by: Type.String(),
  reason: Type.Optional(Type.String()),
});

export const SessionView = Type.Object({
  session_id: Type.String(),
  agent: Type.Optional(Type.String({ description: 'the agent the session belongs to, once known' })),
});
export const SessionDetailView = Type.Object({
  session_id: Type.String(),
  agent: Type.Optional(Type.String()),
  last_agent: Type.Optional(
    Type.String({
      description: "the agent a handoff left the session's last run with: its next message goes on with it",
    }),
  ),
  runs: Type.Array(Type.String(), { description: 'its runs that finished, oldest first (at most 100)' }),
  created_at: Millis('epoch ms; 0 when unknown'),
  updated_at: Millis('epoch ms of the last run that finished in it'),
});

const Breaker = Type.Object({
  state: StringEnum(['closed', 'half_open', 'open']),
  open_until: Type.Optional(Millis('epoch ms when an open breaker lets a probe through')),
  hidden: Type.Boolean({ description: 'hidden from the model while open' }),
});
const McpServerStateName = StringEnum(['starting', 'up', 'down'], {
  description: 'starting (first connection or restarting), up (connected), down (connecting failed)',
});
const AgentToolServer = Type.Object({
  name: Type.String(),
  state: McpServerStateName,
  since: Type.Optional(Millis('epoch ms it entered its state (the earliest executor)')),
  error: Type.Optional(Type.String({ description: "the server's own error while not up" })),
  executors: Type.Array(
    Type.Object({
      executor_id: Type.String(),
      state: McpServerStateName,
      since: Type.Optional(Millis('epoch ms, the executor’s clock')),
      restarts: Type.Integer({ description: 'times started again after a lost connection or failed start' }),
      tools: Type.Integer({ description: 'tools mounted from it' }),
      digests_refused: Type.Integer({
        description: 'tools hidden because their digest differs from the pin',
      }),
      error: Type.Optional(Type.String()),
    }),
  ),
});
const AgentTool = Type.Object({
  name: Type.String(),
  registered: Type.Boolean({ description: 'a live executor announces it' }),
  served: Type.Boolean({
    description: 'an executor can run it now: announced, and for an MCP tool its server is up',
  }),
  description: Type.Optional(Type.String()),
  group: Type.Optional(Type.String()),
  requires_confirmation: Type.Optional(Type.Boolean()),
  mcp_server: Type.Optional(AgentToolServer),
  breaker: Breaker,
});
export const AgentList = Type.Object({
  agents: Type.Array(
    Type.Object({
      name: Type.String(),
      description: Type.Optional(Type.String()),
      max_iterations: Type.Optional(Type.Integer()),
      max_tokens: Type.Optional(Type.Integer({ description: 'tokens a run of the agent may use' })),
      max_wall_time_ms: Type.Optional(Type.Integer({ description: 'wall-clock budget of a run, in ms' })),
      allowed_topic: Type.Optional(Type.Array(Type.String())),
      topic_policy: Type.Optional(
        StringEnum(['refuse', 'warn'], {
          description: 'what an off-topic request gets (with allowed_topic)',
        }),
      ),
      loop: Type.Optional(
        Type.Record(Type.String(), Type.Integer(), { description: "the agent's own guard settings" }),
      ),
      context_providers: Type.Optional(
        Type.Array(Type.Object({ tool: Type.String(), required: Type.Boolean() }), {
          description: 'tools called with the request before the loop, their results attached as context',
        }),
      ),
      tools: Type.Array(AgentTool),
    }),
  ),
});

export const Health = Type.Object({ status: Type.String() });
export const Ready = Type.Object({
  status: StringEnum(['ready', 'not_ready']),
  redis: StringEnum(['ok', 'down']),
  maxmemory_policy: Type.String({ description: "Redis's eviction policy; `unknown` when CONFIG is refused" }),
  warning: Type.Optional(Type.String()),
});

export type RunList = Static<typeof RunList>;
export type DecisionView = Static<typeof DecisionView>;
export type SessionView = Static<typeof SessionView>;
export type SessionDetailView = Static<typeof SessionDetailView>;
export type AgentList = Static<typeof AgentList>;
export type Health = Static<typeof Health>;
export type Ready = Static<typeof Ready>;
