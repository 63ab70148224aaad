import { Redis } from 'ioredis';
import { createDemoTools, loadToolModules } from '@agent-reach/executor';
import { createKeys, maskUrl, redisNodeUrls, type AgentReachError } from '@agent-reach/protocol';
import {
  loadConfig,
  parseConfigDocument,
  readConfigFile,
  ToolRegistry,
  workflowsFileOf,
  type AgentReachConfig,
  type AgentsFile,
} from '@agent-reach/shared';
import { checkOpenApiSources } from './config-openapi.js';
import { checkMcpServers } from './config-probe.js';
import { checkProviders, missingOptionalFiles, namedModels } from './config-providers.js';

/** How far `config check` goes. */
export interface ConfigCheckOptions {
  /**
   * Reach what the agents file points at: start (or connect to) each MCP server and list its tools, and
   * check the names the file uses against them. Default false: only what can be checked offline.
   */
  probe?: boolean;
}

/**
 * Validates the configuration, the tool registry (built-in tools plus TOOL_MODULES), the agents file
 * against it and the workflows (a `workflows` key of the agents file, else the workflows file) against the
 * agents and ALLOWED_MODELS, without touching Redis: the same check `config apply` makes. Prints each
 * agent's reachable tools and each workflow's nodes; returns every problem found, at once.
 */
export async function configCheck(
  env: Record<string, string | undefined>,
  print: (line: string) => void,
  options: ConfigCheckOptions = {},
): Promise<string[]> {
  const probe = options.probe ?? false;
  const problems: string[] = [];
  let config;
  try {
    config = loadConfig(env);
  } catch (err) {
    return [(err as Error).message];
  }
  print(
    `config ok: redis ${maskUrl(config.redisUrl)}, prefix ${config.keyPrefix}, agents file ${config.agentsFile}`,
  );
  const local = await localRegistry(config, env);
  problems.push(...local.problems);
  const registry = local.registry;
  if (local.problems.length === 0) {
    print(`tools ok: ${registry.names().length} registered (${registry.names().join(', ')})`);
  }
  let document: unknown;
  try {
    document = readConfigFile(config.agentsFile, 'agents file');
  } catch (err) {
    return [...problems, (err as Error).message];
  }
  const declaresOwn = typeof document === 'object' && document !== null && 'workflows' in document;
  const workflowsFile = declaresOwn ? undefined : workflowsFileOf(config);
  let parsed: AgentsFile | undefined;
  try {
    const { agents, workflows } = parseConfigDocument(document, config.agentsFile, {
      knownTools: problems.length ? undefined : registry.names(),
      workflows: { file: workflowsFile },
      allowedModels: namedModels(config),
    });
    parsed = agents;
    printAgents(agents, registry, print);
    if (declaresOwn || workflowsFile !== undefined)
      print(`workflows of ${workflowsFile ?? config.agentsFile}: ${workflows.workflows.size} workflow(s)`);
    for (const w of workflows.workflows.values()) {
      const nodes = w.nodes.map(
        (n) => `${n.id} (${n.agent}${n.depends_on.length ? ` after ${n.depends_on.join(', ')}` : ''})`,
      );
      print(`workflow ${w.name}: ${nodes.join('; ')}`);
    }
  } catch (err) {
    const e = err as AgentReachError;
    problems.push(...(e.details?.length ? e.details : [e.message]));
  }
  const mcp = await checkMcpServers(document, parsed, config.agentsFile, env, { probe, print });
  for (const w of mcp.warnings) print(`warning: ${w}`);
  problems.push(...mcp.problems);
  problems.push(...(await checkOpenApiSources(document, config.agentsFile, env, { probe, print })));
  const providers = checkProviders(config, env, parsed, print);
  for (const w of [...missingOptionalFiles(config), ...providers.warnings]) print(`warning: ${w}`);
  problems.push(...providers.problems);
  return problems;
}

/** Each agent's reachable tools (with approval and group) and each tool group's limits. */
function printAgents(agents: AgentsFile, registry: ToolRegistry, print: (line: string) => void): void {
  for (const spec of agents.agents.values()) {
    const tools = spec.tools.map((name) => {
      const tool = registry.get(name);
      return tool
        ? `${name}${tool.requiresConfirmation ? ' (needs approval)' : ''}${tool.group !== 'default' ? ` [group ${tool.group}]` : ''}`
        : name;
    });
    const budgets = [
      ...(spec.max_tokens === undefined ? [] : [`max_tokens ${spec.max_tokens}`]),
      ...(spec.max_wall_time_ms === undefined ? [] : [`max_wall_time_ms ${spec.max_wall_time_ms}`]),
    ];
    print(
      `agent ${spec.name}: ${tools.join(', ') || '(no tools)'}; max_iterations ${spec.max_iterations ?? 'default'}${budgets.map((b) => `; ${b}`).join('')}`,
    );
  }
  for (const [group, limits] of agents.toolGroups) {
    const parts = [
      ...(limits.concurrency === undefined ? [] : [`concurrency ${limits.concurrency}`]),
      ...(limits.rate ? [`at most ${limits.rate.max} starts per ${limits.rate.per_ms} ms`] : []),
    ];
    print(`tool group ${group}: ${parts.join(', ')} (fleet-wide)`);
  }
}

/**
 * The tools an executor started with this configuration would register (built-in tools plus
 * TOOL_MODULES), without connecting to Redis; problems loading them are returned, not thrown.
 */
export async function localRegistry(
  config: AgentReachConfig,
  env: Record<string, string | undefined>,
): Promise<{ registry: ToolRegistry; problems: string[] }> {
  // Tool factories may keep a client for later use; this one never connects.
  const redis = new Redis(redisNodeUrls(config.redisUrl)[0] ?? config.redisUrl, {
    lazyConnect: true,
    enableOfflineQueue: false,
  });
  const registry = new ToolRegistry();
  try {
    const modules = (env.TOOL_MODULES ?? '').split(',').filter(Boolean);
    const factories = await loadToolModules(modules);
    const deps = { redis, keys: createKeys(config.keyPrefix) };
    registry.register(...createDemoTools({ ...deps, outputsDir: config.outputsDir }));
    for (const f of factories) registry.register(...f(deps));
    return { registry, problems: [] };
  } catch (err) {
    return { registry, problems: [(err as AgentReachError).message] };
  } finally {
    redis.disconnect();
  }
}
