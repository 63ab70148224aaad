import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { requirePrincipal } from '../auth.js';
import { MCP_CALL_TTL_S, MCP_PATH } from '../constants.js';
import { ApiError, sendError } from '../errors.js';
import type { ApiContext } from '../options.js';
import { McpCallRegistry } from './call-registry.js';
import { createMcpServer } from './mcp-server.js';

const SESSION_HEADER = 'mcp-session-id';
/** A session id as the MCP spec allows it: visible ASCII. */
const SESSION_ID = /^[\x21-\x7e]{1,128}$/;

/** A new MCP session id, handed out at `initialize`: `mcp_` and a random UUID. */
export function newMcpSessionId(): string {
  return `mcp_${randomUUID()}`;
}

const isInitialize = (body: unknown) =>
  Array.isArray(body) ? body.some((m) => isInitializeRequest(m)) : isInitializeRequest(body);

/**
 * `/mcp`: every agent a key may use as an MCP tool, over streamable HTTP. The transport is stateless —
 * each POST gets a server and a transport of its own, so any scheduler can serve any request — and the
 * session id handed out at `initialize` only names the client, so that a cancellation (a POST of its
 * own, maybe to another scheduler) finds the run of the call it cancels. GET opens no stream (405);
 * DELETE has nothing to end (204).
 */
export function mcpRoutes(app: FastifyInstance, ctx: ApiContext): void {
  const door: McpDoor = {
    registry: new McpCallRegistry(ctx.deps.redis, ctx.deps.keys, MCP_CALL_TTL_S),
    open: new Set<Server>(),
    calls: 0,
    countRequest: app.createRateLimit(),
  };
  app.addHook('preClose', async () => {
    await Promise.allSettled([...door.open].map((s) => s.close()));
  });
  app.post<PostRoute>(MCP_PATH, { schema: POST_SCHEMA }, (request, reply) =>
    handleMessage(ctx, door, request, reply),
  );

  app.get(MCP_PATH, { schema: { hide: true } }, async (_request, reply) =>
    sendError(
      reply.header('allow', 'POST, DELETE'),
      new ApiError(
        'VALIDATION_FAILED',
        'this MCP server is stateless: it opens no stream on GET; POST messages',
        undefined,
        405,
      ),
    ),
  );
  app.delete(MCP_PATH, { schema: { hide: true } }, async (_request, reply) => reply.code(204).send());
}

type PostRoute = { Headers: { [SESSION_HEADER]?: string; traceparent?: string } };

/** The MCP door's state in this process: the call registry, the servers open, the calls followed. */
interface McpDoor {
  readonly registry: McpCallRegistry;
  readonly open: Set<Server>;
  /** Tool calls followed now; they share the cap of event streams. */
  calls: number;
  /** Counts one request against the caller's rate limit (the one every route counts). */
  readonly countRequest: ReturnType<FastifyInstance['createRateLimit']>;
}

/**
 * A JSON-RPC batch (the MCP revisions before 2025-06-18 allow them, and the SDK still takes them) counts
 * as many requests against the rate limit as it holds messages: the route counted one, this counts the
 * rest. True when the batch went over the limit (and was answered 429).
 */
async function overRateLimit(door: McpDoor, request: FastifyRequest, reply: FastifyReply): Promise<boolean> {
  const messages = Array.isArray(request.body) ? request.body.length : 1;
  for (let counted = 1; counted < messages; counted += 1) {
    const limit = await door.countRequest(request);
    if (limit.isAllowed || !limit.isExceeded) continue;
    const retry = limit.ttlInSeconds;
    sendError(
      reply.header('retry-after', String(retry)),
      new ApiError(
        'RATE_LIMITED',
        `rate limit exceeded: a batch of ${messages} messages counts as ${messages} requests; retry in ${retry} s`,
      ),
    );
    return true;
  }
  return false;
}

const POST_SCHEMA = {
  tags: ['mcp'],
  summary: 'MCP over streamable HTTP: each agent the key may use is a tool',
  description:
    "JSON-RPC messages of the Model Context Protocol (`initialize`, `tools/list`, `tools/call`, `notifications/cancelled`). A tool call starts a durable run as `POST /v1/runs` does (same checks and limits; metadata `door: mcp`), sends `notifications/progress` for each step when the client sent a `progressToken`, and answers with the run's answer; the run id is in every progress message and in the result's `_meta`. A cancellation cancels the run, unless its reason says the request timed out. See docs/mcp-door.md.",
};

/** `POST /mcp`: one request's messages, answered by a server and transport of its own. */
async function handleMessage(
  ctx: ApiContext,
  door: McpDoor,
  request: FastifyRequest<PostRoute>,
  reply: FastifyReply,
): Promise<void> {
  const principal = requirePrincipal(ctx.auth, request);
  if (await overRateLimit(door, request, reply)) return;
  const sent = request.headers[SESSION_HEADER];
  let sessionId = sent !== undefined && SESSION_ID.test(sent) ? sent : undefined;
  if (isInitialize(request.body)) {
    sessionId = newMcpSessionId();
    // The transport writes its own headers after this one; Node keeps both.
    reply.raw.setHeader(SESSION_HEADER, sessionId);
  }
  const server = createMcpServer(ctx, {
    principal,
    sessionId,
    traceparent: request.headers.traceparent,
    registry: door.registry,
    takeSlot: () => {
      if (door.calls >= ctx.options.maxEventStreams) return false;
      door.calls += 1;
      return true;
    },
    releaseSlot: () => {
      door.calls -= 1;
    },
  });
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  reply.hijack();
  door.open.add(server);
  // The response ended or the client went away: stop following runs (they go on).
  reply.raw.on('close', () => {
    door.open.delete(server);
    server.close().catch((err: unknown) => ctx.log.debug({ err }, 'mcp server close failed'));
  });
  try {
    await server.connect(transport);
    await transport.handleRequest(request.raw, reply.raw, request.body);
  } catch (err) {
    ctx.log.error({ err }, 'mcp request failed');
    if (!reply.raw.headersSent)
      reply.raw.writeHead(500, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          jsonrpc: '2.0',
          error: { code: -32603, message: 'internal error' },
          id: null,
        }),
      );
    else reply.raw.end();
  }
}
