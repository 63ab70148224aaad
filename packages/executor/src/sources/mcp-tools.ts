import { createHash } from 'node:crypto';
import {
  NAME_PATTERN,
  noResult,
  ToolError,
  type ToolContext,
  type ToolDefinition,
} from '@agent-reach/protocol';
import { constants, MCP_NAME_SEPARATOR, reachDefinition, type McpServerSpec } from '@agent-reach/shared';
import { AttemptFailure } from '../breakers.js';

/** A tool as an MCP server lists it (`tools/list`), untrusted: every field is checked before use. */
export interface ListedMcpTool {
  name: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  annotations?: {
    readOnlyHint?: boolean;
    destructiveHint?: boolean;
    idempotentHint?: boolean;
    [key: string]: unknown;
  };
  [key: string]: unknown;
}

/** Calls a tool on the server; resolves with the raw `tools/call` result. */
export type McpCall = (tool: string, args: Record<string, unknown>, ctx: ToolContext) => Promise<unknown>;

/** One content item as the model reads it (see docs/mcp.md). */
export type McpContentItem =
  | { type: 'text'; text: string }
  | { type: 'image' | 'audio'; mime_type: string; bytes: number }
  | { type: 'resource'; uri: string; mime_type?: string; text?: string; bytes?: number }
  | { type: 'resource_link'; uri: string; name?: string; mime_type?: string };

/** The platform name of a server's tool: `<server>__<tool>`. */
export function platformName(server: string, tool: string): string {
  return `${server}${MCP_NAME_SEPARATOR}${tool}`;
}

/** JSON with object keys sorted, so that a digest does not depend on the order a server writes keys in. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value as object)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

/** sha256 (hex) of what the model and the platform read of a tool: description, input schema, annotations. */
export function toolDigest(tool: ListedMcpTool): string {
  return createHash('sha256')
    .update(
      canonical({
        description: tool.description ?? '',
        inputSchema: tool.inputSchema,
        annotations: tool.annotations ?? {},
      }),
    )
    .digest('hex');
}

/**
 * Why a listed tool cannot be mounted (a name outside NAME_PATTERN, a schema over the cap or not an
 * object schema), or undefined. Schemas ajv cannot compile are found when the definition is registered.
 */
export function unmountable(server: string, tool: ListedMcpTool): string | undefined {
  const name = platformName(server, String(tool.name));
  if (typeof tool.name !== 'string' || !NAME_PATTERN.test(name))
    return `server "${server}": tool ${JSON.stringify(String(tool.name).slice(0, 80))} has a name that cannot be mounted (${NAME_PATTERN.source} for "${server}__<tool>")`;
  const schema = tool.inputSchema;
  if (typeof schema !== 'object' || schema === null || schema.type !== 'object')
    return `server "${server}": tool "${tool.name}": inputSchema must be a JSON Schema with type "object"`;
  const size = JSON.stringify(schema).length;
  if (size > constants.MCP_MAX_SCHEMA_CHARS)
    return `server "${server}": tool "${tool.name}": inputSchema is ${size} characters, over the cap of ${constants.MCP_MAX_SCHEMA_CHARS}`;
  return undefined;
}

/** The description the model reads: the server's, capped, with where the tool comes from. */
function describe(server: string, tool: ListedMcpTool): string {
  const raw = typeof tool.description === 'string' ? tool.description.trim() : '';
  const max = constants.MCP_MAX_DESCRIPTION_CHARS;
  const text = raw.length > max ? `${raw.slice(0, max)}… (description cut)` : raw;
  return text || `Tool "${tool.name}" of MCP server "${server}" (no description given).`;
}

/**
 * A listed tool as a platform tool. Annotations are defaults, the configuration's `tools` entry wins:
 * `destructiveHint: true` requires confirmation; `readOnlyHint`/`idempotentHint` let replay re-run it.
 */
export function mcpToolDefinition(
  server: McpServerSpec,
  group: string,
  tool: ListedMcpTool,
  digest: string,
  call: McpCall,
): ToolDefinition {
  const o =
    server.tools !== undefined && Object.hasOwn(server.tools, tool.name) ? server.tools[tool.name] : {};
  const a = tool.annotations ?? {};
  const readOnly = o?.read_only ?? a.readOnlyHint === true;
  const schema = { ...tool.inputSchema };
  // Draft markers of other JSON Schema versions would make ajv look for a meta-schema it does not have.
  delete schema.$schema;
  return {
    name: platformName(server.name, tool.name),
    description: describe(server.name, tool),
    parameters: schema as ToolDefinition['parameters'],
    group,
    ...reachDefinition(o, server.access_scope ?? `mcp:${server.name}`),
    requiresConfirmation: o?.requires_confirmation ?? (a.destructiveHint === true && !readOnly),
    readOnly,
    idempotent: o?.idempotent ?? (a.idempotentHint === true || readOnly),
    ...(o?.timeout_ms === undefined ? {} : { timeoutMs: o.timeout_ms }),
    ...(o?.retries === undefined ? {} : { retry: { maxAttempts: o.retries } }),
    origin: { kind: 'mcp', server: server.name, tool: tool.name, digest },
    handler: (async (args: Record<string, unknown>, ctx: ToolContext) =>
      toModelResult(server.name, tool.name, await call(tool.name, args, ctx))) as ToolDefinition['handler'],
  };
}

