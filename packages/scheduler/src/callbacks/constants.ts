/** Defaults of callback deliveries (docs/callbacks.md); each can be set per process (`resolveCallbackConfig`). */

/** The BullMQ queue deliveries wait on, beside `agent-runs`. */
export const CALLBACK_QUEUE = 'callbacks';

/**
 * Attempts of one delivery, the first included, before it is dead-lettered. With the backoff below they
 * span about 17 minutes: a receiver down for minutes loses nothing.
 */
export const DEFAULT_CALLBACK_MAX_ATTEMPTS = 11;

/** Wait before the second attempt, in ms; each later wait doubles (BullMQ's exponential backoff). */
export const DEFAULT_CALLBACK_BACKOFF_MS = 1000;

/** Longest one attempt may take, connecting and reading the answer included, in ms. */
export const DEFAULT_CALLBACK_TIMEOUT_MS = 10_000;

/** Largest answer read from a receiver, in bytes; past it the connection is closed (the status counts). */
export const CALLBACK_MAX_RESPONSE_BYTES = 64 * 1024;

/** Deliveries sent at once by one scheduler. */
export const DEFAULT_CALLBACK_CONCURRENCY = 20;

/** How long a delivery's job and state are kept after it ended, in seconds (as a run's records). */
export const DEFAULT_CALLBACK_RETENTION_S = 7 * 24 * 3600;

/**
 * Longest wait for a callback host's name to resolve, in ms, at the door and before each attempt: past it
 * the host counts as unresolved (refused at the door, tried again later by a delivery), so a resolver that
 * does not answer cannot hold a request for the system resolver's whole timeout.
 */
export const CALLBACK_DNS_TIMEOUT_MS = 2000;
