import type { FastifyInstance } from 'fastify';
import { isOpen, mcpServerState, type AgentSpec, type BreakerSnapshot } from '@agent-reach/shared';
import type { McpServerView } from '../../fleet/tool-catalog.js';
import { requirePrincipal } from '../auth.js';
import { withinRedisTimeout } from '../unavailable.js';
import type { ApiContext } from '../options.js';
import { AgentList } from '@agent-reach/protocol';
import { responses } from '../responses.js';

/**
 * `GET /v1/agents`: the agents a key may use, each tool they reach, whether an executor can run it now,
 * its MCP server's state as each executor reports it, and its breaker state.
 */
export function agentRoutes(app: FastifyInstance, ctx: ApiContext): void {
  app.get(
    '/v1/agents',
    {
      schema: {
        tags: ['agents'],
        summary: 'Agents with their reachable tools (from the fleet catalog) and breaker states',
        response: responses({ 200: AgentList }),
      },
    },
    async (request) => {
      const principal = requirePrincipal(ctx.auth, request);
      const { runner, agents } = ctx.deps;
      // The catalog and breakers read on the scheduler's connection, which waits out an outage: bound it.
      const [, snapshots] = await withinRedisTimeout(
        Promise.all([runner.catalog.refresh(), runner.breakers.all()]),
        ctx.options.redisTimeoutMs,
      );
      const breakers = new Map<string, BreakerSnapshot>(snapshots.map((b) => [b.tool, b]));
      const now = Date.now();
      return {
        agents: [...agents.agents.values()]
          .filter((a) => !principal.agents || principal.agents.has(a.name))
          .map((a) => ({
            name: a.name,
            ...(a.description ? { description: a.description } : {}),
            ...(a.max_iterations ? { max_iterations: a.max_iterations } : {}),
            ...(a.max_tokens ? { max_tokens: a.max_tokens } : {}),
            ...(a.max_wall_time_ms ? { max_wall_time_ms: a.max_wall_time_ms } : {}),
            ...(a.allowed_topic ? { allowed_topic: [...a.allowed_topic] } : {}),
            ...policyView(a),
            tools: a.tools.map((name) => {
              const entry = runner.catalog.get(name);
              const b = breakers.get(name);
              const server = runner.catalog.mcpServerOf(name);
              return {
                name,
                registered: entry !== undefined,
                served: runner.catalog.served(name),
                ...(entry
                  ? {
                      description: entry.description,
                      group: entry.group,
                      requires_confirmation: entry.requiresConfirmation,
                    }
                  : {}),
                ...(server ? { mcp_server: serverView(server) } : {}),
                breaker: {
                  state: b?.state ?? 'closed',
                  ...(b?.state === 'open' && b.openUntil !== undefined ? { open_until: b.openUntil } : {}),
                  hidden: isOpen(b, now),
                },
              };
            }),
          })),
      };
    },
  );
}

/** An MCP server as the listing shows it beside each of its tools. */
function serverView(server: McpServerView) {
  return {
    name: server.name,
    state: server.state,
    ...(server.since === undefined ? {} : { since: server.since }),
    ...(server.error === undefined ? {} : { error: server.error }),
    executors: server.executors.map((e) => ({
      executor_id: e.executorId,
      state: mcpServerState(e),
      ...(e.since === undefined ? {} : { since: e.since }),
      restarts: e.restarts ?? 0,
      tools: e.tools,
      digests_refused: e.digestsRefused ?? 0,
      ...(e.error === undefined ? {} : { error: e.error }),
    })),
  };
}

/** An agent's policy as the listing shows it: its topic policy, guard settings and context providers. */
function policyView(a: AgentSpec) {
  return {
    ...(a.allowed_topic?.length ? { topic_policy: a.topic_policy ?? ('refuse' as const) } : {}),
    ...(a.loop && Object.keys(a.loop).length > 0 ? { loop: { ...a.loop } } : {}),
    ...(a.context_providers?.length
      ? {
          context_providers: a.context_providers.map((p) => ({
            tool: p.tool,
            required: p.required === true,
          })),
        }
      : {}),
  };
}
