import type { RunControl } from '@agent-reach/scheduler';

/** A read held until `open()`: a follower's replay made slow on purpose, without a sleep. */
export function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  let reached!: () => void;
  const waiting = new Promise<void>((resolve) => (reached = resolve));
  const held =
    <A extends unknown[], R>(read: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      reached();
      await opened;
      return read(...args);
    };
  return { open, waiting, held };
}

/** `target` with some members replaced; the others answer as on `target` itself. */
export function withMembers<T extends object>(target: T, over: Record<string, unknown>): T {
  return new Proxy(target, {
    get(t, key, receiver) {
      if (typeof key === 'string' && Object.hasOwn(over, key)) return over[key];
      const value: unknown = Reflect.get(t, key, receiver);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(t) : value;
    },
  });
}

/**
 * `control` whose reads of a run's stored events (`events`, and the blocking `store.waitEvents`) wait
 * for `open()`: `waiting` resolves when the first read is held. For an API server's deps.
 */
export function gatedEventReads(control: RunControl) {
  const g = gate();
  const gated = withMembers(control, {
    events: g.held(control.events.bind(control)),
    store: withMembers(control.store, { waitEvents: g.held(control.store.waitEvents.bind(control.store)) }),
  });
  return { control: gated, open: g.open, waiting: g.waiting };
}
