/**
 * Every behaviour-changing default of Agent-Reach, with its unit in the name.
 * Options and config resolve against these; nothing else hard-codes a default.
 */

export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';
// Redis reconnect backoff and ready timeout: in protocol's redis-urls.ts, shared with the client.
export const DEFAULT_TOOL_GROUP = 'default';
export const DEFAULT_LOG_LEVEL = 'info';

// Tool contract
export const GROUP_NAME_PATTERN = /^[a-z0-9][a-z0-9_-]{0,39}$/;
export const DEFAULT_TOOL_TIMEOUT_MS = 5000;
export const DEFAULT_RETRY_MAX_ATTEMPTS = 3;
export const DEFAULT_RETRY_BACKOFF_MS = 500;
/** Upper bound on a tool's attempts, so a typo cannot make a call retry for hours. */
export const MAX_RETRY_ATTEMPTS = 10;
/** Model-facing budget for one result's serialized content, in characters. */
export const DEFAULT_RESULT_BUDGET_CHARS = 4000;
/** How long the full version of a truncated result stays fetchable by its `ref`. */
export const DEFAULT_RESULT_REF_TTL_S = 3600;
/** How long a run's recorded tool results stay in Redis. */
export const DEFAULT_RESULTS_TTL_S = 24 * 3600;
export const DEFAULT_GET_FULL_RESULT_PAGE_CHARS = 4000;
/** Whether a result over its budget is summarised (arrays as length, keys, first items) before trimming. */
export const DEFAULT_SUMMARIZE_RESULTS = true;
/** Items of a long array a result summary keeps as examples. */
export const RESULT_SUMMARY_FIRST_ITEMS = 3;
/** Arrays longer than this are summarised (when the result is over its budget). */
export const RESULT_SUMMARY_MIN_ITEMS = 10;
/** The scope of the platform's own tools (`get_full_result`): every agent holds it. */
export const PLATFORM_SCOPE = 'platform';

// Circuit breakers
export const DEFAULT_BREAKER_FAILURE_THRESHOLD = 3;
export const DEFAULT_BREAKER_RESET_TIMEOUT_MS = 30_000;

// Executor
export const DEFAULT_EXECUTOR_CONCURRENCY = 50;
export const DEFAULT_SHUTDOWN_GRACE_MS = 10_000;
export const DEFAULT_EXECUTOR_METRICS_PORT = 9464;
/** Metrics servers answer only on loopback unless told otherwise (`METRICS_HOST=0.0.0.0` in containers). */
export const DEFAULT_METRICS_HOST = '127.0.0.1';
export const DEFAULT_OUTPUTS_DIR = 'outputs';
/** BullMQ attempts for a tool-call job: covers a crashed executor, not a failing tool (the executor retries those). */
export const TOOL_JOB_ATTEMPTS = 3;
export const TOOL_JOB_KEEP_FAILED_S = 24 * 3600;
/** How often an executor re-announces the tools and groups it serves, in ms. */
export const DEFAULT_EXECUTOR_HEARTBEAT_MS = 2000;
/** How long an announcement counts after its last heartbeat, in ms: a dead executor's tools age out after it. */
export const DEFAULT_EXECUTOR_ANNOUNCEMENT_TTL_MS = 10_000;
/**
 * How long a scheduler keeps a tool known after the last announcement of it lapsed (executors unable to
 * write heartbeats during a Redis outage, or all restarting): 5 minutes.
 */
export const DEFAULT_CATALOG_MEMORY_MS = 300_000;
/** How long a starting scheduler waits for executors to announce every tool its agents name: 30 s. */
export const DEFAULT_CATALOG_WAIT_MS = 30_000;
/**
 * Part of the shutdown grace kept for handing unfinished calls back to the queue and closing, in ms (at
 * most half the grace).
 */
export const SHUTDOWN_HAND_BACK_RESERVE_MS = 1000;
/** Ids of dispatcher reply lists: a job's `replyTo` must be `keys.replies(id)` with such an id. */
export const REPLY_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
/** Executor ids (announcements, breaker snapshots). */
export const EXECUTOR_ID_PATTERN = /^[A-Za-z0-9_.-]{1,128}$/;

// Dispatcher
/** Slack added to a call's worst-case running time before the dispatcher gives up on its result. */
export const DEFAULT_DISPATCH_SLACK_MS = 5000;
/**
 * Largest share of a run's remaining time one tool call (its attempts and the retries between them) may
 * take: the deadline the executor receives is capped by it (seeds: a retry window of at most 20%).
 */
