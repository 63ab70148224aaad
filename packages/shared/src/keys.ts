import { DEFAULT_KEY_PREFIX } from './constants.js';

/**
 * Names of every queue and Redis key the platform owns, derived from one prefix so that tests (and
 * tenants) can run side by side on one Redis without meeting.
 */
export interface Keys {
  readonly prefix: string;
  /** BullMQ queue name of a tool group (BullMQ's own `prefix` option is `prefix`). */
  toolQueue(group: string): string;
  /** Hash: toolCallId → serialized ToolResult, the run's record of finished calls. */
  results(runId: string): string;
  /** List a dispatcher's replies are pushed to. */
  replies(dispatcherId: string): string;
  /** String: the full JSON of a truncated result. */
  ref(refId: string): string;
  /** Hash: tool → serialized BreakerSnapshot, the fleet's view of breakers. */
  readonly breakers: string;
  /** Pub/sub channel of breaker transitions. */
  readonly breakerChannel: string;
  /** Hash: tool → serialized ToolCatalogEntry, published by executors. */
  readonly catalog: string;
}

export function createKeys(prefix: string = DEFAULT_KEY_PREFIX): Keys {
  return Object.freeze({
    prefix,
    toolQueue: (group: string) => `tools-${group}`,
    results: (runId: string) => `${prefix}:results:${runId}`,
    replies: (id: string) => `${prefix}:replies:${id}`,
    ref: (id: string) => `${prefix}:ref:${id}`,
    breakers: `${prefix}:breakers`,
    breakerChannel: `${prefix}:breaker-events`,
    catalog: `${prefix}:catalog`,
  });
}
