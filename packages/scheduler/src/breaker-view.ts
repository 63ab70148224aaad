import type { Redis } from 'ioredis';
import { isOpen, type BreakerSnapshot, type Keys, type Logger } from '@agent-reach/shared';

/** How long a full read of the breakers hash is trusted when no transition arrived meanwhile, in ms. */
const FULL_READ_EVERY_MS = 5000;

/**
 * The fleet's breaker states as executors publish them; an open tool is hidden from the model. Kept in
 * memory: transitions arrive over pub/sub as executors publish them, and the whole hash is re-read every
 * few seconds (a transition missed during a reconnect is corrected then), so a model turn costs no
 * round trip.
 */
export class BreakerView {
  #cache = new Map<string, BreakerSnapshot>();
  #readAt = 0;
  #reading: Promise<void> | undefined;
  #subscriber: Redis | undefined;

  constructor(
    private readonly redis: Redis,
    private readonly keys: Keys,
    private readonly logger?: Logger,
  ) {}

  async openTools(now = Date.now()): Promise<Set<string>> {
    this.#subscribe();
    if (now - this.#readAt > FULL_READ_EVERY_MS) await this.#read();
    const open = new Set<string>();
    for (const [tool, snapshot] of this.#cache) if (isOpen(snapshot, now)) open.add(tool);
    return open;
  }

  /**
   * Forgets the cached view: the next `openTools` reads the hash. Called after a tool failed, since a
   * failure may have opened the tool's breaker, and the executor writes the transition before the result:
   * a read after the result is certain to see it, where the pub/sub message might still be on its way.
   */
  invalidate(): void {
    this.#readAt = 0;
  }

  async all(): Promise<BreakerSnapshot[]> {
    return Object.values(await this.redis.hgetall(this.keys.breakers)).map(
      (j) => JSON.parse(j) as BreakerSnapshot,
    );
  }

  async close(): Promise<void> {
    await this.#subscriber?.quit().catch(() => undefined);
    this.#subscriber = undefined;
  }

  #read(): Promise<void> {
    this.#reading ??= this.redis
      .hgetall(this.keys.breakers)
      .then((raw) => {
        this.#cache = new Map(
          Object.entries(raw).map(([tool, json]) => [tool, JSON.parse(json) as BreakerSnapshot]),
        );
        this.#readAt = Date.now();
      })
      .finally(() => {
        this.#reading = undefined;
      });
    return this.#reading;
  }

  #subscribe(): void {
    if (this.#subscriber) return;
    const sub = this.redis.duplicate({ maxRetriesPerRequest: null, enableOfflineQueue: true });
    this.#subscriber = sub;
    sub.on('error', (err) => this.logger?.warn({ err }, 'breaker subscription error'));
    sub.on('message', (_channel: string, json: string) => {
      const snapshot = JSON.parse(json) as BreakerSnapshot;
      this.#cache.set(snapshot.tool, snapshot);
    });
    // After a reconnect, transitions may have been missed: read the whole hash on the next turn.
    sub.on('ready', () => {
      this.#readAt = 0;
    });
    sub
      .subscribe(this.keys.breakerChannel)
      .catch((err: unknown) => this.logger?.warn({ err }, 'cannot subscribe to breaker transitions'));
  }
}
