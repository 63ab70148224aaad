import { type Keys } from '@agent-reach/protocol';
import {
  duplicateRedis,
  isOpen,
  liveAnnouncements,
  redisTimeMs,
  redisUnavailable,
  type BreakerSnapshot,
  type Logger,
  type RedisClient,
} from '@agent-reach/shared';

/** How long a full read of the breakers hash is trusted when no transition arrived meanwhile, in ms. */
const FULL_READ_EVERY_MS = 5000;

/**
 * The fleet's breaker states as executors publish them; an open tool is hidden from the model. Kept in
 * memory: transitions arrive over pub/sub as executors publish them, and the whole hash is re-read every
 * few seconds (a transition missed during a reconnect is corrected then), so a model turn costs no
 * round trip. A snapshot counts only while the executor that published it still announces itself in the
 * fleet catalog: the breaker of an executor that is gone is gone with it.
 */
export class BreakerView {
  #cache = new Map<string, BreakerSnapshot>();
  /** Executors announcing themselves at the last full read; undefined before the first one. */
  #live: ReadonlySet<string> | undefined;
  #readAt = 0;
  #reading: Promise<void> | undefined;
  #subscriber: RedisClient | undefined;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly logger?: Logger,
  ) {}

  async openTools(now = Date.now()): Promise<Set<string>> {
    this.#subscribe();
    if (now - this.#readAt > FULL_READ_EVERY_MS) {
      try {
        await this.#read();
      } catch (err) {
        // The fleet's slot failing over does not stop runs: the last view stands (executors still refuse
        // calls of an open breaker) until a read succeeds. Before any read there is nothing to go on.
        const why = redisUnavailable(err);
        if (!why || this.#live === undefined) throw err;
        this.logger?.warn({ why }, 'could not read the breakers; using the last view');
      }
    }
    const open = new Set<string>();
    for (const [tool, snapshot] of this.#cache) if (isOpen(snapshot, now, this.#live)) open.add(tool);
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

  /** The snapshots of executors still announcing themselves. */
  async all(): Promise<BreakerSnapshot[]> {
    const { snapshots, live } = await this.#fetch();
    return [...snapshots.values()].filter((s) => live.has(s.executorId));
  }

  async close(): Promise<void> {
    await this.#subscriber?.quit().catch(() => undefined);
    this.#subscriber = undefined;
  }

  #read(): Promise<void> {
    this.#reading ??= this.#fetch()
      .then(({ snapshots, live }) => {
        this.#cache = snapshots;
        this.#live = live;
        this.#readAt = Date.now();
      })
      .finally(() => {
        this.#reading = undefined;
      });
    return this.#reading;
  }

  /** The breakers hash and the ids of the executors announcing themselves, in one round trip. */
  async #fetch(): Promise<{ snapshots: Map<string, BreakerSnapshot>; live: Set<string> }> {
    const replies = await this.redis
      .pipeline()
      .time()
      .hgetall(this.keys.breakers)
      .hgetall(this.keys.catalog)
      .exec();
    const [time, breakers, catalog] = (replies ?? []).map(([err, value]) => {
      if (err) throw err;
      return value;
    }) as [[string, string], Record<string, string>, Record<string, string>];
    const live = new Set(liveAnnouncements(catalog, redisTimeMs(time)).map((a) => a.executorId));
    const snapshots = new Map<string, BreakerSnapshot>();
    for (const [tool, json] of Object.entries(breakers)) {
      try {
        snapshots.set(tool, JSON.parse(json) as BreakerSnapshot);
      } catch {
        // a malformed snapshot hides nothing
      }
    }
    return { snapshots, live };
  }

  #subscribe(): void {
    if (this.#subscriber) return;
    const sub = duplicateRedis(this.redis, { maxRetriesPerRequest: null, enableOfflineQueue: true });
    this.#subscriber = sub;
    sub.on('error', (err) => this.logger?.warn({ err }, 'breaker subscription error'));
    sub.on('message', (_channel: string, json: string) => {
      let snapshot: BreakerSnapshot;
      try {
        snapshot = JSON.parse(json) as BreakerSnapshot;
      } catch {
        return;
      }
      this.#cache.set(snapshot.tool, snapshot);
      // Its executor just published, so it is alive even if it started after the last full read.
      if (this.#live && !this.#live.has(snapshot.executorId)) {
        this.#live = new Set([...this.#live, snapshot.executorId]);
      }
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
