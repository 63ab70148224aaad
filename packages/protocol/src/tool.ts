import { Type, type Static, type TSchema } from '@sinclair/typebox';

/**
 * The logger a handler gets: the call's child logger (pino's in the executor), with the call's ids bound.
 * Only the methods a handler needs are part of the contract.
 */
export interface ToolLogger {
  debug(obj: unknown, msg?: string, ...args: unknown[]): void;
  info(obj: unknown, msg?: string, ...args: unknown[]): void;
  warn(obj: unknown, msg?: string, ...args: unknown[]): void;
  error(obj: unknown, msg?: string, ...args: unknown[]): void;
}

/** What a handler receives besides its arguments. */
export interface ToolContext {
  /** Fires when the attempt's `timeoutMs` is reached (or the executor shuts down hard). */
  signal: AbortSignal;
  runId: string;
  traceId: string;
  agent: string;
  toolCallId: string;
  /** Stable across redeliveries and retries of one call (`runId` + `toolCallId`): pass it to systems you change. */
  idempotencyKey: string;
  /** 1-based attempt number. */
  attempt: number;
  logger: ToolLogger;
}

export interface RetryOptions {
  /** Total attempts including the first. Default 3. */
  maxAttempts?: number;
  /** Only linear backoff is offered: attempt n waits `backoffMs * n` before it runs. */
  backoff?: 'linear';
  /** Base delay, in milliseconds. Default 500. */
  backoffMs?: number;
}

/**
 * Where a tool comes from when it is not declared in code: an MCP server's tool, mounted under
 * `<server>__<tool>`. `digest` is the sha256 (hex) of its description, input schema and annotations as
 * the server lists them; announcements carry it so a change can be seen and pinned.
 */
export interface ToolOrigin {
  readonly kind: 'mcp';
  readonly server: string;
  readonly tool: string;
  readonly digest: string;
}

/** A tool's declaration: the single source of the model-facing spec, the validator and the policy. */
export interface ToolOptions<S extends TSchema, R = unknown> {
  /** `NAME_PATTERN`: `^[a-zA-Z0-9_-]{1,64}$`. */
  name: string;
  /** When to use it, what the arguments mean, what it does not do. */
  description: string;
  /**
   * JSON Schema of the arguments (`type: 'object'`), built with TypeBox so that the handler's argument type
   * is inferred from the very same object ajv compiles.
   */
  parameters: S;
  /** Per-attempt deadline, in milliseconds. Default 5000. */
  timeoutMs?: number;
  retry?: RetryOptions;
  /**
   * The scope the tool belongs to, e.g. `orders.read`. An agent that declares `scopes` reaches only tools
   * whose scope it holds: the executor refuses the others (`forbidden`) even when the agent lists them.
   * A tool without a scope needs none. Default: none.
   */
  accessScope?: string;
  /**
   * Calls run only in a run whose session (or request) was granted this tool; the executor refuses the
   * others (`forbidden`). Default false.
   */
  requiresGrant?: boolean;
  /**
   * Argument values the executor rewrites before validation, per top-level argument: alias → value
   * (`{ city: { '成都': 'Chengdu' } }`). Aliases match a string value ignoring case and surrounding
   * spaces; the call records the arguments it ran with as `normalized_arguments`.
   */
  argumentAliases?: Readonly<Record<string, Readonly<Record<string, string>>>>;
  /**
   * A result over the budget is summarised (arrays as their length, keys and first items) before it is
   * trimmed. Default: the fleet's `tool_defaults.summarize_results`, else true.
   */
  summarizeResult?: boolean;
  /** Queue group; a group gets its own queue and may get its own executors. Default `default`. */
  group?: string;
  /** A person approves each call before it runs. Default false. */
  requiresConfirmation?: boolean;
  /**
   * The tool only reads: running a call again changes nothing anywhere. `runs replay --live` re-runs
   * such calls; others are answered from the recording unless forced. Default false.
   */
  readOnly?: boolean;
  /**
   * Running a call again with the same arguments and `idempotencyKey` changes nothing more than the first
   * run did (the systems it changes deduplicate). `runs replay --live` may re-run it. Default false.
   */
  idempotent?: boolean;
  /** Model-facing size budget of one result, in characters. Default: the fleet's, else 4000. */
  resultBudgetChars?: number;
  /** Set by tool sources (MCP servers), not by code: where the tool comes from. */
  origin?: ToolOrigin;
  handler: (args: Static<S>, ctx: ToolContext) => Promise<R> | R;
}

/** A declared tool, its handler arguments erased so definitions of any schema fit one registry. */
export interface ToolDefinition {
  readonly name: string;
  readonly description: string;
  readonly parameters: TSchema;
  readonly timeoutMs?: number;
  readonly retry?: RetryOptions;
  readonly accessScope?: string;
  readonly requiresGrant?: boolean;
  readonly argumentAliases?: Readonly<Record<string, Readonly<Record<string, string>>>>;
  readonly summarizeResult?: boolean;
  readonly group?: string;
  readonly requiresConfirmation?: boolean;
  readonly readOnly?: boolean;
  readonly idempotent?: boolean;
  readonly resultBudgetChars?: number;
  readonly origin?: ToolOrigin;
  readonly handler: (args: never, ctx: ToolContext) => unknown;
}

/**
 * Declares a tool. The handler's `args` are typed from `parameters` (TypeBox `Static`), so the schema
 * and the types cannot disagree. Checks happen when the tool is registered.
 */
export function defineTool<S extends TSchema, R = unknown>(options: ToolOptions<S, R>): ToolDefinition {
  return options as unknown as ToolDefinition;
}

/** A string enum as JSON Schema `enum` (what models read best), typed as the union of its values. */
export function StringEnum<const T extends readonly string[]>(
  values: T,
  options: { description?: string } = {},
) {
  return Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options });
}
