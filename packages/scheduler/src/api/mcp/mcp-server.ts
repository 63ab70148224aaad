import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  CancelledNotificationSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import type { AgentSpec } from '@agent-reach/shared';
import type { Principal } from '../auth.js';
import { MCP_SERVER_INFO, MCP_TIMEOUT_REASON } from '../constants.js';
import { toApiError } from '../errors.js';
import type { ApiContext } from '../options.js';
import { AgentToolInput, callAgent, cancelCallRun } from './agent-call.js';
import type { McpCallRegistry } from './call-registry.js';
import { structuredOutputOf } from './structured-output.js';

/** What one MCP request is served with besides the API context. */
export interface McpRequestContext {
  principal: Principal;
  /** The client's session, a name the server gave it at `initialize`; absent for a client that sends none. */
  sessionId: string | undefined;
  traceparent: string | undefined;
  registry: McpCallRegistry;
  /** Takes one of this process's places for calls that follow a run; false when none is left. */
  takeSlot(): boolean;
  releaseSlot(): void;
}

const INSTRUCTIONS =
  "Each tool is an Agent-Reach agent: calling it starts a durable run of that agent with `input` as the task, and answers with the run's answer. Progress messages and the result's `_meta` carry the run id (`GET /v1/runs/{id}` finds the run after the call).";

/** The agents a key may use, in the agents file's order. */
function agentsOf(ctx: ApiContext, principal: Principal): AgentSpec[] {
  return [...ctx.deps.agents.agents.values()].filter(
    (a) => !principal.agents || principal.agents.has(a.name),
  );
}

/** Every agent tool's input schema as plain JSON (the TypeBox schema carries symbol keys). */
const INPUT_SCHEMA = JSON.parse(JSON.stringify(AgentToolInput)) as Tool['inputSchema'];

/** An agent as an MCP tool. */
function toolOf(agent: AgentSpec): Tool {
  const structured = structuredOutputOf(agent);
  return {
    name: agent.name,
    description:
      agent.description ?? `Runs the Agent-Reach agent ${agent.name} on a task and answers with its result.`,
    inputSchema: INPUT_SCHEMA,
    ...(structured ? { outputSchema: structured.schema } : {}),
  };
}

/**
 * The MCP server of one HTTP request (the transport is stateless): `tools/list` lists the agents the key
 * may use, `tools/call` runs one (an agent the key may not use is as unknown as one that does not
 * exist), and `notifications/cancelled` cancels the run of the call it names — unless its reason says
 * the client's request timed out, when the client merely stopped waiting.
 */
export function createMcpServer(ctx: ApiContext, rc: McpRequestContext): Server {
  const log = ctx.log.child({ component: 'mcp', key: rc.principal.name });
  const server = new Server(MCP_SERVER_INFO, {
    capabilities: { tools: { listChanged: false } },
    instructions: INSTRUCTIONS,
  });
  server.onerror = (err) => log.debug({ err }, 'mcp protocol error');

  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: agentsOf(ctx, rc.principal).map(toolOf),
  }));

  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const { name } = request.params;
    const agent = ctx.deps.agents.agents.get(name);
    if (!agent || (rc.principal.agents && !rc.principal.agents.has(name)))
      throw new McpError(ErrorCode.InvalidParams, `Tool ${name} not found`);
    if (!rc.takeSlot())
      return {
        isError: true,
        content: [
          { type: 'text', text: 'RATE_LIMITED: too many calls are open on this server; retry later' },
        ],
        _meta: { 'agent-reach/error_code': 'RATE_LIMITED' },
      };
    const token = extra._meta?.progressToken;
    let step = 0;
    try {
      return await callAgent(ctx, rc.principal, rc.registry, {
        agent,
        arguments: request.params.arguments ?? {},
        signal: extra.signal,
        ...(token === undefined
          ? {}
          : {
              progress: (message: string) =>
                extra.sendNotification({
                  method: 'notifications/progress',
                  params: { progressToken: token, progress: ++step, message },
                }),
            }),
        ...(rc.sessionId === undefined
          ? {}
          : { ref: { principalId: rc.principal.id, sessionId: rc.sessionId, requestId: extra.requestId } }),
        idempotencyKey: extra._meta?.['agent-reach/idempotency_key'],
        ...(rc.traceparent === undefined ? {} : { traceparent: rc.traceparent }),
      });
    } catch (err) {
      // Redis unavailable (UNAVAILABLE) or a defect (INTERNAL): a protocol error, worded as the API words it.
      const api = toApiError(err as Error);
      if (api.code === 'UNAVAILABLE') log.warn({ err, agent: name }, 'mcp call failed: Redis unavailable');
      else log.error({ err, agent: name }, 'mcp call failed');
      throw new McpError(ErrorCode.InternalError, `${api.code}: ${api.message}`);
    } finally {
      rc.releaseSlot();
    }
  });

  server.setNotificationHandler(CancelledNotificationSchema, async (notification) => {
    const { requestId, reason } = notification.params;
    if (requestId === undefined) return;
    if (rc.sessionId === undefined) {
      log.info({ requestId }, 'mcp cancellation without a session: its run cannot be found');
      return;
    }
    if (reason !== undefined && MCP_TIMEOUT_REASON.test(reason)) {
      log.info({ requestId }, 'mcp client stopped waiting: the run goes on');
      return;
    }
    const ref = { principalId: rc.principal.id, sessionId: rc.sessionId, requestId };
    const runId = await rc.registry.cancelled(ref);
    if (runId === undefined) return;
    const cancelled = await cancelCallRun(ctx, runId);
    log.info({ runId, requestId, cancelled }, 'mcp call cancelled: run cancellation requested');
  });
  return server;
}
