import type { ToolDefinition, ToolErrorInfo } from '@agent-reach/protocol';
import { PLATFORM_SCOPE } from '../constants.js';

/**
 * Reach decided by policy: which scopes an agent holds, what a tool's configuration says of its scope,
 * grant, argument aliases and result shaping (for tools of any source), and the checks the executor
 * makes with them. "Registered = findable, configured = callable, granted = allowed here."
 */

/** A scope name: `orders.read`, `files.write`, `mcp:fs`. */
export const SCOPE_PATTERN = /^[A-Za-z0-9_.:-]{1,64}$/;
const ARGUMENT_NAME_PATTERN = '^[A-Za-z0-9_.-]{1,64}$';

/** What an agent's entry in the agents file says of its reach, beside its tool list. */
export interface AgentReach {
  /**
   * The scopes the agent holds. When given, the agent reaches only listed tools whose `access_scope` is
   * one of them (or that have none); absent, the tool list alone decides (no scope check).
   */
  readonly scopes?: readonly string[];
  /**
   * A listed tool that `requires_grant`, called in a run that was not granted it, waits for a person
   * instead of being refused: approving the request grants the tool to the run. Default false.
   */
  readonly grant_by_approval?: boolean;
}

/** Argument aliases of a tool: argument name → alias → the value it stands for. */
export type ArgumentAliases = Readonly<Record<string, Readonly<Record<string, string>>>>;

/** Reach and shaping settings a configuration gives one MCP or OpenAPI tool. */
export interface ToolReachSettings {
  /** The tool's scope; default: its source's `access_scope`, else `mcp:<server>` / `openapi:<source>`. */
  readonly access_scope?: string;
  readonly requires_grant?: boolean;
  readonly aliases?: ArgumentAliases;
  readonly summarize_result?: boolean;
  readonly result_budget_chars?: number;
}

/** Fleet-wide defaults of result shaping, for tools that do not set their own. */
export interface ToolDefaults {
  /** Default 4000 (`DEFAULT_RESULT_BUDGET_CHARS`). */
  readonly result_budget_chars?: number;
  /** Default true. */
  readonly summarize_results?: boolean;
}

const SCOPE = { type: 'string', pattern: SCOPE_PATTERN.source } as const;

/** Schema properties of an agent's reach (spread into the agents schema's agent properties). */
export const agentReachProperties = {
  scopes: { type: 'array', items: SCOPE, uniqueItems: true, maxItems: 200 },
  grant_by_approval: { type: 'boolean' },
} as const;

/** Schema of a tool's argument aliases. */
export const argumentAliasesSchema = {
  type: 'object',
  propertyNames: { type: 'string', pattern: ARGUMENT_NAME_PATTERN },
  maxProperties: 50,
  additionalProperties: {
    type: 'object',
    minProperties: 1,
    maxProperties: 1000,
    propertyNames: { type: 'string', minLength: 1, maxLength: 200 },
    additionalProperties: { type: 'string', maxLength: 1000 },
  },
} as const;

/** Schema properties of one tool's reach settings (MCP `tools` entries, OpenAPI `tools` entries). */
export const toolReachProperties = {
  access_scope: SCOPE,
  requires_grant: { type: 'boolean' },
  aliases: argumentAliasesSchema,
  summarize_result: { type: 'boolean' },
  result_budget_chars: { type: 'integer', minimum: 200 },
} as const;

/** Schema of the configuration's `tool_defaults`. */
export const toolDefaultsSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    result_budget_chars: { type: 'integer', minimum: 200 },
    summarize_results: { type: 'boolean' },
  },
} as const;

/** A configured tool's settings as tool-definition fields (the source's scope unless the tool sets one). */
export function reachDefinition(
  settings: ToolReachSettings | undefined,
  sourceScope: string,
): Pick<
  ToolDefinition,
  'accessScope' | 'requiresGrant' | 'argumentAliases' | 'summarizeResult' | 'resultBudgetChars'
> {
  const s = settings ?? {};
  return {
    accessScope: s.access_scope ?? sourceScope,
    ...(s.requires_grant === undefined ? {} : { requiresGrant: s.requires_grant }),
    ...(s.aliases === undefined ? {} : { argumentAliases: s.aliases }),
    ...(s.summarize_result === undefined ? {} : { summarizeResult: s.summarize_result }),
    ...(s.result_budget_chars === undefined ? {} : { resultBudgetChars: s.result_budget_chars }),
  };
}

