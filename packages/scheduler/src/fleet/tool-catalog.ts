import type { ValidateFunction } from 'ajv';
import { type Keys } from '@agent-reach/protocol';
import {
  catalogChannel,
  checkArguments,
  foldAliases,
  constants,
  createAjv,
  createLenientAjv,
  duplicateRedis,
  liveAnnouncements,
  mcpServerState,
  redisTimeMs,
  type ArgumentsCheck,
  type Logger,
  MCP_NAME_SEPARATOR,
  type McpServerState,
  type McpServerStatus,
  type MountedMcpServer,
  type ToolCatalogEntry,
  type RedisClient,
} from '@agent-reach/shared';

/** An MCP server as one live executor announces it. */
export interface McpServerReport extends McpServerStatus {
  executorId: string;
}

/**
 * An MCP server as the fleet runs it: `up` when one executor or more has it connected, else `starting`
 * when one is connecting to it, else `down` (every executor running it failed to connect; `error` is the
 * latest of their errors, `since` the earliest time one went down).
 */
export interface McpServerView {
  name: string;
  group: string;
  state: McpServerState;
  since?: number;
  error?: string;
  /** Each live executor's report of it. */
  executors: McpServerReport[];
}

/**
 * The scheduler's view of the tools the fleet serves: the union of the announcements executors keep alive
 * in Redis with their heartbeats (an executor that stopped announcing itself no longer counts).
 * Schedulers never load tool code: they learn names, schemas, groups and timing from here.
 *
 * A tool stays known for `memoryMs` after the last announcement of it lapsed: executors that cannot write
 * their heartbeats (Redis out of memory or away) or are all restarting at once have not taken their tools
 * away, and a call of such a tool is published to wait for an executor (answered `unavailable` if none
 * takes it in time) rather than answered "there is no tool named …". Groups and executors are only ever
 * the live ones.
 */
export interface ToolCatalogOptions {
  /** How long a tool no executor announces any more is still known (its group, its limits), in ms. Default 5 minutes. */
  memoryMs?: number;
  /**
   * The MCP servers the configuration mounts, by group (a live view). A tool in one's namespace that no
   * executor announces yet (the fleet is starting, or restarting with its servers) is expected: its calls
   * are published to the server's group to wait for an executor, not answered "there is no tool named …".
   * Default: none.
   */
  mcpServers?: () => readonly MountedMcpServer[];
  /** Where a lost subscription to the catalog's changes is reported. Default: nowhere. */
  logger?: Logger;
}

/** The catalog's options with every default filled in. */
export type ResolvedToolCatalogOptions = Required<Omit<ToolCatalogOptions, 'logger'>> &
  Pick<ToolCatalogOptions, 'logger'>;

/** Every default of the tool catalog in one place. */
export function resolveToolCatalogOptions(o: ToolCatalogOptions): ResolvedToolCatalogOptions {
  return {
    memoryMs: o.memoryMs ?? constants.DEFAULT_CATALOG_MEMORY_MS,
    mcpServers: o.mcpServers ?? (() => []),
    ...(o.logger ? { logger: o.logger } : {}),
  };
}

