import { setTimeout as sleep } from 'node:timers/promises';
import { createKeys } from '@agent-reach/protocol';
import {
  closestName,
  constants,
  liveAnnouncements,
  MCP_NAME_SEPARATOR,
  mcpServersOf,
  readConfigVersion,
  redisTimeMs,
  type ExecutorAnnouncement,
  type McpServerStatus,
  type RedisClient,
} from '@agent-reach/shared';

/** What the executors made of an applied version's MCP servers: lines to print, and warnings. */
export interface McpApplyReport {
  lines: string[];
  warnings: string[];
}

interface Applied {
  servers: string[];
  agents: Array<{ name: string; tools: string[] }>;
}

/**
 * Waits (up to `waitMs`) until every live executor running an MCP server of configuration `version` has
 * taken the version and settled each server (up, down, or its change refused), then says what came of
 * it: each server up with its tools; a server down, or a change that could not start while the server as
 * it was keeps serving, with the server's own error; and an agent naming a tool that its server, now up,
 * does not offer, with the closest name it does.
 */
export async function reportMcpApply(
  redis: RedisClient,
  keyPrefix: string,
  version: number,
  waitMs = constants.CONFIG_APPLY_MCP_WAIT_MS,
): Promise<McpApplyReport> {
  const keys = createKeys(keyPrefix);
  const applied = appliedOf((await readConfigVersion(redis, keys, version))?.document);
  const report: McpApplyReport = { lines: [], warnings: [] };
  if (!applied || applied.servers.length === 0) return report;
  const until = Date.now() + waitMs;
  let seen: ExecutorAnnouncement[];
  for (;;) {
    const [time, raw] = await Promise.all([redis.time(), redis.hgetall(keys.catalog)]);
    seen = liveAnnouncements(raw, redisTimeMs(time.map(String)));
    const settled = seen.every((a) =>
      (a.mcpServers ?? []).every((s) => !applied.servers.includes(s.name) || settledAt(s, version)),
    );
    if (settled || Date.now() >= until) break;
    await sleep(constants.CONFIG_APPLY_MCP_POLL_MS);
  }
  for (const name of applied.servers) describeServer(name, seen, version, waitMs, report);
  report.warnings.push(...missingTools(applied, seen, version));
  return report;
}

/** Whether an executor is done with `version` for a server: running it up or down, or refusing it. */
function settledAt(s: McpServerStatus, version: number): boolean {
  if ((s.changeRefused?.version ?? -1) >= version) return true;
  if ((s.version ?? 0) < version || (s.pendingVersion ?? -1) >= version) return false;
  return s.state === 'down' || (s.state === 'up' && s.tools > 0);
}

function describeServer(
  name: string,
  seen: readonly ExecutorAnnouncement[],
  version: number,
  waitMs: number,
  report: McpApplyReport,
): void {
  const runs = seen.flatMap((a) =>
    (a.mcpServers ?? []).filter((s) => s.name === name).map((s) => ({ executor: a.executorId, s })),
  );
  if (runs.length === 0) {
    report.lines.push(`mcp server ${name}: no live executor runs it (none serves its group yet)`);
    return;
  }
  for (const { executor, s } of runs) {
    const where = `mcp server ${name} on ${executor}`;
    if ((s.changeRefused?.version ?? -1) >= version)
      report.warnings.push(
        `${where}: the change of version ${s.changeRefused?.version} did not start (${s.changeRefused?.error}); the server as it was (version ${s.version ?? 0}) keeps serving`,
      );
    else if (!settledAt(s, version))
      report.warnings.push(
        `${where}: not settled within ${waitMs} ms (${s.state ?? (s.up ? 'up' : 'starting')}); agent-reach mcp or GET /v1/agents shows it when it is`,
      );
    else if (s.state === 'down') report.warnings.push(`${where}: down: ${s.error ?? 'no error given'}`);
    else report.lines.push(`${where}: up, ${s.tools} tool(s)`);
  }
}

/** Agents naming a tool of a server that is up with this version but does not offer it. */
function missingTools(applied: Applied, seen: readonly ExecutorAnnouncement[], version: number): string[] {
  const warnings: string[] = [];
  for (const server of applied.servers) {
    const up = seen.filter((a) =>
      (a.mcpServers ?? []).some(
        (s) => s.name === server && s.state === 'up' && (s.version ?? 0) >= version && s.tools > 0,
      ),
    );
    if (up.length === 0) continue;
    const prefix = `${server}${MCP_NAME_SEPARATOR}`;
    const offered = new Set(
      up.flatMap((a) => a.tools.map((t) => t.name).filter((n) => n.startsWith(prefix))),
    );
    const hidden = new Map(up.flatMap((a) => (a.withdrawn ?? []).map((w) => [w.name, w.message] as const)));
    for (const agent of applied.agents)
      for (const tool of agent.tools) {
        if (!tool.startsWith(prefix) || offered.has(tool)) continue;
        const why = hidden.get(tool);
        const near = why ? undefined : closestName(tool, offered);
        warnings.push(
          `agent "${agent.name}" names "${tool}", which server "${server}" does not offer${why ? ` (${why})` : ''}${near ? `; did you mean "${near}"?` : ''}: the agent does not have that tool`,
        );
      }
  }
  return warnings;
}

function appliedOf(document: string | undefined): Applied | undefined {
  if (document === undefined) return undefined;
  const doc = JSON.parse(document) as {
    agents?: Array<{ name?: unknown; tools?: unknown }>;
  } & Parameters<typeof mcpServersOf>[0];
  return {
    servers: mcpServersOf(doc).map((m) => m.spec.name),
    agents: (doc.agents ?? []).map((a) => ({
      name: String(a.name),
      tools: Array.isArray(a.tools) ? a.tools.filter((t): t is string => typeof t === 'string') : [],
    })),
  };
}