export const RETRY_WINDOW_SHARE_OF_RUN = 0.2;
/** Largest number of replies taken from the reply list per round trip. */
export const REPLY_BATCH_SIZE = 256;
/** How long one blocking read of the reply list waits before it re-checks for shutdown, in seconds. */
export const REPLY_BLOCK_S = 1;

// Agent loop
export const DEFAULT_MAX_ITERATIONS = 10;
/** Model turns of a run whose request is classified multi-step (seeds: 10, relaxed to 15), unless its agent sets its own. */
export const DEFAULT_MAX_ITERATIONS_MULTI_STEP = 15;
export const DEFAULT_MAX_OUTPUT_TOKENS = 2000;
export const DEFAULT_COMPACTION_THRESHOLD_TOKENS = 40_000;
/** Tool rounds kept verbatim after a compaction (the rest is folded into the summary). */
export const DEFAULT_COMPACTION_KEEP_ROUNDS = 2;
/** The same tool with the same arguments this many turns in a row gets a nudge; once more stops the run. */
export const DEFAULT_REPEAT_LIMIT = 3;
export const DEFAULT_MAX_FAILED_ROUNDS = 3;
/**
 * Tool rounds in a row whose every failure was the model's own arguments (`invalid_arguments`): they count
 * here, not against the failed rounds, and this many stop the run (`argument_fix_rounds`).
 */
export const DEFAULT_MAX_ARGUMENT_FIX_ROUNDS = 4;
/** Shaped result of one context provider attached to a run's input, at most this many characters. */
export const DEFAULT_CONTEXT_PROVIDER_MAX_CHARS = 4000;
/** Time a guardrail's tool or agent check may take before its `on_error` policy decides, in ms. */
export const DEFAULT_GUARDRAIL_TIMEOUT_MS = 10_000;
/**
 * A guardrail tool's call lives this long past the guardrail's timeout, in ms, so that the guardrail's own
 * timer (not the dispatcher's deadline) decides a late check; no executor starts it after that.
 */
export const GUARDRAIL_CALL_GRACE_MS = 1000;
/**
 * Quantifiers a guardrail's regular expression may hold (safe-regex2's repetition limit): past it, or with
 * a quantifier nested in another's group, the agents file is refused (docs/guardrails.md).
 */
export const GUARDRAIL_REGEX_MAX_QUANTIFIERS = 25;
/**
 * Smallest domain share (0–1: the weight of the request's words that the agent's tools, topics and examples
 * know over the weight of all its words; words many domains share weigh a quarter, unknown words 0.6) at
 * which a request counts as within an agent's topics.
 */
export const DEFAULT_TOPIC_MIN_SCORE = 0.3;
export const DEFAULT_RUN_TOKEN_BUDGET = 200_000;
/** Handoffs one run may make (an agent's `loop.max_handoffs` overrides it): a loop of handoffs stops there. */
export const DEFAULT_MAX_HANDOFFS = 5;
export const DEFAULT_RUN_DEADLINE_MS = 10 * 60_000;
/**
 * Times a run whose final answer does not match its output schema is told the problems and asked again,
 * before it fails `invalid_output` (an agent's `output_retries` overrides it; env `OUTPUT_RETRIES`).
 */
export const DEFAULT_OUTPUT_RETRIES = 2;
/**
 * Times a final answer given while steps of the task stack naming a tool are open is sent back to the
 * model naming them, before the run ends `succeeded`/`tasks_incomplete` (an agent's `loop.task_reminders`
 * overrides it). Each reminder is a model turn, counted in the run's budgets.
 */
export const DEFAULT_TASK_REMINDERS = 1;
/** Largest output schema accepted (as JSON), in characters. */
export const MAX_OUTPUT_SCHEMA_CHARS = 64 * 1024;
/** Most schema problems of one answer the model is told about. */
export const MAX_OUTPUT_PROBLEMS = 10;
/** Longest argument string of one tool call that is run; longer ones are refused (`invalid_arguments`). */
export const MAX_TOOL_ARGUMENTS_CHARS = 64 * 1024;
/** What a run records of refused oversized arguments: this many leading characters, their length and digest. */
export const TOOL_ARGUMENTS_PREFIX_CHARS = 256;
/** Longest tool name a run records as the model wrote it; a longer one is recorded cut to this length. */
export const MAX_RECORDED_TOOL_NAME_CHARS = 256;
/** Most tool calls taken from one model turn; the model is told about the ones left out. */
export const MAX_TOOL_CALLS_PER_TURN = 32;
/** Longest model text (answer, refusal) a run records from one turn, in characters. */
export const MAX_MODEL_TEXT_CHARS = 100_000;

