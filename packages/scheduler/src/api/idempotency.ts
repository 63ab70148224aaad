import { createHash } from 'node:crypto';
import type { Keys } from '@agent-reach/protocol';
import type { RedisClient } from '@agent-reach/shared';

/** What an idempotency key points at: the run it created and a hash of the body that created it. */
export interface IdempotencyRecord {
  runId: string;
  bodyHash: string;
}

/** JSON with object keys sorted, so that the same body hashes the same whatever its key order. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

export const bodyHash = (body: unknown) => createHash('sha256').update(canonical(body)).digest('hex');

/**
 * Idempotency keys of run creation, in Redis, namespaced by API key (two callers may pick the same key)
 * and hashed (a key is caller text of any shape). The first request claims the key with `SET NX`.
 */
export class IdempotencyStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly ttlS: number,
  ) {}

  #key(principalId: string, idempotencyKey: string): string {
    const h = createHash('sha256').update(idempotencyKey).digest('hex');
    return this.keys.idempotency(`${principalId}:${h}`);
  }

  /** What the key points at, if a request claimed it. */
  async peek(principalId: string, idempotencyKey: string): Promise<IdempotencyRecord | undefined> {
    const raw = await this.redis.get(this.#key(principalId, idempotencyKey));
    return raw ? (JSON.parse(raw) as IdempotencyRecord) : undefined;
  }

  /** Claims the key for a new run; returns the existing record when another request claimed it first. */
  async claim(
    principalId: string,
    idempotencyKey: string,
    record: IdempotencyRecord,
  ): Promise<{ claimed: true } | { claimed: false; existing: IdempotencyRecord | undefined }> {
    const key = this.#key(principalId, idempotencyKey);
    const set = await this.redis.set(key, JSON.stringify(record), 'EX', this.ttlS, 'NX');
    if (set === 'OK') return { claimed: true };
    const raw = await this.redis.get(key);
    return { claimed: false, existing: raw ? (JSON.parse(raw) as IdempotencyRecord) : undefined };
  }
}
