import { createKeys } from '@agent-reach/protocol';
import type { RedisClient } from '@agent-reach/shared';
import { inline } from './terminal.js';

/** One delivery's state as the scheduler's callback sender keeps it beside the run. */
interface Delivery {
  id: string;
  event: string;
  state: string;
  attempts: number;
  last_status?: number;
  last_error?: string;
  updated_at: number;
}

/**
 * The run's (or workflow's) callback deliveries, oldest first, read where the scheduler's
 * `CallbackDeliveries` writes them (`<prefix>:callbacks:<run id>`, one JSON value per delivery id).
 */
export async function readDeliveries(
  redis: RedisClient,
  keyPrefix: string,
  runId: string,
): Promise<Delivery[]> {
  const all = await redis.hgetall(`${createKeys(keyPrefix).prefix}:callbacks:${runId}`);
  return Object.values(all)
    .map((v) => JSON.parse(v) as Delivery)
    .sort((a, b) => a.updated_at - b.updated_at);
}

/** `runs show`'s lines for a run's callback deliveries; none when the run asked for no callback. */
export function callbackLines(deliveries: Delivery[]): string[] {
  if (!deliveries.length) return [];
  return [
    '\ncallback deliveries:',
    ...deliveries.map((d) => {
      // Upper case so that a dead letter stands out in a plain terminal, without colour.
      const state = d.state === 'dead_lettered' ? 'DEAD-LETTERED' : d.state;
      const status = d.last_status === undefined ? '' : `  last status ${d.last_status}`;
      const error = d.last_error ? `  last error: ${d.last_error}` : '';
      return inline(
        `  ${d.event}  ${d.id}  ${state}  ${d.attempts} attempt${d.attempts === 1 ? '' : 's'}${status}${error}`,
      );
    }),
  ];
}