// LLM client: the openai SDK owns LLM retries (exponential backoff with jitter, honours retry-after).
export const DEFAULT_LLM_TIMEOUT_MS = 60_000;
export const DEFAULT_LLM_MAX_RETRIES = 4;
export const DEFAULT_LLM_MODEL = 'gpt-4o-mini';
/** Ask model turns with `stream: true` and send their text to live subscribers (`LLM_STREAM`). */
export const DEFAULT_LLM_STREAM = true;
/** How long streamed answer text is gathered before it is published, in ms. */
export const ANSWER_DELTA_BATCH_MS = 50;
/**
 * Routed runs (a providers file): the scheduler owns retries at a provider (see docs/providers.md). With a
 * later model to fall back to, a 429 is retried at the same provider only when its Retry-After is at most
 * this long, in ms, and only once; every other failure moves to the next model at once.
 */
export const FALLBACK_MAX_RETRY_AFTER_MS = 1000;
/** First backoff between retries at one provider, in ms; doubled each retry, with jitter. */
export const PROVIDER_RETRY_BASE_MS = 500;
/** Longest backoff between retries at one provider, in ms. */
export const PROVIDER_RETRY_MAX_MS = 8000;

// Runs
export const DEFAULT_SCHEDULER_CONCURRENCY = 100;
/** How long finished runs (state, events, results) are kept, in seconds. */
export const DEFAULT_RUN_RETENTION_S = 7 * 24 * 3600;
/** How many runs the index keeps at most. */
export const DEFAULT_RUN_RETENTION_COUNT = 100_000;
/** How long a run waits for an approval before it is treated as rejected, in ms. */
export const DEFAULT_APPROVAL_TIMEOUT_MS = 7 * 24 * 3600 * 1000;
export const DEFAULT_RUN_LOCK_DURATION_MS = 30_000;
export const DEFAULT_RUN_STALLED_INTERVAL_MS = 30_000;
/** A run whose scheduler died this many times is failed instead of being picked up again. */
export const RUN_MAX_STALLED_COUNT = 5;
// A run job's attempts, backoff and kept finished jobs: in protocol's run-job-options.ts, which every
// producer of run jobs (the API, the CLI, the client's enqueueRun) shares.
/** Tries, and the linear backoff between them in ms, to record as failed a run out of attempts. */
export const RUN_ABANDON_WRITE_ATTEMPTS = 5;
export const RUN_ABANDON_WRITE_BACKOFF_MS = 1000;
/** How long a shutdown past its grace period waits for workers to settle before closing connections, in ms. */
export const CLOSE_SETTLE_MS = 500;
/** Model clients a scheduler keeps for runs that name their model (least recently used ones go first). */
export const MAX_MODEL_CLIENTS = 16;

/**
 * A model request's lease on its provider's fleet-wide concurrency slot: renewed while the request runs
 * (every third of it), so a scheduler killed mid-request frees the slot at most this long after.
 */
export const PROVIDER_SLOT_LEASE_MS = 30_000;
/** The first pause of a request waiting for its provider's fleet-wide limits; doubles up to the next. */
export const PROVIDER_WAIT_POLL_MIN_MS = 20;
/** The longest pause between two tries of a request waiting for its provider's fleet-wide limits. */
export const PROVIDER_WAIT_POLL_MAX_MS = 250;
/** A waiter that has not tried for this long (its scheduler died) loses its place in the provider's line. */
export const PROVIDER_WAITER_STALE_MS = 5_000;
/** How long past its grace period a shutting-down process may take to close connections before it exits anyway, in ms. */
export const SHUTDOWN_BACKSTOP_MS = 5000;
export const DEFAULT_SCHEDULER_METRICS_PORT = 9465;
/** How often the scheduler holding the queue sampler lease samples queue depths, in ms. */
export const DEFAULT_QUEUE_SAMPLE_INTERVAL_MS = 15_000;
/** Samples a sampler leader may miss before its lease lapses and another scheduler takes over. */
export const QUEUE_SAMPLER_LEASE_INTERVALS = 3;
/** How often the dispatcher re-reads the results of calls still waiting (replies sent to a dead scheduler), in ms. */
export const DISPATCH_RECHECK_MS = 1000;
/**
 * Longest a dispatcher keeps trying to publish a turn's calls while Redis cannot take them (a failover:
 * the queue's master died and its replica is not promoted yet), in ms; then the run's step fails and
 * resumes from its checkpoint after the run job's backoff. Retries start at 100 ms and double up to 1 s.
 */
export const DISPATCH_PUBLISH_RETRY_MS = 15_000;
/**
 * How long a BullMQ worker (tool calls, runs, workflows) waits after a connection error in its loop before
 * fetching or finishing jobs again, in ms. BullMQ's default, 15 s, outlasts a Redis Cluster failover (a few
 * seconds) several times over: every executor would stand idle that long after the queue's master died.
 */
