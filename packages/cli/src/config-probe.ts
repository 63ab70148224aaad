import { accessSync, constants as fsConstants, statSync } from 'node:fs';
import { delimiter, isAbsolute, join, resolve } from 'node:path';
import { probeMcpServer } from '@agent-reach/executor';
import {
  closestName,
  createLogger,
  MCP_NAME_SEPARATOR,
  mcpServersOf,
  type AgentsFile,
  type McpServerSpec,
  type MountedMcpServer,
} from '@agent-reach/shared';

/** What the MCP checks of `config check` found: problems fail the check, warnings are printed. */
export interface McpCheckReport {
  problems: string[];
  warnings: string[];
}

/**
 * The MCP servers of an agents file, checked: offline, that each stdio server's command can be found
 * (on PATH, or as a file); with `probe`, each server is started (or reached) once, its tools listed, and
 * the names the file uses — agents' `<server>__<tool>`, `allow`, `deny`, `tools`, `pinned` — checked
 * against the real ones, each unknown name with the closest real one.
 */
export async function checkMcpServers(
  document: unknown,
  agents: AgentsFile | undefined,
  file: string,
  env: Record<string, string | undefined>,
  options: { probe: boolean; print: (line: string) => void },
): Promise<McpCheckReport> {
  const report: McpCheckReport = { problems: [], warnings: [] };
  const servers = mcpServersOf((document ?? {}) as Parameters<typeof mcpServersOf>[0]).filter(
    (s) => typeof s?.spec?.name === 'string',
  );
  for (const server of servers) {
    const where = `${file}: tool_groups.${server.group}.mcp_servers "${server.spec.name}"`;
    const missing = missingCommand(server.spec, env);
    if (missing) report.warnings.push(`${where}: ${missing}`);
  }
  if (!options.probe) return report;
  const logger = createLogger('config-check', { level: 'silent' });
  const probed = await Promise.all(
    servers.map(async (server) => ({ server, outcome: await probeMcpServer(server.spec, env, logger) })),
  );
  for (const { server, outcome } of probed) {
    const where = `${file}: tool_groups.${server.group}.mcp_servers "${server.spec.name}"`;
    if (!outcome.ok) {
      report.problems.push(`${where}: could not be started or reached: ${outcome.error}`);
      continue;
    }
    const names = outcome.tools.map((t) => t.name);
    options.print(`mcp server ${server.spec.name}: up, ${names.length} tool(s) (${names.join(', ')})`);
    report.problems.push(...namesProblems(server, names, where));
    if (agents) report.problems.push(...agentToolProblems(server, names, agents, file));
  }
  return report;
}

/**
 * Why a stdio server cannot be started from here (its folder is missing, its command is not on PATH or not
 * an executable file), or undefined when it can (or is reached by URL).
 */
export function missingCommand(
  spec: McpServerSpec,
  env: Record<string, string | undefined>,
): string | undefined {
  const command = spec.command;
  if (command === undefined) return undefined;
  if (spec.cwd !== undefined && !isDirectory(resolve(spec.cwd)))
    return `its folder "cwd: ${spec.cwd}" is not a directory`;
  if (command.includes('/') || command.includes('\\')) {
    const path = isAbsolute(command) ? command : resolve(spec.cwd ?? process.cwd(), command);
    return executable(path) ? undefined : `command "${command}" is not an executable file (${path})`;
  }
  const dirs = (env.PATH ?? '').split(delimiter).filter(Boolean);
  const exts = process.platform === 'win32' ? (env.PATHEXT ?? '.EXE;.CMD').split(';') : [''];
  const found = dirs.some((dir) => exts.some((ext) => executable(join(dir, command + ext))));
  return found ? undefined : `command "${command}" is not found on PATH`;
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function executable(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false;
    accessSync(path, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** `allow`, `deny`, `tools` and `pinned` naming tools the server does not list. */
function namesProblems(server: MountedMcpServer, listed: readonly string[], where: string): string[] {
  const { spec } = server;
  const known = new Set(listed);
  const fields: Array<[string, readonly string[]]> = [
    ['allow', spec.allow ?? []],
    ['deny', spec.deny ?? []],
    ['tools', Object.keys(spec.tools ?? {})],
    ['pinned', Object.keys(spec.pinned ?? {})],
  ];
  const problems: string[] = [];
  for (const [field, names] of fields)
    for (const name of names) {
      if (known.has(name)) continue;
      const near = closestName(name, listed);
      problems.push(
        `${where}: ${field} names "${name}", which the server does not list${near ? `; did you mean "${near}"?` : ''}`,
      );
    }
  return problems;
}

/** Agents naming a tool of the server's namespace that it does not list, or that `allow`/`deny` leave out. */
function agentToolProblems(
  server: MountedMcpServer,
  listed: readonly string[],
  agents: AgentsFile,
  file: string,
): string[] {
  const { spec } = server;
  const prefix = `${spec.name}${MCP_NAME_SEPARATOR}`;
  const mounted = listed.filter(
    (name) => (!spec.allow || spec.allow.includes(name)) && !spec.deny?.includes(name),
  );
  const problems: string[] = [];
  for (const agent of agents.agents.values())
    for (const tool of agent.tools) {
      if (!tool.startsWith(prefix)) continue;
      const own = tool.slice(prefix.length);
      if (mounted.includes(own)) continue;
      const why = listed.includes(own)
        ? `the server lists "${own}" but ${spec.allow ? '"allow" leaves it out' : '"deny" names it'}`
        : `server "${spec.name}" lists no tool "${own}"`;
      const near = listed.includes(own) ? undefined : closestName(own, mounted);
      problems.push(
        `${file}: agent "${agent.name}" names tool "${tool}": ${why}${near ? `; did you mean "${prefix}${near}"?` : ''}`,
      );
    }
  return problems;
}