export class ToolCatalog {
  #entries = new Map<string, ToolCatalogEntry>();
  /** Every tool seen, with when it was last announced (this process's clock). */
  #seen = new Map<string, { entry: ToolCatalogEntry; at: number }>();
  #groups = new Set<string>();
  #executors = new Set<string>();
  readonly #validators = new WeakMap<ToolCatalogEntry, ValidateFunction>();
  readonly #ajv = createAjv();
  /** For schemas the platform did not write (an MCP server's), as the executors compile them. */
  readonly #lenient = createLenientAjv();
  readonly #memoryMs: number;
  readonly #mcpServers: () => readonly MountedMcpServer[];
  readonly #logger: Logger | undefined;
  /** MCP servers by name, as the live executors announce them. */
  #servers = new Map<string, McpServerView>();
  #subscriber: RedisClient | undefined;
  /** A read under way, and whether a change was said while it was. */
  #refreshing: Promise<unknown> | undefined;
  #again = false;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    options: ToolCatalogOptions = {},
  ) {
    const resolved = resolveToolCatalogOptions(options);
    this.#memoryMs = resolved.memoryMs;
    this.#mcpServers = resolved.mcpServers;
    this.#logger = resolved.logger;
  }

  /**
   * Reads the catalog again whenever an executor says its announcement changed (a tool withdrawn, an MCP
   * server down or back), so that the next model turn and the next call see it. Idempotent; `close` ends it.
   */
  follow(): this {
    if (this.#subscriber) return this;
    const sub = duplicateRedis(this.redis, { maxRetriesPerRequest: null, enableOfflineQueue: true });
    this.#subscriber = sub;
    const reread = () => void this.#refreshSoon();
    sub.on('error', (err) => this.#logger?.warn({ err }, 'catalog subscription error'));
    sub.on('message', reread);
    // After a reconnect, changes may have been missed.
    sub.on('ready', reread);
    sub
      .subscribe(catalogChannel(this.keys))
      .catch((err: unknown) => this.#logger?.warn({ err }, 'cannot subscribe to catalog changes'));
    return this;
  }

  async close(): Promise<void> {
    await this.#subscriber?.quit().catch(() => undefined);
    this.#subscriber = undefined;
  }

  /** One read at a time; a change said during a read is followed by one more. */
  async #refreshSoon(): Promise<void> {
    if (this.#refreshing) {
      this.#again = true;
      return;
    }
    try {
      do {
        this.#again = false;
        this.#refreshing = this.refresh();
        await this.#refreshing;
      } while (this.#again);
    } catch (err) {
      this.#logger?.warn({ err }, 'catalog refresh failed');
    } finally {
      this.#refreshing = undefined;
    }
  }

  async refresh(): Promise<this> {
    const replies = await this.redis.pipeline().time().hgetall(this.keys.catalog).exec();
    const [time, raw] = (replies ?? []).map(([err, value]) => {
      if (err) throw err;
      return value;
    }) as [[string, string], Record<string, string>];
    const entries = new Map<string, ToolCatalogEntry>();
    const groups = new Set<string>();
    const executors = new Set<string>();
    const withdrawn = new Set<string>();
    const reports: McpServerReport[] = [];
    // Oldest first: where two executors describe a tool differently, the latest announcement wins.
    for (const announcement of liveAnnouncements(raw, redisTimeMs(time))) {
      executors.add(announcement.executorId);
      for (const group of announcement.groups) groups.add(group);
      for (const w of announcement.withdrawn ?? []) if (typeof w?.name === 'string') withdrawn.add(w.name);
      for (const server of announcement.mcpServers ?? [])
        if (typeof server?.name === 'string')
          reports.push({ ...server, executorId: announcement.executorId });
      for (const tool of announcement.tools) {
        const known = this.#entries.get(tool.name);
        // An unchanged entry keeps its identity, and with it its compiled validator.
        entries.set(tool.name, known && JSON.stringify(known) === JSON.stringify(tool) ? known : tool);
      }
    }
    const now = Date.now();
    const servers = serverViews(reports);
    for (const [name, entry] of entries) this.#seen.set(name, { entry, at: now });
    // A tool an executor withdrew (its MCP server is down, or it changed) is gone now, not after the memory.
    for (const name of withdrawn) if (!entries.has(name)) this.#seen.delete(name);
    for (const [name, { entry, at }] of this.#seen) {
      if (entries.has(name)) continue;
      // A live executor runs its MCP server and does not offer it (the server was replaced, or lists it no
      // more): the executors speak for the tool, so the memory does not keep it.
      const server = entry.origin?.server;
      if (now - at < this.#memoryMs && (server === undefined || !servers.has(server)))
        entries.set(name, entry);
      else this.#seen.delete(name);
    }
    this.#servers = servers;
    this.#entries = entries;
    this.#groups = groups;
    this.#executors = executors;
    return this;
  }

  /** The MCP servers live executors run, as the fleet runs them (as of the last refresh). */
  mcpServers(): McpServerView[] {
    return [...this.#servers.values()];
  }

  /** The MCP server a tool comes from: its announced origin, else the namespace it lies in. */
  mcpServerOf(name: string): McpServerView | undefined {
    const server = this.#entries.get(name)?.origin?.server;
    if (server !== undefined) return this.#servers.get(server);
    const cut = name.indexOf(MCP_NAME_SEPARATOR);
    return cut > 0 ? this.#servers.get(name.slice(0, cut)) : undefined;
  }

  /**
   * Whether an executor can run the tool now: some live executor announces it and, for an MCP server's
   * tool, has its server up.
   */
  served(name: string): boolean {
    if (!this.#entries.has(name)) return false;
    const server = this.mcpServerOf(name);
    return server === undefined || server.state === 'up';
  }

  /**
   * The MCP server of a tool when no executor can run it now and none is about to: every live executor
   * running the server failed to connect to it. Its calls are answered at once, naming the server's error.
   */
  downServer(name: string): McpServerView | undefined {
    const server = this.mcpServerOf(name);
    return server?.state === 'down' ? server : undefined;
  }

  /** Whether some live executor takes jobs from this group's queue (as of the last refresh). */
  servesGroup(group: string): boolean {
    return this.#groups.has(group);
  }

  /** Ids of the executors announcing themselves (as of the last refresh). */
  liveExecutors(): ReadonlySet<string> {
    return this.#executors;
  }

  get(name: string): ToolCatalogEntry | undefined {
    return this.#entries.get(name);
  }

  has(name: string): boolean {
    return this.#entries.has(name);
  }

  names(): string[] {
    return [...this.#entries.keys()];
  }

  /**
   * Checks arguments against a tool's published schema (compiled once per catalog entry) — used before a
   * person is asked to approve a call, so nobody approves a call that cannot run.
   */
  checkArguments(name: string, raw: string): ArgumentsCheck {
    const entry = this.#entries.get(name);
    if (!entry) return { ok: true, args: {} };
    let validate = this.#validators.get(entry);
    if (!validate) {
      validate = (entry.origin ? this.#lenient : this.#ajv).compile(entry.parameters);
      this.#validators.set(entry, validate);
    }
    return checkArguments(name, raw, validate, entry.parameters, foldAliases(entry.argumentAliases));
  }

  /** Queue group of a tool; unknown tools go to the default group, whose executor answers `unknown_tool`. */
  group(name: string): string {
    return this.#entries.get(name)?.group ?? this.expectedGroup(name) ?? constants.DEFAULT_TOOL_GROUP;
  }

  /**
   * The group of a tool no executor announces (yet) that lies in the namespace of an MCP server the
   * configuration mounts: its calls wait there for an executor that has mounted the server.
   */
  expectedGroup(name: string): string | undefined {
    if (this.#entries.has(name)) return undefined;
    return this.#mcpServers().find((s) => name.startsWith(`${s.spec.name}${MCP_NAME_SEPARATOR}`))?.group;
  }

  /** Longest a call can take in an executor: every attempt timing out plus every backoff, in ms. */
  worstCaseMs(name: string): number {
    const t = this.#entries.get(name);
    const timeoutMs = t?.timeoutMs ?? constants.DEFAULT_TOOL_TIMEOUT_MS;
    const attempts = t?.maxAttempts ?? constants.DEFAULT_RETRY_MAX_ATTEMPTS;
    const backoffMs = t?.backoffMs ?? constants.DEFAULT_RETRY_BACKOFF_MS;
    return attempts * timeoutMs + (backoffMs * attempts * (attempts - 1)) / 2;
  }
}

/** The reports of each server merged into the fleet's view of it. */
function serverViews(reports: readonly McpServerReport[]): Map<string, McpServerView> {
  const views = new Map<string, McpServerView>();
  for (const report of reports) {
    const view = views.get(report.name) ?? {
      name: report.name,
      group: report.group,
      state: 'down' as McpServerState,
      executors: [],
    };
    view.executors.push(report);
    views.set(report.name, view);
  }
  for (const view of views.values()) {
    const states = view.executors.map(mcpServerState);
    view.state = states.includes('up') ? 'up' : states.includes('starting') ? 'starting' : 'down';
    const inState = view.executors.filter((e) => mcpServerState(e) === view.state);
    const since = Math.min(...inState.map((e) => e.since ?? Infinity));
    if (Number.isFinite(since)) view.since = since;
    if (view.state !== 'up') {
      const latest = inState.filter((e) => e.error).sort((a, b) => (b.since ?? 0) - (a.since ?? 0))[0];
      if (latest?.error) view.error = latest.error;
    }
  }
  return views;
}
