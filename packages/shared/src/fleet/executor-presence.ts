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

/**
 * Where an MCP server stands in one executor: `starting` until its first connection and while it restarts
 * after losing one; `up` while connected; `down` once an attempt to connect failed, until one succeeds.
 */
export type McpServerState = 'starting' | 'up' | 'down';

/** An MCP server as an executor sees it: connected or not, and why not. */
export interface McpServerStatus {
  name: string;
  group: string;
  /** `state === 'up'` (kept for announcements read by older schedulers). */
  up: boolean;
  /** Absent from executors older than server states: read `up` then. */
  state?: McpServerState;
  /** Epoch ms (the executor's clock) at which it entered its state. */
  since?: number;
  /** How often it was started again after losing its connection or failing to connect. */
  restarts?: number;
  /** Tools mounted from it. */
  tools: number;
  /** Its tools hidden because their digest differs from the pinned one. */
  digestsRefused?: number;
  /** Why it is not up (it names the server and the cause: no answer to initialize, exited, …). */
  error?: string;
  /** The configuration version its settings come from (0: the local file). */
  version?: number;
  /** A newer version changes its command, arguments, environment, folder or URL: that server is starting. */
  pendingVersion?: number;
  /**
   * A newer version's change that could not start (`error`, at epoch ms `at`): the server as it was keeps
   * serving, with its settings of `version`.
   */
  changeRefused?: { version: number; error: string; at: number };
}

/** The state of a server in an announcement, older announcements (with `up` only) included. */
export function mcpServerState(status: Pick<McpServerStatus, 'up' | 'state'>): McpServerState {
  return status.state ?? (status.up ? 'up' : 'starting');
}

/**
 * Pub/sub channel on which an executor says that what it announces changed (a tool withdrawn, a server
 * down or up), so that schedulers read the catalog at once rather than at their next periodic read.
 */
export function catalogChannel(keys: { catalog: string }): string {
  return `${keys.catalog}:changed`;
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
