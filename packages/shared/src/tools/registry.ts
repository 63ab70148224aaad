import AjvModule, { type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import {
  DEFAULT_RESULT_BUDGET_CHARS,
  DEFAULT_RETRY_BACKOFF_MS,
  DEFAULT_RETRY_MAX_ATTEMPTS,
  DEFAULT_TOOL_GROUP,
  DEFAULT_TOOL_TIMEOUT_MS,
  GROUP_NAME_PATTERN,
  MAX_RETRY_ATTEMPTS,
} from '../constants.js';
import {
  AgentReachError,
  NAME_PATTERN,
  type ToolContext,
  type ToolDefinition,
  type ToolOrigin,
} from '@agent-reach/protocol';
import { closestName } from './suggest.js';
import { aliasProblems, foldAliases, SCOPE_PATTERN, type FoldedAliases } from './reach-policy.js';

// ajv and ajv-formats are CommonJS with a default export; under NodeNext the class sits on `.default`.
const Ajv = AjvModule.default;
const addFormats = addFormatsModule.default;

/** A tool after registration: defaults resolved, schema compiled once. */
export interface RegisteredTool {
  readonly name: string;
  readonly description: string;
  readonly parameters: Record<string, unknown>;
  readonly timeoutMs: number;
  readonly retry: { readonly maxAttempts: number; readonly backoff: 'linear'; readonly backoffMs: number };
  readonly accessScope: string | undefined;
  /** Calls run only where the run's session (or request) granted the tool. */
  readonly requiresGrant: boolean;
  /** Argument aliases, keys folded for lookup; undefined when the tool has none. */
  readonly argumentAliases: FoldedAliases | undefined;
  /** Whether an over-budget result is summarised first; undefined: the fleet's default. */
  readonly summarizeResult: boolean | undefined;
  /** The tool set its budget (else the fleet's `tool_defaults` may replace `resultBudgetChars`). */
  readonly resultBudgetDeclared: boolean;
  readonly group: string;
  readonly requiresConfirmation: boolean;
  readonly readOnly: boolean;
  readonly idempotent: boolean;
  readonly resultBudgetChars: number;
  readonly origin: ToolOrigin | undefined;
  readonly validate: ValidateFunction;
  readonly handler: (args: Record<string, unknown>, ctx: ToolContext) => unknown;
}

/** What a scheduler needs to know of a tool without loading its code; published to Redis by executors. */
export interface ToolCatalogEntry {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  group: string;
  timeoutMs: number;
  maxAttempts: number;
  backoffMs: number;
  requiresConfirmation: boolean;
  /** Declared read-only (absent from executors older than the flag: treat as false). */
  readOnly?: boolean;
  /** Declared idempotent (absent: false). */
  idempotent?: boolean;
  accessScope?: string;
  /** Calls need a grant of the session (absent: false). */
  requiresGrant?: boolean;
  /** Argument aliases (keys folded), so a scheduler checks a call's arguments as the executor will. */
  argumentAliases?: Record<string, Record<string, string>>;
  /** Where the tool comes from (an MCP server's tool, with its digest); absent for tools declared in code. */
  origin?: ToolOrigin;
}

/** The OpenAI function-calling spec of one tool. */
export interface OpenAiToolSpec {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

export function createAjv() {
  const ajv = new Ajv({ allErrors: false, strict: true, useDefaults: true, coerceTypes: false });
  addFormats(ajv);
  return ajv;
}

/**
 * The ajv of schemas the platform did not write (an MCP server's): keywords it does not know are
 * ignored rather than refused, but a schema that is wrong (`type: "foo"`, a broken `$ref`) still is.
 */
export function createLenientAjv() {
  const ajv = new Ajv({ allErrors: false, strict: false, useDefaults: true, coerceTypes: false });
  addFormats(ajv);
  return ajv;
}

export class ToolRegistry {
  readonly #tools = new Map<string, RegisteredTool>();
  readonly #ajv = createAjv();
  readonly #lenient = createLenientAjv();

  /** Registers tools; throws TOOL_DEFINITION_INVALID naming the tool and field on the first bad one. */
  register(...definitions: ToolDefinition[]): this {
    for (const def of definitions) {
      const tool = this.#resolve(def);
      if (this.#tools.has(tool.name)) {
        throw new AgentReachError('TOOL_DUPLICATE', `tool "${tool.name}" is registered twice`);
      }
      this.#tools.set(tool.name, tool);
    }
    return this;
  }

  /**
   * Removes a tool (a configuration reload dropped or replaced it); calls from then on find no such tool.
   * Returns whether it was registered.
   */
  unregister(name: string): boolean {
    const tool = this.#tools.get(name);
    if (!tool) return false;
    this.#tools.delete(name);
    this.#ajv.removeSchema(tool.parameters);
    return true;
  }

  get(name: string): RegisteredTool | undefined {
    return this.#tools.get(name);
  }

  has(name: string): boolean {
    return this.#tools.has(name);
  }

  names(): string[] {
    return [...this.#tools.keys()];
  }

  /** Distinct queue groups of the registered tools. */
  groups(): string[] {
    return [...new Set([...this.#tools.values()].map((t) => t.group))];
  }

  closest(name: string, among: Iterable<string> = this.#tools.keys()): string | undefined {
    return closestName(name, among);
  }

  /** OpenAI function-calling specs for the given tool names, in the given order; unknown names are skipped. */
  openAiTools(names: Iterable<string>): OpenAiToolSpec[] {
    const out: OpenAiToolSpec[] = [];
    for (const name of names) {
      const tool = this.#tools.get(name);
      if (tool) out.push(toOpenAiSpec(tool));
    }
    return out;
  }

  catalog(): ToolCatalogEntry[] {
    return [...this.#tools.values()].map((t) => ({
      name: t.name,
      description: t.description,
      parameters: t.parameters,
      group: t.group,
      timeoutMs: t.timeoutMs,
      maxAttempts: t.retry.maxAttempts,
      backoffMs: t.retry.backoffMs,
      requiresConfirmation: t.requiresConfirmation,
      readOnly: t.readOnly,
      idempotent: t.idempotent,
      ...(t.accessScope === undefined ? {} : { accessScope: t.accessScope }),
      ...(t.requiresGrant ? { requiresGrant: true } : {}),
      ...(t.argumentAliases === undefined
        ? {}
        : {
            argumentAliases: Object.fromEntries(
              [...t.argumentAliases].map(([field, table]) => [field, Object.fromEntries(table)]),
            ),
          }),
      ...(t.origin === undefined ? {} : { origin: t.origin }),
    }));
  }

  #resolve(def: ToolDefinition): RegisteredTool {
    const label = typeof def?.name === 'string' ? `tool "${def.name}"` : 'a tool';
    const fail = (field: string, problem: string): never => {
      throw new AgentReachError('TOOL_DEFINITION_INVALID', `${label}: ${field} ${problem}`);
    };
    if (typeof def.name !== 'string' || !NAME_PATTERN.test(def.name)) {
      fail('name', `must match ${NAME_PATTERN} (got ${JSON.stringify(def.name)})`);
    }
    if (typeof def.description !== 'string' || def.description.trim().length === 0) {
      fail('description', 'must be a non-empty string saying when to use the tool');
    }
    if (typeof def.handler !== 'function') fail('handler', 'must be a function');
    const timeoutMs = def.timeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS;
    if (!Number.isFinite(timeoutMs) || timeoutMs <= 0)
      fail('timeoutMs', `must be a number > 0 (got ${timeoutMs})`);
    const maxAttempts = def.retry?.maxAttempts ?? DEFAULT_RETRY_MAX_ATTEMPTS;
    if (!Number.isInteger(maxAttempts) || maxAttempts < 1 || maxAttempts > MAX_RETRY_ATTEMPTS) {
      fail('retry.maxAttempts', `must be an integer from 1 to ${MAX_RETRY_ATTEMPTS} (got ${maxAttempts})`);
    }
    const backoffMs = def.retry?.backoffMs ?? DEFAULT_RETRY_BACKOFF_MS;
    if (!Number.isFinite(backoffMs) || backoffMs < 0)
      fail('retry.backoffMs', `must be a number >= 0 (got ${backoffMs})`);
    if (def.retry?.backoff !== undefined && def.retry.backoff !== 'linear') {
      fail('retry.backoff', `must be "linear" (got ${JSON.stringify(def.retry.backoff)})`);
    }
    const group = def.group ?? DEFAULT_TOOL_GROUP;
    if (!GROUP_NAME_PATTERN.test(group))
      fail('group', `must match ${GROUP_NAME_PATTERN} (got ${JSON.stringify(group)})`);
    const budget = def.resultBudgetChars ?? DEFAULT_RESULT_BUDGET_CHARS;
    if (!Number.isInteger(budget) || budget < 200)
      fail('resultBudgetChars', `must be an integer >= 200 (got ${budget})`);
    if (def.accessScope !== undefined && !SCOPE_PATTERN.test(def.accessScope))
      fail('accessScope', `must match ${SCOPE_PATTERN} (got ${JSON.stringify(def.accessScope)})`);
    for (const flag of [
      'requiresConfirmation',
      'readOnly',
      'idempotent',
      'requiresGrant',
      'summarizeResult',
    ] as const) {
      if (def[flag] !== undefined && typeof def[flag] !== 'boolean')
        fail(flag, `must be a boolean (got ${JSON.stringify(def[flag])})`);
    }
    const parameters = def.parameters as Record<string, unknown>;
    if (typeof parameters !== 'object' || parameters === null || parameters.type !== 'object') {
      fail('parameters', 'must be a JSON Schema with type "object"');
    }
    const aliasProblem = aliasProblems(def.argumentAliases, parameters)[0];
    if (aliasProblem !== undefined) fail('argumentAliases', aliasProblem);
    let validate: ValidateFunction;
    try {
      validate = (def.origin ? this.#lenient : this.#ajv).compile(parameters);
    } catch (err) {
      return fail('parameters', `is not a valid JSON Schema: ${(err as Error).message}`);
    }
    return Object.freeze({
      name: def.name,
      description: def.description,
      parameters,
      timeoutMs,
      retry: Object.freeze({ maxAttempts, backoff: 'linear' as const, backoffMs }),
      accessScope: def.accessScope,
      requiresGrant: def.requiresGrant ?? false,
      argumentAliases: foldAliases(def.argumentAliases),
      summarizeResult: def.summarizeResult,
      resultBudgetDeclared: def.resultBudgetChars !== undefined,
      group,
      requiresConfirmation: def.requiresConfirmation ?? false,
      readOnly: def.readOnly ?? false,
      idempotent: def.idempotent ?? false,
      resultBudgetChars: budget,
      origin: def.origin,
      validate,
      handler: def.handler as unknown as RegisteredTool['handler'],
    });
  }
}

export function toOpenAiSpec(tool: {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}): OpenAiToolSpec {
  return {
    type: 'function',
    function: { name: tool.name, description: tool.description, parameters: tool.parameters },
  };
}
