import type { ToolDefinition } from '@agent-reach/protocol';
import { constants, mcpServersOf, type ConfigDocument, type MountedMcpServer } from '@agent-reach/shared';

/**
 * The one place an executor decides what it loads by tool group: of the tools its modules define and
 * of the MCP servers and OpenAPI sources the configuration declares, only those of the groups it
 * serves. An executor started for some groups therefore needs nothing of another group to be present
 * (its modules, its servers' commands, its documents).
 */
export interface ServedGroups {
  /** The groups named (`--groups`, `EXECUTOR_GROUPS`); undefined: every group of what it loads. */
  readonly named: readonly string[] | undefined;
  /** Whether this executor serves `group`. */
  serves(group: string): boolean;
  /** The tools of the groups served, and the names of those left out. */
  tools(defs: readonly ToolDefinition[]): { kept: ToolDefinition[]; left: string[] };
  /** The configuration's tool groups (limits, MCP servers, OpenAPI sources) reduced to those served. */
  toolGroups<T>(groups: Readonly<Record<string, T>> | undefined): Record<string, T>;
  /** The MCP servers of the groups served that `document` declares. */
  mcpServers(document: ConfigDocument): MountedMcpServer[];
}

/** The selection of an executor started for `named` groups (undefined: no groups named). */
export function servedGroups(named: readonly string[] | undefined): ServedGroups {
  const set = named === undefined ? undefined : new Set(named);
  const serves = (group: string) => set === undefined || set.has(group);
  const toolGroups = <T>(groups: Readonly<Record<string, T>> | undefined): Record<string, T> =>
    Object.fromEntries(Object.entries(groups ?? {}).filter(([g]) => serves(g)));
  return {
    named,
    serves,
    tools(defs) {
      const kept: ToolDefinition[] = [];
      const left: string[] = [];
      for (const def of defs) {
        if (serves(def.group ?? constants.DEFAULT_TOOL_GROUP)) kept.push(def);
        else left.push(def.name);
      }
      return { kept, left };
    },
    toolGroups,
    mcpServers: (document) => mcpServersOf({ tool_groups: toolGroups(document.tool_groups) }),
  };
}
