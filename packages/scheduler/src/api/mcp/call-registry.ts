import { createHash } from 'node:crypto';
import type { Keys } from '@agent-reach/protocol';
import type { RedisClient } from '@agent-reach/shared';

/** One tool call of an MCP client: its key, its MCP session (a name for the client) and its request id. */
export interface McpCallRef {
  principalId: string;
  sessionId: string;
  requestId: string | number;
}

/** What a call id holds when its cancellation arrived before its run was recorded. */
const CANCELLED = '!cancelled';

/**
 * Which run each MCP tool call started, in Redis, so that the client's `notifications/cancelled` — a
 * request of its own that any scheduler may serve — finds the run. Both sides write with `SET NX`: a
 * cancellation that arrives before the run is recorded leaves a mark, which the call finds when it
 * records its run, and cancels it then.
 */
export class McpCallRegistry {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    private readonly ttlS: number,
  ) {}

  #key(ref: McpCallRef): string {
    // Session ids and request ids are the client's text: hashed, they cannot shape the key.
    const id = `${ref.principalId}\n${ref.sessionId}\n${typeof ref.requestId}:${ref.requestId}`;
    return this.keys.mcpCall(createHash('sha256').update(id).digest('hex'));
  }

  /** Records the call's run; `cancelled` when the client cancelled the call before. */
  async started(ref: McpCallRef, runId: string): Promise<'recorded' | 'cancelled'> {
    const key = this.#key(ref);
    if ((await this.redis.set(key, runId, 'EX', this.ttlS, 'NX')) === 'OK') return 'recorded';
    return (await this.redis.get(key)) === CANCELLED ? 'cancelled' : 'recorded';
  }

  /** The run of a call the client cancelled; undefined (and a mark left) when it has none yet. */
  async cancelled(ref: McpCallRef): Promise<string | undefined> {
    const key = this.#key(ref);
    if ((await this.redis.set(key, CANCELLED, 'EX', this.ttlS, 'NX')) === 'OK') return undefined;
    const runId = await this.redis.get(key);
    return runId === null || runId === CANCELLED ? undefined : runId;
  }

  /** Forgets a call that was answered. */
  async finished(ref: McpCallRef): Promise<void> {
    await this.redis.del(this.#key(ref));
  }
}
