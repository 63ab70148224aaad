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

/** True while a snapshot says the tool should be hidden from the model. */
export function isOpen(snapshot: BreakerSnapshot | undefined, now = Date.now()): boolean {
  return snapshot?.state === 'open' && (snapshot.openUntil ?? Infinity) > now;
}
