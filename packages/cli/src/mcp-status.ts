import { createKeys } from '@agent-reach/protocol';
import {
  createLogger,
  mcpServersOf,
  mcpServerState,
  MCP_NAME_SEPARATOR,
  readFleetConfig,
  type AgentsFile,
} from '@agent-reach/shared';
import { ToolCatalog, type McpServerView } from '@agent-reach/scheduler/internal';
import type { CliContext } from './context.js';

/**
 * `agent-reach mcp`: the MCP servers of the configuration in force as the live executors run them (state,
 * since when, restarts, tools, digests refused, a change refused, the server's own error), then each
 * agent's MCP tools, served now or not and why.
 */
export async function mcpStatus(ctx: CliContext, print: (line: string) => void): Promise<void> {
  const keys = createKeys(ctx.config.keyPrefix);
  const fleet = await readFleetConfig({
    redis: ctx.redis,
    keys,
    file: ctx.config.agentsFile,
    logger: createLogger('cli', { level: 'silent' }),
  });
  const configured = mcpServersOf(fleet.agents.document);
  const catalog = await new ToolCatalog(ctx.redis, keys, { mcpServers: () => configured }).refresh();
  if (configured.length === 0) {
    print(`configuration version ${fleet.version} declares no MCP server`);
    return;
  }
  for (const { group, spec } of configured) {
    const view = catalog.mcpServers().find((s) => s.name === spec.name);
    if (!view) {
      print(`${spec.name} (group ${group}): no live executor runs it (none serves the group)`);
      continue;
    }
    print(`${spec.name} (group ${group}): ${stateLine(view)}`);
    for (const e of view.executors) {
      const parts = [
        `${mcpServerState(e)}${e.since === undefined ? '' : ` since ${new Date(e.since).toISOString()}`}`,
        `${e.tools} tool(s)`,
        `${e.restarts ?? 0} restart(s)`,
        ...(e.digestsRefused ? [`${e.digestsRefused} hidden for a changed digest`] : []),
        ...(e.version === undefined ? [] : [`settings of version ${e.version}`]),
        ...(e.pendingVersion === undefined ? [] : [`version ${e.pendingVersion} starting`]),
      ];
      print(`  ${e.executorId}: ${parts.join(', ')}`);
      if (e.error && mcpServerState(e) !== 'up') print(`    error: ${e.error}`);
      if (e.changeRefused)
        print(
          `    change of version ${e.changeRefused.version} refused at ${new Date(e.changeRefused.at).toISOString()}: ${e.changeRefused.error}`,
        );
    }
  }
  for (const line of agentLines(fleet.agents, catalog)) print(line);
}

function stateLine(view: McpServerView): string {
  const since = view.since === undefined ? '' : ` since ${new Date(view.since).toISOString()}`;
  return `${view.state}${since} on ${view.executors.length} executor(s)${view.error ? `: ${view.error}` : ''}`;
}

/** Each agent's MCP tools: served, or why not. */
function agentLines(agents: AgentsFile, catalog: ToolCatalog): string[] {
  const lines: string[] = [];
  for (const agent of agents.agents.values()) {
    const tools = agent.tools.filter((t) => t.includes(MCP_NAME_SEPARATOR));
    if (tools.length === 0) continue;
    const parts = tools.map((tool) => {
      if (catalog.served(tool)) return `${tool} served`;
      const server = catalog.mcpServerOf(tool);
      if (server && server.state !== 'up')
        return `${tool} not served (server ${server.name} ${server.state})`;
      return `${tool} not served (no executor offers it)`;
    });
    lines.push(`agent ${agent.name}: ${parts.join('; ')}`);
  }
  return lines;
}
