/** Id and name patterns of the wire: every door (API, job, worker, agents file, registry) checks these. */

/** Names of tools and agents (OpenAI's function-name rule). */
export const NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/;

/** Run ids (and so job ids): no `:`, which BullMQ refuses in custom ids. */
export const RUN_ID_PATTERN = /^[A-Za-z0-9_.-]{1,128}$/;

/**
 * A W3C `traceparent` (version 00): trace id, parent span id, flags; all-zero ids are invalid.
 * https://www.w3.org/TR/trace-context/#traceparent-header
 */
export const TRACEPARENT_PATTERN = /^00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/;

/**
 * Tool call ids as the platform records them (the loop rewrites any other id a model sends), and the only
 * ones an executor accepts on a job.
 */
export const TOOL_CALL_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** Session ids: the same alphabet as run ids (they name Redis keys). */
export const SESSION_ID_PATTERN = RUN_ID_PATTERN;

/** A tenant's id: lower case, as configuration names it (`API_KEYS`, `TENANT_QUOTAS`) and Redis keys carry it. */
export const TENANT_PATTERN = /^[a-z0-9][a-z0-9_-]{0,39}$/;

/** The tenant of every key configured without one, and of every run recorded without one. */
export const DEFAULT_TENANT = 'default';

/**
 * Names BullMQ gives its own keys beside the jobs of a queue (`events`, `meta`, `wait`, …, as its
 * `QueueKeys` lists them): a job id equal to one would read the wrong kind of key, so no run may have one.
 * Written out so that the contract needs no BullMQ; a test compares it with BullMQ's own list.
 */
export const RESERVED_RUN_IDS: ReadonlySet<string> = new Set([
  'active',
  'wait',
  'waiting-children',
  'paused',
  'id',
  'delayed',
  'prioritized',
  'stalled-check',
  'completed',
  'failed',
  'stalled',
  'repeat',
  'limiter',
  'meta',
  'events',
  'pc',
  'marker',
  'de',
]);

/**
 * Names that change an object's prototype (or reach it) when used as a plain object's key. No id may be
 * one: ids key records, and a record keyed by `__proto__` once polluted `Object.prototype` process-wide.
 */
export const PROTOTYPE_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

export function isValidRunId(runId: string): boolean {
  return RUN_ID_PATTERN.test(runId) && !RESERVED_RUN_IDS.has(runId) && !PROTOTYPE_KEYS.has(runId);
}

/** Whether `id` matches `pattern` and is not a prototype key: the check every door applies to ids. */
export function isSafeId(id: unknown, pattern: RegExp): id is string {
  return typeof id === 'string' && pattern.test(id) && !PROTOTYPE_KEYS.has(id);
}

/*
 * Minting: each kind of id is made in one place. `crypto.randomUUID` is the Web Crypto global, in Node
 * and in browsers alike.
 */

/** A new run id: `run_` and a random UUID. */
export function newRunId(): string {
  return `run_${globalThis.crypto.randomUUID()}`;
}

/** A new W3C trace id: 32 lowercase hex digits. */
export function newTraceId(): string {
  return globalThis.crypto.randomUUID().replace(/-/g, '');
}

/** A new session id: `sess_` and a random UUID. */
export function newSessionId(): string {
  return `sess_${globalThis.crypto.randomUUID()}`;
}

/** A new workflow id: `wf_` and 32 random hex digits. */
export function newWorkflowId(): string {
  return `wf_${newTraceId()}`;
}

/**
 * A result ref: the key of a cut result's full content (`get_full_result` reads it back), as the executor
 * writes it into the result.
 */
export const RESULT_REF_PATTERN = /^ref_[0-9a-f-]{36}$/;

/** A new result ref: `ref_` and a random UUID. */
export function newResultRef(): string {
  return `ref_${globalThis.crypto.randomUUID()}`;
}
