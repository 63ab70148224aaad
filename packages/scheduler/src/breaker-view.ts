import type { Redis } from 'ioredis';
import { isOpen, type BreakerSnapshot, type Keys } from '@agent-reach/shared';

/** The fleet's breaker states as executors publish them; an open tool is hidden from the model. */
export class BreakerView {
  constructor(
    private readonly redis: Redis,
    private readonly keys: Keys,
  ) {}

  async openTools(now = Date.now()): Promise<Set<string>> {
    const raw = await this.redis.hgetall(this.keys.breakers);
    const open = new Set<string>();
    for (const [tool, json] of Object.entries(raw)) {
      if (isOpen(JSON.parse(json) as BreakerSnapshot, now)) open.add(tool);
    }
    return open;
  }

  async all(): Promise<BreakerSnapshot[]> {
    return Object.values(await this.redis.hgetall(this.keys.breakers)).map(
      (j) => JSON.parse(j) as BreakerSnapshot,
    );
  }
}
