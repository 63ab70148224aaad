import { createHash } from 'node:crypto';
import { NAME_PATTERN } from '@agent-reach/protocol';
import { MAX_RETRY_ATTEMPTS } from '../constants.js';
import { SCOPE_PATTERN, toolReachProperties, type ToolReachSettings } from '../tools/reach-policy.js';

/** How an OpenAPI source authenticates; the secret is always read from the executor's environment. */
export type OpenApiAuthSpec =
  | { readonly type: 'bearer'; readonly env: string }
  | { readonly type: 'header'; readonly name: string; readonly env: string }
  | { readonly type: 'query'; readonly name: string; readonly env: string };

/** Policy of one operation's tool, overriding the tool defaults. */
export interface OpenApiToolPolicy extends ToolReachSettings {
  readonly timeout_ms?: number;
  /** Attempts including the first (the tool contract's `retry.maxAttempts`). */
  readonly max_attempts?: number;
  readonly backoff_ms?: number;
  readonly requires_confirmation?: boolean;
}

/** One OpenAPI document whose listed operations become tools of the group that declares it. */
export interface OpenApiSourceSpec {
  /** Namespace of its tools: `<name>__<operation>`. Unique across the document's tool groups. */
  readonly name: string;
  /** A file path (relative: to the directory of the executor's agents file) or an http(s) URL. */
  readonly document: string;
  /** Where calls go; default: the document's first `servers` entry. */
  readonly base_url?: string;
  readonly auth?: OpenApiAuthSpec;
  /** Operations to expose: an `operationId`, or `METHOD /path` for operations that have none. */
  readonly operations: readonly string[];
  /** Per-operation policy, keyed by an entry of `operations`. */
  readonly tools?: Readonly<Record<string, OpenApiToolPolicy>>;
  /** The scope of the source's tools (an operation's own `access_scope` wins). Default `openapi:<name>`. */
  readonly access_scope?: string;
}

/** A tool an OpenAPI source declares, known from the configuration alone (no document read). */
export interface DeclaredOpenApiTool {
  readonly name: string;
  readonly group: string;
  readonly source: string;
  /** The entry of `operations` it comes from. */
  readonly operation: string;
}

const SOURCE_NAME_PATTERN = /^[a-zA-Z0-9_-]{1,32}$/;
const ENV_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
/** An HTTP header name (RFC 9110 token). */
const HEADER_NAME_PATTERN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/;
/** `METHOD /path`: how an operation without an `operationId` is named. */
export const OPENAPI_METHOD_PATH_PATTERN = /^(get|put|post|delete|patch|head|options|trace)\s+(\/\S*)$/i;

/** The `openapi` entry of a tool group, as JSON Schema (referenced from the configuration's schema). */
export const openApiSourcesSchema = {
  type: 'array',
  minItems: 1,
  items: {
    type: 'object',
    additionalProperties: false,
    required: ['name', 'document', 'operations'],
    properties: {
      name: { type: 'string', pattern: SOURCE_NAME_PATTERN.source },
      document: { type: 'string', minLength: 1, maxLength: 2048 },
      base_url: { type: 'string', pattern: '^https?://', maxLength: 2048 },
      auth: {
        type: 'object',
        additionalProperties: false,
        required: ['type', 'env'],
        properties: {
          type: { enum: ['bearer', 'header', 'query'] },
          name: { type: 'string', pattern: HEADER_NAME_PATTERN.source },
          env: { type: 'string', pattern: ENV_NAME_PATTERN.source },
        },
      },
      operations: {
        type: 'array',
        minItems: 1,
        maxItems: 500,
        uniqueItems: true,
        items: { type: 'string', minLength: 1, maxLength: 300 },
      },
      tools: {
        type: 'object',
        additionalProperties: {
          type: 'object',
          additionalProperties: false,
          minProperties: 1,
          properties: {
            timeout_ms: { type: 'integer', minimum: 1, maximum: 600_000 },
            max_attempts: { type: 'integer', minimum: 1, maximum: MAX_RETRY_ATTEMPTS },
            backoff_ms: { type: 'integer', minimum: 0, maximum: 600_000 },
            requires_confirmation: { type: 'boolean' },
            ...toolReachProperties,
          },
        },
      },
      access_scope: { type: 'string', pattern: SCOPE_PATTERN.source },
    },
  },
} as const;