/**
 * Why `agent` may not call a tool of `scope` although it lists it, or undefined when it may: an agent
 * that declares scopes holds those and `platform` (the built-in `get_full_result`); a tool without a
 * scope needs none.
 */
export function scopeRefusal(
  agent: { name: string; scopes?: readonly string[] | undefined },
  tool: { name: string; accessScope: string | undefined },
): ToolErrorInfo | undefined {
  const scopes = agent.scopes;
  if (scopes === undefined || tool.accessScope === undefined) return undefined;
  if (tool.accessScope === PLATFORM_SCOPE || scopes.includes(tool.accessScope)) return undefined;
  return {
    kind: 'forbidden',
    message:
      `"${tool.name}" belongs to scope "${tool.accessScope}", which agent "${agent.name}" does not hold ` +
      `(its scopes: ${scopes.length > 0 ? scopes.join(', ') : 'none'}); the call was not run and will not ` +
      'run if repeated: answer without this tool, or tell the user it is outside what you may do',
    reason: 'scope',
    retryable: false,
  };
}

/** Why a call of a tool that requires a grant may not run in a run holding `grants`, or undefined. */
export function grantRefusal(
  tool: { name: string; requiresGrant: boolean },
  grants: ReadonlySet<string>,
  sessionId: string | undefined,
): ToolErrorInfo | undefined {
  if (!tool.requiresGrant || grants.has(tool.name)) return undefined;
  return {
    kind: 'forbidden',
    message:
      `"${tool.name}" may only run when ${sessionId ? 'this session' : 'this run'} was granted it, and ` +
      'it was not; the call was not run and will not run if repeated: tell the user that using ' +
      `"${tool.name}" needs their grant, or answer without it`,
    reason: 'grant',
    retryable: false,
  };
}

/** Aliases with their keys folded (lowercase, trimmed), as the executor looks them up. */
export type FoldedAliases = ReadonlyMap<string, ReadonlyMap<string, string>>;

const fold = (s: string) => s.trim().toLowerCase();

/** Folds a tool's aliases for lookup; undefined when it has none. */
export function foldAliases(aliases: ArgumentAliases | undefined): FoldedAliases | undefined {
  if (aliases === undefined) return undefined;
  const out = new Map<string, Map<string, string>>();
  for (const [field, table] of Object.entries(aliases)) {
    out.set(field, new Map(Object.entries(table).map(([alias, value]) => [fold(alias), value])));
  }
  return out.size > 0 ? out : undefined;
}

/**
 * Rewrites the string values of top-level arguments that match an alias; returns the arguments to
 * validate and whether anything changed. The caller's object is not changed.
 */
export function applyAliases(
  args: Record<string, unknown>,
  aliases: FoldedAliases | undefined,
): { args: Record<string, unknown>; changed: boolean } {
  if (aliases === undefined) return { args, changed: false };
  let out: Record<string, unknown> | undefined;
  for (const [field, table] of aliases) {
    if (!Object.hasOwn(args, field)) continue;
    const value = args[field];
    if (typeof value !== 'string') continue;
    const target = table.get(fold(value));
    if (target === undefined || target === value) continue;
    out ??= { ...args };
    out[field] = target;
  }
  return out ? { args: out, changed: true } : { args, changed: false };
}

/**
 * What is wrong with a tool's declared aliases against its schema: an argument the schema does not
 * have, or a value outside the argument's `enum`. Empty when nothing is.
 */
export function aliasProblems(aliases: ArgumentAliases | undefined, parameters: unknown): string[] {
  if (aliases === undefined) return [];
  const properties = (parameters as { properties?: Record<string, { enum?: unknown }> }).properties ?? {};
  const problems: string[] = [];
  for (const [field, table] of Object.entries(aliases)) {
    if (!Object.hasOwn(properties, field)) {
      problems.push(`${field}: the tool has no argument "${field}"`);
      continue;
    }
    const allowed = properties[field]?.enum;
    if (!Array.isArray(allowed)) continue;
    for (const [alias, value] of Object.entries(table)) {
      if (!allowed.includes(value))
        problems.push(
          `${field}: "${alias}" stands for "${value}", which is not one of ${JSON.stringify(allowed)}`,
        );
    }
  }
  return problems;
}
