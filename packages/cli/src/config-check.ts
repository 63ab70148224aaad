import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { createDemoTools, loadToolModules } from '@agent-reach/executor';
import { AgentReachError, createKeys } from '@agent-reach/protocol';
import {
  loadConfig,
  maskUrl,
  parseAgents,
  parseWorkflows,
  redisNodeUrls,
  ToolRegistry,
  workflowsFileOf,
  type AgentReachConfig,
  type AgentsFile,
} from '@agent-reach/shared';

/**
 * Validates the configuration, the tool registry (built-in tools plus TOOL_MODULES), the agents file
 * against it and the workflows file against the agents, without touching Redis. Prints each agent's
 * reachable tools and each workflow's nodes; returns the problems found.
 */
export async function configCheck(
  env: Record<string, string | undefined>,
  print: (line: string) => void,
): Promise<string[]> {
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
  let text: string;
  try {
    text = readFileSync(config.agentsFile, 'utf8');
  } catch (err) {
    return [...problems, `${config.agentsFile}: cannot read agents file: ${(err as Error).message}`];
  }
  let agents: AgentsFile | undefined;
  try {
    agents = parseAgents(text, config.agentsFile, problems.length ? undefined : registry.names());
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
  } catch (err) {
    const e = err as AgentReachError;
    problems.push(...(e.details?.length ? e.details : [e.message]));
  }
  if (agents) problems.push(...checkWorkflows(workflowsFileOf(config), agents, print));
  return problems;
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

/** The workflows file's problems (a cycle, an unknown agent or dependency); prints each workflow's nodes. */
function checkWorkflows(
  file: string | undefined,
  agents: AgentsFile,
  print: (line: string) => void,
): string[] {
  if (file === undefined) return [];
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    return [`${file}: cannot read workflows file: ${(err as Error).message}`];
  }
  try {
    const { workflows } = parseWorkflows(text, file, agents.agents.keys());
    print(`workflows file ${file}: ${workflows.size} workflow(s)`);
    for (const w of workflows.values()) {
      const nodes = w.nodes.map(
        (n) => `${n.id} (${n.agent}${n.depends_on.length ? ` after ${n.depends_on.join(', ')}` : ''})`,
      );
      print(`workflow ${w.name}: ${nodes.join('; ')}`);
    }
    return [];
  } catch (err) {
    const e = err as AgentReachError;
    return e.details?.length ? [...e.details] : [e.message];
  }
}
