/** How many requests a provider may have in flight, and how many it may start per window. */
export interface GateLimits {
  concurrency?: number;
  rate?: { max: number; windowMs: number };
}

/**
 * A provider's door in this process: a request waits here until the provider has a free slot (its
 * concurrency limit) and a start left in the current window (its rate limit), in the order requests
 * came. Waiting never counts against the provider: only the request itself does.
 */
export class ProviderGate {
  readonly #limits: GateLimits;
  readonly #starts: number[] = [];
  readonly #queue: Array<() => void> = [];
  #inFlight = 0;
  #timer: NodeJS.Timeout | undefined;

  constructor(
    limits: GateLimits,
    private readonly onWaiting: (waiting: number) => void = () => undefined,
  ) {
    this.#limits = limits;
  }

  /** Requests waiting for a slot or a start. */
  get waiting(): number {
    return this.#queue.length;
  }

  /** Resolves with the release of a slot once the request may start; rejects when `signal` aborts first. */
  enter(signal?: AbortSignal): Promise<() => void> {
    if (this.#queue.length === 0 && this.#mayStart()) return Promise.resolve(this.#start());
    return new Promise((resolve, reject) => {
      const admit = () => {
        signal?.removeEventListener('abort', abort);
        resolve(this.#start());
      };
      const abort = () => {
        const i = this.#queue.indexOf(admit);
        if (i >= 0) this.#queue.splice(i, 1);
        this.onWaiting(this.#queue.length);
        reject(signal?.reason ?? new Error('aborted'));
      };
      if (signal?.aborted) return abort();
      signal?.addEventListener('abort', abort, { once: true });
      this.#queue.push(admit);
      this.onWaiting(this.#queue.length);
      this.#pump();
    });
  }

  #mayStart(): boolean {
    const { concurrency, rate } = this.#limits;
    if (concurrency !== undefined && this.#inFlight >= concurrency) return false;
    if (rate === undefined) return true;
    const since = Date.now() - rate.windowMs;
    while (this.#starts.length > 0 && (this.#starts[0] as number) <= since) this.#starts.shift();
    return this.#starts.length < rate.max;
  }

  #start(): () => void {
    this.#inFlight += 1;
    if (this.#limits.rate) this.#starts.push(Date.now());
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#inFlight -= 1;
      this.#pump();
    };
  }

  /** Admits waiting requests while the limits allow; when only the window holds them, looks again then. */
  #pump(): void {
    while (this.#queue.length > 0 && this.#mayStart()) {
      const next = this.#queue.shift() as () => void;
      this.onWaiting(this.#queue.length);
      next();
    }
    const rate = this.#limits.rate;
    if (this.#queue.length === 0 || this.#timer !== undefined || rate === undefined) return;
    const { concurrency } = this.#limits;
    if (concurrency !== undefined && this.#inFlight >= concurrency) return;
    const oldest = this.#starts[0] ?? Date.now();
    this.#timer = setTimeout(
      () => {
        this.#timer = undefined;
        this.#pump();
      },
      Math.max(1, oldest + rate.windowMs - Date.now()),
    );
    this.#timer.unref();
  }
}
