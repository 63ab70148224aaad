import type { ToolCatalogEntry } from '../tools/registry.js';

/**
 * A tool an executor knows of but does not serve now: an MCP server's tool while the server is down, one
 * whose description or schema changed from its pinned digest, or one refused (a schema ajv cannot
 * compile, a name taken). Schedulers drop it from the catalog at once, without waiting out their memory.
 */
export interface WithdrawnTool {
  name: string;
  server: string;
  reason: 'server_down' | 'digest_changed' | 'refused';
  message: string;
  /** The digest the server lists now. */
  digest?: string;
  /** The digest pinned (for `digest_changed`). */
  pinned?: string;
}

/** An MCP server as an executor sees it: connected or not, and why not. */
export interface McpServerStatus {
  name: string;
  group: string;
  up: boolean;
  /** Tools mounted from it. */
  tools: number;
  /** Why it is down (it names the server and the cause: no answer to initialize, exited, …). */
  error?: string;
}

/** What an executor's tool sources add to its announcement. */
export interface SourcesReport {
  withdrawn: WithdrawnTool[];
  mcpServers: McpServerStatus[];
}

/**
 * What an executor says of itself in the fleet catalog (`keys.catalog`, field = executor id), refreshed by
 * its heartbeat. The fleet's tools are the union of the live announcements: after Redis lost its data they
 * come back with the next heartbeat, and a dead executor's tools (and its breaker snapshots) age out.
 */
export interface ExecutorAnnouncement {
  /** Written first by the heartbeat script, from Redis server time: epoch ms after which it no longer counts. */
  expiresAt: number;
  executorId: string;
  /** Groups whose queues it takes jobs from. */
  groups: string[];
  /** Every tool it registers, those of groups it does not serve included (the entry names the queue). */
  tools: ToolCatalogEntry[];
  /** Tools it knows of but does not serve now (absent from executors older than MCP sources). */
  withdrawn?: WithdrawnTool[];
  /** The MCP servers it mounts. */
  mcpServers?: McpServerStatus[];
}

/**
 * The announcements of a catalog hash still live at `nowMs` (Redis server time, so that hosts' clocks do
 * not matter); malformed or expired entries are skipped. Oldest first, so a newer one wins when read in order.
 */
export function liveAnnouncements(raw: Record<string, string>, nowMs: number): ExecutorAnnouncement[] {
  const live: ExecutorAnnouncement[] = [];
  for (const json of Object.values(raw)) {
    let value: Partial<ExecutorAnnouncement>;
    try {
      value = JSON.parse(json) as Partial<ExecutorAnnouncement>;
    } catch {
      continue;
    }
    if (
      typeof value?.expiresAt !== 'number' ||
      value.expiresAt <= nowMs ||
      typeof value.executorId !== 'string' ||
      !Array.isArray(value.groups) ||
      !Array.isArray(value.tools)
    ) {
      continue;
    }
    live.push(value as ExecutorAnnouncement);
  }
  return live.sort((a, b) => a.expiresAt - b.expiresAt);
}

/** Epoch ms of a Redis `TIME` reply. */
export function redisTimeMs(time: readonly [string, string] | readonly string[]): number {
  return Number(time[0]) * 1000 + Math.floor(Number(time[1]) / 1000);
}
