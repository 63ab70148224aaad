/**
 * An agent's agents-as-tools: other agents it may call as tools (`ask_<agent>` by default), each call a
 * child run on the fleet, and how deep such calls may nest. Parsed as part of the agents document (see
 * `agents.ts`), checked here.
 */
import { NAME_PATTERN } from '@agent-reach/protocol';
import { agentReferenceList, MAX_TOOL_NAME_CHARS } from './agent-references.js';

/** One agent an agent may call as a tool, as declared (a bare name is `{agent: name}`). */
export interface AgentToolSpec {
  readonly agent: string;
  /** The tool's name as the model sees it. Default `ask_<agent>`. */
  readonly name?: string;
  /** What the model reads of the tool. Default: the called agent's `description`. */
  readonly description?: string;
}

/** The agents-as-tools fields of an agent's declaration. */
export interface AgentTools {
  readonly agent_tools?: ReadonlyArray<string | AgentToolSpec>;
  /**
   * How deep a tree of agent calls started by a run of this agent may grow (the run itself is depth 0);
   * a child inherits its root's limit. Default `DEFAULT_MAX_AGENT_DEPTH`.
   */
  readonly max_agent_depth?: number;
}

/** JSON Schema properties of the agents-as-tools fields, merged into the agent's schema. */
export const agentToolsProperties = {
  agent_tools: agentReferenceList({ name: { type: 'string', pattern: NAME_PATTERN.source } }),
  max_agent_depth: { type: 'integer', minimum: 1, maximum: 10 },
} as const;

/** An agent's agent tools, each as a full spec with its tool name, in declared order. */
export function agentToolTargets(spec: AgentTools): Array<AgentToolSpec & { name: string }> {
  return (spec.agent_tools ?? []).map((t) => {
    const full = typeof t === 'string' ? { agent: t } : t;
    return { ...full, name: full.name ?? agentToolName(full.agent) };
  });
}

/** The default name of the tool that calls `agent` (agent names are already tool-name safe). */
export function agentToolName(agent: string): string {
  return `ask_${agent}`;
}

/**
 * Problems of the agents' agent tools that the schema cannot see, each naming the agent and the entry:
 * a target that is not a declared agent (with a did-you-mean), an agent calling itself, a target or a
 * tool name listed twice, a tool name that is also one of the agent's own tools.
 */
export function agentToolsProblems(
  agents: ReadonlyMap<string, AgentTools & { tools?: readonly string[] }>,
  file: string,
  closest: (name: string, among: Iterable<string>) => string | undefined,
): string[] {
  const problems: string[] = [];
  for (const [name, spec] of agents) {
    if (!Array.isArray(spec.agent_tools)) continue;
    const targets = new Set<string>();
    const names = new Set<string>();
    const own = new Set(Array.isArray(spec.tools) ? spec.tools : []);
    spec.agent_tools.forEach((entry, j) => {
      const full = typeof entry === 'string' ? { agent: entry } : (entry as Partial<AgentToolSpec> | null);
      const target = full?.agent;
      if (typeof target !== 'string') return;
      const tool = typeof full?.name === 'string' ? full.name : agentToolName(target);
      const where = `${file}: agent "${name}": agent_tools[${j}]`;
      if (target === name) problems.push(`${where} "${target}" calls the agent itself`);
      else if (!agents.has(target)) {
        const guess = closest(target, agents.keys());
        problems.push(
          `${where} "${target}" is not a declared agent${guess ? ` (did you mean "${guess}"?)` : ''}`,
        );
      } else if (targets.has(target)) problems.push(`${where} "${target}" is listed twice`);
      if (tool.length > MAX_TOOL_NAME_CHARS)
        problems.push(`${where}: the tool name ${tool} is longer than ${MAX_TOOL_NAME_CHARS} characters`);
      else if (names.has(tool)) problems.push(`${where}: the tool name "${tool}" is used twice`);
      else if (own.has(tool))
        problems.push(`${where}: the tool name "${tool}" is also one of the agent's tools`);
      targets.add(target);
      names.add(tool);
    });
  }
  return problems;
}
