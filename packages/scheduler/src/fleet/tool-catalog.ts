import type { ValidateFunction } from 'ajv';
import { type Keys } from '@agent-reach/protocol';
import {
  checkArguments,
  foldAliases,
  constants,
  createAjv,
  createLenientAjv,
  liveAnnouncements,
  redisTimeMs,
  type ArgumentsCheck,
  MCP_NAME_SEPARATOR,
  type MountedMcpServer,
  type ToolCatalogEntry,
  type RedisClient,
} from '@agent-reach/shared';

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
}

/** The catalog's options with every default filled in. */
export type ResolvedToolCatalogOptions = Required<ToolCatalogOptions>;

/** Every default of the tool catalog in one place. */
export function resolveToolCatalogOptions(o: ToolCatalogOptions): ResolvedToolCatalogOptions {
  return {
    memoryMs: o.memoryMs ?? constants.DEFAULT_CATALOG_MEMORY_MS,
    mcpServers: o.mcpServers ?? (() => []),
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

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    options: ToolCatalogOptions = {},
  ) {
    const resolved = resolveToolCatalogOptions(options);
    this.#memoryMs = resolved.memoryMs;
    this.#mcpServers = resolved.mcpServers;
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
    // Oldest first: where two executors describe a tool differently, the latest announcement wins.
    for (const announcement of liveAnnouncements(raw, redisTimeMs(time))) {
      executors.add(announcement.executorId);
      for (const group of announcement.groups) groups.add(group);
      for (const w of announcement.withdrawn ?? []) if (typeof w?.name === 'string') withdrawn.add(w.name);
      for (const tool of announcement.tools) {
        const known = this.#entries.get(tool.name);
        // An unchanged entry keeps its identity, and with it its compiled validator.
        entries.set(tool.name, known && JSON.stringify(known) === JSON.stringify(tool) ? known : tool);
      }
    }
    const now = Date.now();
    for (const [name, entry] of entries) this.#seen.set(name, { entry, at: now });
    // A tool an executor withdrew (its MCP server is down, or it changed) is gone now, not after the memory.
    for (const name of withdrawn) if (!entries.has(name)) this.#seen.delete(name);
    for (const [name, { entry, at }] of this.#seen) {
      if (entries.has(name)) continue;
      if (now - at < this.#memoryMs) entries.set(name, entry);
      else this.#seen.delete(name);
    }
    this.#entries = entries;
    this.#groups = groups;
    this.#executors = executors;
    return this;
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
