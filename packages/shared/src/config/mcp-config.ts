import { NAME_PATTERN } from '@agent-reach/protocol';
import { MAX_RETRY_ATTEMPTS } from '../constants.js';
import { SCOPE_PATTERN, toolReachProperties, type ToolReachSettings } from '../tools/reach-policy.js';

/** Per-tool settings of an MCP server's tool; each replaces what the server's annotations say. */
export interface McpToolOverride extends ToolReachSettings {
  readonly timeout_ms?: number;
  /** Total attempts including the first. */
  readonly retries?: number;
  readonly requires_confirmation?: boolean;
  readonly read_only?: boolean;
  readonly idempotent?: boolean;
}

/**
 * One MCP server a tool group mounts: its tools become `<name>__<tool>` in that group. Either `command`
 * (stdio: the executor starts the process) or `url` (streamable HTTP).
 */
export interface McpServerSpec {
  /** The namespace of its tools. */
  readonly name: string;
  readonly command?: string;
  readonly args?: readonly string[];
  /** Values may hold `${VAR}`, taken from the executor's environment. */
  readonly env?: Readonly<Record<string, string>>;
  readonly cwd?: string;
  readonly url?: string;
  /** How long it may take to answer `initialize`, in ms. Default: the executor's (MCP_INITIALIZE_TIMEOUT_MS). */
  readonly initialize_timeout_ms?: number;
  /** Header name → name of the executor's environment variable holding its value. */
  readonly headers_from_env?: Readonly<Record<string, string>>;
  /** Only these tools (MCP names) are mounted. */
  readonly allow?: readonly string[];
  /** These tools (MCP names) are not mounted. */
  readonly deny?: readonly string[];
  readonly tools?: Readonly<Record<string, McpToolOverride>>;
  /** The scope of the server's tools (a tool's own `access_scope` wins). Default `mcp:<name>`. */
  readonly access_scope?: string;
  /**
   * MCP tool name → sha256 (hex) of its description, input schema and annotations as accepted. A tool
   * whose digest differs is hidden until a configuration accepts the new one.
   */
  readonly pinned?: Readonly<Record<string, string>>;
}

/** A server and the tool group its tools join. */
export interface MountedMcpServer {
  readonly group: string;
  readonly spec: McpServerSpec;
}

/** Separator between a server's namespace and its tool's own name. */
export const MCP_NAME_SEPARATOR = '__';

const TOOL_NAME = { type: 'string', pattern: NAME_PATTERN.source } as const;
const ENV_NAME = { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]{0,127}$' } as const;

/** JSON Schema of a tool group's `mcp_servers` (referenced from the agents schema). */
export const mcpServersSchema = {
  type: 'array',
  items: {
    type: 'object',
    additionalProperties: false,
    required: ['name'],
    properties: {
      // Leaves room for "__" and a tool name within NAME_PATTERN's 64 characters.
      name: { type: 'string', pattern: '^[a-zA-Z0-9-]{1,32}$' },
      command: { type: 'string', minLength: 1 },
      args: { type: 'array', items: { type: 'string' } },
      env: { type: 'object', propertyNames: ENV_NAME, additionalProperties: { type: 'string' } },
      cwd: { type: 'string', minLength: 1 },
      url: { type: 'string', pattern: '^https?://' },
      initialize_timeout_ms: { type: 'integer', minimum: 100, maximum: 600_000 },
      headers_from_env: {
        type: 'object',
        propertyNames: { type: 'string', pattern: '^[A-Za-z0-9-]{1,64}$' },
        additionalProperties: ENV_NAME,
      },
      allow: { type: 'array', items: TOOL_NAME, uniqueItems: true },
      deny: { type: 'array', items: TOOL_NAME, uniqueItems: true },
      tools: {
        type: 'object',
        propertyNames: TOOL_NAME,
        additionalProperties: {
          type: 'object',
          additionalProperties: false,
          properties: {
            timeout_ms: { type: 'integer', minimum: 1, maximum: 3_600_000 },
            retries: { type: 'integer', minimum: 1, maximum: MAX_RETRY_ATTEMPTS },
            requires_confirmation: { type: 'boolean' },
            read_only: { type: 'boolean' },
            idempotent: { type: 'boolean' },
            ...toolReachProperties,
          },
        },
      },
      access_scope: { type: 'string', pattern: SCOPE_PATTERN.source },
      pinned: {
        type: 'object',
        propertyNames: TOOL_NAME,
        additionalProperties: { type: 'string', pattern: '^[0-9a-f]{64}$' },
      },
    },
  },
} as const;

/** Every MCP server the document's tool groups declare, in order. */
export function mcpServersOf(document: {
  tool_groups?: Readonly<Record<string, { mcp_servers?: readonly McpServerSpec[] }>>;
}): MountedMcpServer[] {
  return Object.entries(document.tool_groups ?? {}).flatMap(([group, g]) =>
    (g.mcp_servers ?? []).map((spec) => ({ group, spec })),
  );
}

/** Whether `tool` lies in the namespace of one of `servers` (`fs__read_file` for server `fs`). */
export function inMcpNamespace(tool: string, servers: readonly MountedMcpServer[]): boolean {
  return servers.some((s) => tool.startsWith(`${s.spec.name}${MCP_NAME_SEPARATOR}`));
}

/**
 * What the schema cannot say of a document's MCP servers: one transport each, not both allow and deny,
 * namespaces declared once across every group.
 */
export function mcpServerProblems(servers: readonly MountedMcpServer[], file: string): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const { group, spec } of servers) {
    const where = `${file}: tool_groups.${group}.mcp_servers "${spec.name}"`;
    if ((spec.command === undefined) === (spec.url === undefined))
      problems.push(`${where}: needs exactly one of "command" (stdio) or "url" (streamable HTTP)`);
    if (spec.url !== undefined && (spec.args || spec.env || spec.cwd))
      problems.push(`${where}: "args", "env" and "cwd" are for a stdio server ("command"), not a "url"`);
    if (spec.command !== undefined && spec.headers_from_env)
      problems.push(`${where}: "headers_from_env" is for a "url" server, not a stdio one`);
    if (spec.allow && spec.deny) problems.push(`${where}: give "allow" or "deny", not both`);
    if (seen.has(spec.name)) problems.push(`${where}: the server name is declared twice`);
    seen.add(spec.name);
  }
  return problems;
}