export const WORKER_RETRY_DELAY_MS = 1000;
/**
 * How long after its publication (and between two looks) a dispatcher looks for the job of a call no
 * executor has started, in ms: gone from its queue, or taken that long ago by a worker that never started
 * it (both are what a failover of the queue's master leaves), it is published again without waiting for
 * the call's deadline. Executors record a start within milliseconds of taking a job.
 */
export const DISPATCH_LOST_JOB_AFTER_MS = 3000;
/** How long a call no executor has started may wait, republished, before it is answered `unavailable`, in ms. */
export const CALL_START_WAIT_MS = 60_000;
/** Grace after a started call's deadline for its executor (which aborts it then) to record a result, in ms. */
export const DISPATCH_STARTED_GRACE_MS = 2000;

// Live configuration
/** How often every process checks the published configuration's version (a missed pub/sub message is caught then), in ms. */
export const DEFAULT_CONFIG_POLL_MS = 2000;
/** How often a process started from a local file (and no published configuration) checks the file for changes, in ms. */
export const DEFAULT_CONFIG_FILE_POLL_MS = 1000;
/** How often each executor writes its groups' limits to their queues again, in ms (queue metadata lost with Redis data comes back). */
export const GROUP_LIMITS_REAPPLY_MS = 30_000;

// OpenAPI sources (tool groups' `openapi`: operations of HTTP APIs as tools)
/** How long reading one OpenAPI document (and the files it refers to) may take, in ms. */
export const OPENAPI_DOCUMENT_TIMEOUT_MS = 10_000;
/** Largest OpenAPI document (or referenced file) read over HTTP, in bytes. */
export const OPENAPI_MAX_DOCUMENT_BYTES = 10 * 1024 * 1024;
/** Largest response body an operation's call reads, in bytes; the rest is cut off. */
export const OPENAPI_MAX_RESPONSE_BYTES = 1024 * 1024;
/** How much of a failed call's response body the error shows the model, in characters. */
export const OPENAPI_ERROR_EXCERPT_CHARS = 500;
/** Longest tool description made from an operation's summary and description, in characters. */
export const OPENAPI_DESCRIPTION_MAX_CHARS = 1000;
/** Longest description kept on one argument of an operation's schema, in characters. */
export const OPENAPI_ARGUMENT_DESCRIPTION_MAX_CHARS = 300;
/** Longest Retry-After an operation's upstream may ask for and still be retried by the executor, in ms. */
export const OPENAPI_MAX_RETRY_AFTER_MS = 30_000;
/** Depth at which an operation's schema stops being followed (deeper parts accept any value). */
export const OPENAPI_MAX_SCHEMA_DEPTH = 24;
/** Errors of an invalid OpenAPI document listed one by one (in `config check` and the executor's log), a count. */
export const OPENAPI_MAX_VALIDATION_PROBLEMS = 5;

// HTTP API (served by schedulers that have API keys)
export const DEFAULT_API_PORT = 8080;
export const DEFAULT_API_HOST = '0.0.0.0';
/** Requests per minute per API key (per IP for requests without a valid key), across every API process. */
export const DEFAULT_API_RATE_LIMIT_PER_MINUTE = 600;
export const DEFAULT_API_BODY_LIMIT_BYTES = 1024 * 1024;
/** Largest run input the API accepts, in tokens (o200k), besides its character limit. */
export const DEFAULT_API_MAX_INPUT_TOKENS = 32_000;
/** How long an API request waits on one Redis command before it answers 503 UNAVAILABLE, in ms. */
export const DEFAULT_API_REDIS_TIMEOUT_MS = 3000;

// Traces (OpenTelemetry; off unless the OTEL_* variables ask for them)
/** `service.name` of each process's spans when OTEL_SERVICE_NAME is unset. */
export const SCHEDULER_SERVICE_NAME = 'agent-reach-scheduler';
export const EXECUTOR_SERVICE_NAME = 'agent-reach-executor';
/** `agent-reach dev`: scheduler, executor (and llm-sim) in one process. */
export const DEV_SERVICE_NAME = 'agent-reach-dev';

