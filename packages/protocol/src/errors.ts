/**
 * Errors are data with stable codes. Two closed unions:
 * - `ToolErrorKind`: what a tool-call result reports to the model (docs/architecture.md, "Error kinds");
 * - `ErrorCode`: what the platform throws at its own callers (bad config, bad tool definition, …).
 * Branch on `kind`/`code`, never on message text: `instanceof` does not survive Redis.
 */

export const TOOL_ERROR_KINDS = [
  'unknown_tool',
  'invalid_arguments',
  'forbidden',
  'awaiting_confirmation',
  'timeout',
  /** The call never started before its deadline (no executor took it): nothing ran, it may be retried. */
  'unavailable',
  'transient',
  'circuit_open',
  'no_result',
  'execution_error',
  /** A tool guardrail of the agent stopped the call before it left, or withheld its result (`guardrail` names it). */
  'guardrail',
] as const;
export type ToolErrorKind = (typeof TOOL_ERROR_KINDS)[number];

/** Kinds the executor retries (same arguments, linear backoff). */
export const RETRYABLE_KINDS: ReadonlySet<ToolErrorKind> = new Set(['timeout', 'transient']);
/** Kinds that count as a failure of the tool or its upstream, and so trip its breaker. */
export const BREAKER_FAILURE_KINDS: ReadonlySet<ToolErrorKind> = new Set([
  'timeout',
  'transient',
  'execution_error',
]);

/** The error carried by a failed tool result. A plain object: it crosses Redis and reaches the model. */
export interface ToolErrorInfo {
  kind: ToolErrorKind;
  message: string;
  /** JSON pointer-ish path of the offending argument (`/order_id`), for `invalid_arguments`. */
  field?: string;
  /** The constraint that failed, e.g. `pattern`, `type`, `required`. */
  constraint?: string;
  expected?: string;
  example?: unknown;
  did_you_mean?: string;
  /** Tools the agent may call, for `unknown_tool`. */
  available_tools?: string[];
  /** Error class name for `execution_error` (never a stack). */
  type?: string;
  /** HTTP status of the upstream answer, for tools that call an HTTP API (OpenAPI operations). */
  status?: number;
  /** Who refused a call that required approval. */
  decided_by?: string;
  /** Why a call was refused: a person's reason, or `scope` / `grant` for a call outside the agent's reach. */
  reason?: string;
  /** The guardrail that stopped the call or withheld its result, for `guardrail`. */
  guardrail?: string;
  /** The whole story behind `message` (an MCP server's own error, …), for people: the model never reads it. */
  detail?: string;
  retryable: boolean;
}

export const ERROR_CODES = [
  'CONFIG_INVALID',
  'AGENTS_INVALID',
  'TOOL_DEFINITION_INVALID',
  'TOOL_DUPLICATE',
  'TOOL_NOT_FOUND',
  'TOOL_ARGS_INVALID',
  'TOOL_FORBIDDEN',
  'TOOL_TIMEOUT',
  'TOOL_FAILED',
  'BREAKER_OPEN',
  'DISPATCH_CLOSED',
  'RUN_INVALID',
  'RUN_NOT_FOUND',
  'RUN_INVALID_STATE',
  'RUN_WAIT_TIMEOUT',
  'WORKFLOWS_INVALID',
  'WORKFLOW_INVALID',
  'WORKFLOW_NOT_FOUND',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

/** A platform error with a stable code. */
export class AgentReachError extends Error {
  readonly code: ErrorCode;
  readonly retryable: boolean;
  readonly details: readonly string[];

  constructor(
    code: ErrorCode,
    message: string,
    options: { retryable?: boolean; details?: string[]; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'AgentReachError';
    this.code = code;
    this.retryable = options.retryable ?? false;
    this.details = options.details ?? [];
  }
}

/** Kinds a handler may throw. `invalid_arguments` is for checks a schema cannot express (a path escaping its root). */
export type HandlerErrorKind = 'transient' | 'execution_error' | 'timeout' | 'invalid_arguments';

/**
 * Thrown by a tool handler to say how its failure should be treated.
 * `transient` (upstream 5xx, network) is retried; `execution_error` and `invalid_arguments` are not, and
 * `invalid_arguments` never counts against the tool's breaker.
 */
export class ToolError extends Error {
  readonly kind: HandlerErrorKind;
  readonly field: string | undefined;
  /** HTTP status of the upstream answer that failed the call, shown to the model as `error.status`. */
  readonly status: number | undefined;
  /** A `transient` failure's upstream asked to wait this long before the next attempt, in ms. */
  readonly retryAfterMs: number | undefined;
  constructor(
    kind: HandlerErrorKind,
    message: string,
    options: { cause?: unknown; field?: string; status?: number; retryAfterMs?: number } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ToolError';
    this.kind = kind;
    this.field = options.field;
    this.status = options.status;
    this.retryAfterMs = options.retryAfterMs;
  }
}

export function transientError(message: string, cause?: unknown): ToolError {
  return new ToolError('transient', message, { cause });
}

const NO_RESULT = Symbol.for('agent-reach.no-result');

/** What a handler returns when it succeeded but found nothing: not an error, not retried. */
export interface NoResult {
  readonly [NO_RESULT]: true;
  readonly hint: string;
}

export function noResult(hint: string): NoResult {
  return { [NO_RESULT]: true, hint };
}

export function isNoResult(value: unknown): value is NoResult {
  return typeof value === 'object' && value !== null && NO_RESULT in value;
}
