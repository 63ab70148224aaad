import { constants } from '@agent-reach/shared';

/** Defaults of the HTTP API, with their units in the names; those the config uses live in shared. */

export const {
  DEFAULT_API_PORT,
  DEFAULT_API_HOST,
  DEFAULT_API_RATE_LIMIT_PER_MINUTE,
  DEFAULT_API_BODY_LIMIT_BYTES,
  DEFAULT_API_MAX_INPUT_TOKENS,
  DEFAULT_API_REDIS_TIMEOUT_MS,
} = constants;
/** `Retry-After` of a 503 UNAVAILABLE (Redis down, paused or out of memory), in seconds. */
export const UNAVAILABLE_RETRY_AFTER_S = 5;
/** How long an `Idempotency-Key` keeps pointing at the run it created, in seconds. */
export const DEFAULT_IDEMPOTENCY_TTL_S = 24 * 3600;
/** How often an event stream sends a comment to keep proxies from closing an idle connection, in ms. */
export const DEFAULT_SSE_HEARTBEAT_MS = 15_000;
/** Event streams open at once per API process; each holds one Redis connection. */
export const DEFAULT_MAX_EVENT_STREAMS = 500;
/** How long `/readyz` waits for Redis before it reports it down, in ms. */
export const READYZ_REDIS_TIMEOUT_MS = 1000;
/** How often Bull Board's list of tool queues is re-read from the catalog, at most, in ms. */
export const BOARD_QUEUES_REFRESH_MS = 10_000;
/** Where the run inspector is served. */
export const UI_PATH = '/ui';
/** How long an inspector login lasts without use, in seconds. */
export const UI_SESSION_TTL_S = 8 * 3600;
/** The inspector's session cookie. */
export const UI_SESSION_COOKIE = 'ar_session';
/** Header the inspector sends on every request that changes something (a cross-site form cannot). */
export const UI_CSRF_HEADER = 'x-agent-reach-ui';
/** Recent runs the inspector's tool error rates are computed over. */
export const UI_TOOL_STATS_RUNS = 200;
/** Parked runs the approvals inbox shows at most. */
export const UI_APPROVALS_RUNS = 100;
/** Minutes the inspector's overview charts runs over, up to now. */
export const UI_OVERVIEW_MINUTES = 30;
/** Where agents are served as MCP tools (streamable HTTP). */
export const MCP_PATH = '/mcp';
/** How long the run an MCP tool call started stays findable by that call's id, for its cancellation, in seconds. */
export const MCP_CALL_TTL_S = 24 * 3600;
/**
 * A `notifications/cancelled` reason that says the client's request timed out (the SDKs' wording, and
 * JSON-RPC's RequestTimeout code -32001): the client stopped waiting, and the run goes on.
 */
export const MCP_TIMEOUT_REASON = /\btimed?[ -]?out\b|-32001/i;
/** How the MCP server names itself at `initialize`. */
export const MCP_SERVER_INFO = { name: 'agent-reach', version: '1' } as const;
/** The OpenAI-compatible door: chat completions and responses. */
export const OPENAI_CHAT_PATH = '/v1/chat/completions';
export const OPENAI_RESPONSES_PATH = '/v1/responses';
export const OPENAI_MODELS_PATH = '/v1/models';
/** How many characters of a recorded answer each streamed delta of the OpenAI-compatible door carries, at most. */
export const ANSWER_CHUNK_CHARS = 64;
/**
 * Objects and arrays a JSON body may nest inside each other: far beyond any request's or report's shape,
 * far below the few thousand levels at which a recursive walk of it overflows the stack.
 */
export const MAX_JSON_BODY_DEPTH = 128;