// Multi-agent workflows
/** How long a workflow node may wait (for its dependencies) and run before the watchdog acts, from the workflow's start. */
export const DEFAULT_WORKFLOW_NODE_TIMEOUT_MS = 10 * 60_000;
/** How often a coordinator looks at a waiting workflow when nothing woke it sooner (a missed wake-up costs at most this). */
export const WORKFLOW_POLL_MS = 2000;
/** Workflows coordinated at once per scheduler process (a coordination step is short; waiting holds no slot). */
export const DEFAULT_WORKFLOW_CONCURRENCY = 20;
/** Attempts of a workflow's coordination job when a step cannot reach Redis, with exponential backoff from this. */
export const WORKFLOW_JOB_ATTEMPTS = 8;
export const WORKFLOW_JOB_BACKOFF_MS = 1000;
/** Characters of a failed node's run report kept in the node's `error` and the workflow's (a run report can be long). */
export const WORKFLOW_NODE_ERROR_MAX_CHARS = 1000;

// MCP servers as tool sources (see docs/mcp.md)
/** How long an MCP server may take to answer `initialize` (and its first `tools/list`), in ms. */
export const MCP_INITIALIZE_TIMEOUT_MS = 10_000;
/** How often a running MCP server is pinged, and how long it may take to answer, in ms. */
export const MCP_PING_INTERVAL_MS = 5000;
export const MCP_PING_TIMEOUT_MS = 5000;
/** Restart backoff of an MCP server that crashed or hung: doubles from the first, capped at the second, in ms. */
export const MCP_RESTART_BACKOFF_MS = 250;
export const MCP_RESTART_BACKOFF_MAX_MS = 30_000;
/** Largest JSON-RPC message an MCP server may send, in bytes: past it the connection is closed and restarted. */
export const MCP_MAX_MESSAGE_BYTES = 8 * 1024 * 1024;
/** Characters of an MCP tool's description kept (the rest is cut, marked). */
export const MCP_MAX_DESCRIPTION_CHARS = 2000;
/** Largest input schema of an MCP tool, serialized, in characters: a larger one refuses the tool. */
export const MCP_MAX_SCHEMA_CHARS = 32_000;
/** Tools mounted from one MCP server at most (the rest are refused, reported). */
export const MCP_MAX_TOOLS_PER_SERVER = 200;
/** Extra time the MCP request gets past a tool's own timeout, so that the executor's timeout fires first, in ms. */
export const MCP_REQUEST_SLACK_MS = 1000;

/** With the archive on: how long Redis keeps a finished run once PostgreSQL has it (5 minutes). */
export const DEFAULT_ARCHIVED_RUN_RETENTION_S = 300;

/** How long the archive keeps runs, in days (whole daily partitions are dropped). */
export const DEFAULT_ARCHIVE_RETENTION_DAYS = 90;

/** Runs one archiver takes from the outbox per batch (one transaction). */
export const DEFAULT_ARCHIVE_BATCH_SIZE = 200;

/** How long a batch an archiver claimed stays hidden from the others; past it, another takes it again. */
export const DEFAULT_ARCHIVE_VISIBILITY_TIMEOUT_MS = 30_000;

export const DEFAULT_ARCHIVER_METRICS_PORT = 9466;

/**
 * How long a tool job waits before it is offered again when its executor runs the tool's MCP server but
 * has not mounted it yet (starting or restarting), in ms.
 */
export const MCP_MOUNT_WAIT_RETRY_MS = 250;

/**
 * Longest part of an MCP server's error that a model reads when a call is answered `unavailable` because
 * the server is down, in characters (the run record keeps the whole error in the result's `detail`).
 */
export const MCP_DOWN_CAUSE_MAX_CHARS = 200;

/**
 * How long `config apply` waits for the executors to take the version and settle its MCP servers (up,
 * down, or a change refused) before it reports on them, in ms: past MCP_INITIALIZE_TIMEOUT_MS, so that a
 * server that never answers is reported as such.
 */
export const CONFIG_APPLY_MCP_WAIT_MS = 15_000;

/** How often `config apply` reads the executors' announcements while it waits for them, in ms. */
export const CONFIG_APPLY_MCP_POLL_MS = 200;

/**
 * How deep a tree of agents called as tools may grow when no agent of it sets `max_agent_depth`: a run
 * at this depth (its root is 0) calls no further agent; the call is answered `forbidden`.
 */
export const DEFAULT_MAX_AGENT_DEPTH = 3;

/**
 * Child runs one run may start through its agent tools, over its whole life: a model that calls agent
 * tools again and again (up to `MAX_TOOL_CALLS_PER_TURN` a turn) is refused past it, so one run's tree
 * stays within this to the power of the depth even where no tenant quota is set.
 */
export const MAX_CHILD_RUNS_PER_RUN = 8;

/** Longest answer of a child run (an agent called as a tool) its parent's model reads, in characters. */
export const AGENT_TOOL_RESULT_MAX_CHARS = 20_000;