/**
 * What the model reads of a `tools/call` result: `isError` is a tool error (`execution_error` with the
 * text); structured content beside text only is that object; one text item and nothing else collapses
 * to that string; otherwise `{ content: [...] }`, with `structured_content` when the server gave one. Binary data (images, audio, blobs) is described by its
 * type and size, never sent as base64.
 */
export function toModelResult(server: string, tool: string, raw: unknown): unknown {
  const result = (typeof raw === 'object' && raw !== null ? raw : {}) as {
    content?: unknown;
    structuredContent?: unknown;
    isError?: unknown;
    toolResult?: unknown;
  };
  // Servers of protocol 2024-10-07 answer `{ toolResult }`.
  if (!Array.isArray(result.content) && 'toolResult' in result) return result.toolResult;
  const content = (Array.isArray(result.content) ? result.content : []).map(contentItem);
  if (result.isError === true) {
    const text = content
      .map((c) => (c.type === 'text' ? c.text : ''))
      .join('\n')
      .trim()
      .slice(0, 2000);
    throw new ToolError(
      'execution_error',
      `server "${server}": tool "${tool}" reported an error: ${text || '(no text)'}`,
    );
  }
  const structured = result.structuredContent;
  if (content.length === 0 && structured === undefined) return noResult(`"${tool}" returned no content`);
  // Text beside structured content repeats it (the protocol asks servers to send both): the object is read.
  if (structured !== undefined && content.every((c) => c.type === 'text')) return structured;
  const only = content[0];
  if (content.length === 1 && only?.type === 'text' && structured === undefined) return only.text;
  return { content, ...(structured === undefined ? {} : { structured_content: structured }) };
}

function contentItem(item: unknown): McpContentItem {
  const c = (typeof item === 'object' && item !== null ? item : {}) as Record<string, unknown>;
  const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
  const base64Bytes = (v: unknown) => (typeof v === 'string' ? Math.floor((v.length * 3) / 4) : 0);
  switch (c.type) {
    case 'text':
      return { type: 'text', text: str(c.text) ?? '' };
    case 'image':
    case 'audio':
      return {
        type: c.type,
        mime_type: str(c.mimeType) ?? 'application/octet-stream',
        bytes: base64Bytes(c.data),
      };
    case 'resource': {
      const r = (typeof c.resource === 'object' && c.resource !== null ? c.resource : {}) as Record<
        string,
        unknown
      >;
      const mime = str(r.mimeType);
      const text = str(r.text);
      return {
        type: 'resource',
        uri: str(r.uri) ?? '',
        ...(mime === undefined ? {} : { mime_type: mime }),
        ...(text === undefined ? { bytes: base64Bytes(r.blob) } : { text }),
      };
    }
    case 'resource_link': {
      const mime = str(c.mimeType);
      const name = str(c.name);
      return {
        type: 'resource_link',
        uri: str(c.uri) ?? '',
        ...(name === undefined ? {} : { name }),
        ...(mime === undefined ? {} : { mime_type: mime }),
      };
    }
    default:
      return {
        type: 'text',
        text: `(content of type ${JSON.stringify(String(c.type)).slice(0, 40)} left out)`,
      };
  }
}

/** Maps a failed `tools/call` to the platform's kinds. */
export function callError(server: string, tool: string, err: unknown, overflow: string | undefined): Error {
  const e = err as { code?: unknown; message?: unknown; name?: unknown };
  const message = typeof e?.message === 'string' ? e.message : String(err);
  const where = `server "${server}": tool "${tool}"`;
  if (overflow !== undefined) return new ToolError('execution_error', `${where}: ${overflow}`);
  if (err instanceof ToolError) return err;
  switch (e?.code) {
    case -32602: // InvalidParams
      return new ToolError('invalid_arguments', `${where}: ${message}`);
    case -32001: // RequestTimeout
      return new ToolError('timeout', `${where}: ${message}`);
    case -32000: // ConnectionClosed
      // The server crashed or was stopped: it is restarted, and the retry waits for it. Not the tool's
      // failure, so not counted against its breaker.
      return new AttemptFailure(
        'transient',
        `${where}: the server's connection closed during the call (${message})`,
        undefined,
        undefined,
        false,
      );
    default:
      break;
  }
  if (typeof e?.code === 'number') return new ToolError('execution_error', `${where}: ${message}`);
  if (e?.name === 'AbortError') return err as Error;
  // No JSON-RPC answer at all (fetch failed, a socket reset): the server may be back for the next attempt.
  return new ToolError('transient', `${where}: ${message}`);
}
