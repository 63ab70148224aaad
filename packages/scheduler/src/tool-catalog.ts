import type { Redis } from 'ioredis';
import { constants, type Keys, type ToolCatalogEntry } from '@agent-reach/shared';

/**
 * The scheduler's view of the tools the fleet serves, read from the catalog executors publish to Redis.
 * Schedulers never load tool code: they learn names, schemas, groups and timing from here.
 */
export class ToolCatalog {
  #entries = new Map<string, ToolCatalogEntry>();

  constructor(
    private readonly redis: Redis,
    private readonly keys: Keys,
  ) {}

  async refresh(): Promise<this> {
    const raw = await this.redis.hgetall(this.keys.catalog);
    this.#entries = new Map(
      Object.entries(raw).map(([name, json]) => [name, JSON.parse(json) as ToolCatalogEntry]),
    );
    return this;
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

  /** Queue group of a tool; unknown tools go to the default group, whose executor answers `unknown_tool`. */
  group(name: string): string {
    return this.#entries.get(name)?.group ?? constants.DEFAULT_TOOL_GROUP;
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
