/** A breaker's state as published to Redis by executors and read by schedulers. */
export type BreakerState = 'closed' | 'half_open' | 'open';

/** What Redis holds per tool: the last transition seen anywhere in the fleet. */
export interface BreakerSnapshot {
  tool: string;
  state: BreakerState;
  /** Epoch ms when an open breaker will let a probe through. */
  openUntil?: number;
  executorId: string;
  at: number;
}

/**
 * True while a snapshot says the tool should be hidden from the model. With `liveExecutors`, a snapshot
 * published by an executor no longer announcing itself is stale and ignored: its breaker is gone with it.
 */
export function isOpen(
  snapshot: BreakerSnapshot | undefined,
  now = Date.now(),
  liveExecutors?: ReadonlySet<string>,
): boolean {
  if (snapshot?.state !== 'open' || (snapshot.openUntil ?? Infinity) <= now) return false;
  return liveExecutors === undefined || liveExecutors.has(snapshot.executorId);
}
