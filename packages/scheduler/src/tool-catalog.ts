import type { Redis } from 'ioredis';
import type { ValidateFunction } from 'ajv';
import {
  checkArguments,
  constants,
  createAjv,
  type ArgumentsCheck,
  type Keys,
  type ToolCatalogEntry,
} from '@agent-reach/shared';

/**
 * The scheduler's view of the tools the fleet serves, read from the catalog executors publish to Redis.
 * Schedulers never load tool code: they learn names, schemas, groups and timing from here.
 */
export class ToolCatalog {
  #entries = new Map<string, ToolCatalogEntry>();
  readonly #validators = new WeakMap<ToolCatalogEntry, ValidateFunction>();
  readonly #ajv = createAjv();

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

  /**
   * Checks arguments against a tool's published schema (compiled once per catalog entry) — used before a
   * person is asked to approve a call, so nobody approves a call that cannot run.
   */
  checkArguments(name: string, raw: string): ArgumentsCheck {
    const entry = this.#entries.get(name);
    if (!entry) return { ok: true, args: {} };
    let validate = this.#validators.get(entry);
    if (!validate) {
      validate = this.#ajv.compile(entry.parameters);
      this.#validators.set(entry, validate);
    }
    return checkArguments(name, raw, validate, entry.parameters);
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