/**
 * The tool name of an operation: `<source>__<operation>`, characters outside `[a-zA-Z0-9_-]` replaced by
 * `_` (`METHOD /path` becomes `method_path`), and a name longer than 64 characters cut to 55 plus `_` and
 * 8 hex digits of its hash, so that the name stays unique.
 */
export function openApiToolName(source: string, operation: string): string {
  const m = OPENAPI_METHOD_PATH_PATTERN.exec(operation.trim());
  const op = (m ? `${m[1]!.toLowerCase()}${m[2]!}` : operation)
    .replace(/[^a-zA-Z0-9_-]+/g, '_')
    .replace(/^_+|_+$/g, '');
  const full = `${source}__${op || 'operation'}`;
  if (full.length <= 64) return full;
  const hash = createHash('sha256').update(full).digest('hex').slice(0, 8);
  return `${full.slice(0, 55)}_${hash}`;
}

/** Every tool the tool groups' OpenAPI sources declare, in declaration order. */
export function declaredOpenApiTools(
  toolGroups: Readonly<Record<string, { readonly openapi?: readonly OpenApiSourceSpec[] }>> | undefined,
): DeclaredOpenApiTool[] {
  const out: DeclaredOpenApiTool[] = [];
  for (const [group, spec] of Object.entries(toolGroups ?? {})) {
    for (const source of spec.openapi ?? []) {
      for (const operation of source.operations) {
        out.push({ name: openApiToolName(source.name, operation), group, source: source.name, operation });
      }
    }
  }
  return out;
}

/**
 * What to say of an agent's tool that is in an OpenAPI source's namespace (`<source>__…`) but is none of
 * the tools its `operations` declare, or undefined when the name is in no source's namespace. The
 * mismatch may be in either place (a typo in `operations` makes the agent's correct name unknown), so no
 * rename of the agent's tool is suggested: the source's operations are named, and `config check` checks
 * them against the document.
 */
export function undeclaredOpenApiTool(
  tool: string,
  toolGroups: Readonly<Record<string, { readonly openapi?: readonly OpenApiSourceSpec[] }>> | undefined,
): string | undefined {
  for (const [group, spec] of Object.entries(toolGroups ?? {})) {
    for (const source of spec.openapi ?? []) {
      if (!tool.startsWith(`${source.name}__`)) continue;
      return (
        `is none of the operations OpenAPI source "${source.name}" (tool_groups.${group}) lists ` +
        `(${source.operations.join(', ')}): add its operation to "operations", or correct one of them ` +
        '(config check reads the document and names its operations)'
      );
    }
  }
  return undefined;
}

/**
 * What the schema cannot say about the OpenAPI sources of a schema-valid document: a source name used
 * twice, two operations that come out as one tool name, policy for an operation not listed, a header or
 * query credential without its name. Each problem names the group, the source and the operation.
 */
export function openApiSourceProblems(
  toolGroups: Readonly<Record<string, { readonly openapi?: readonly OpenApiSourceSpec[] }>> | undefined,
  file: string,
): string[] {
  const problems: string[] = [];
  const sources = new Map<string, string>();
  for (const [group, spec] of Object.entries(toolGroups ?? {})) {
    for (const source of spec.openapi ?? []) {
      const where = `${file}: tool_groups.${group}.openapi "${source.name}"`;
      const first = sources.get(source.name);
      if (first !== undefined) problems.push(`${where}: the source name is used twice (also in ${first})`);
      sources.set(source.name, `tool_groups.${group}`);
      if (source.auth && source.auth.type !== 'bearer' && !('name' in source.auth && source.auth.name))
        problems.push(`${where}: auth of type "${source.auth.type}" needs "name"`);
      for (const key of Object.keys(source.tools ?? {})) {
        if (!source.operations.includes(key))
          problems.push(`${where}: tools."${key}" is not one of its operations`);
      }
    }
  }
  const byName = new Map<string, DeclaredOpenApiTool>();
  for (const tool of declaredOpenApiTools(toolGroups)) {
    if (!NAME_PATTERN.test(tool.name)) {
      problems.push(
        `${file}: openapi "${tool.source}": operation "${tool.operation}" gives no valid tool name`,
      );
      continue;
    }
    const other = byName.get(tool.name);
    if (other && !(other.source === tool.source && other.operation === tool.operation))
      problems.push(
        `${file}: openapi "${tool.source}": operation "${tool.operation}" and "${other.operation}" of "${other.source}" both become tool "${tool.name}"`,
      );
    byName.set(tool.name, tool);
  }
  return problems;
}
