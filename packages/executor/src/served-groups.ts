import { mcpServersOf, type ConfigDocument, type MountedMcpServer } from '@agent-reach/shared';

/**
 * The one place an executor decides what it starts by tool group: of the MCP servers and OpenAPI
 * sources the configuration declares, only those of the groups it serves. Its tool modules are the ones
 * it is given (`--tools`), and the agents' tool names are checked against the fleet, not against it: an
 * executor started for some groups needs nothing of another group to be present (its modules, its
 * servers' commands, its documents).
 */
export interface ServedGroups {
  /** The groups named (`--groups`, `EXECUTOR_GROUPS`); undefined: every group of what it loads. */
  readonly named: readonly string[] | undefined;
  /** Whether this executor serves `group`. */
  serves(group: string): boolean;
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
    toolGroups,
    mcpServers: (document) => mcpServersOf({ tool_groups: toolGroups(document.tool_groups) }),
  };
}
