import type { ApiContext } from './options.js';

/** A run's callback as `GET /v1/runs/:id` shows it: where, which events, and each delivery's state. */
export async function callbackView(ctx: ApiContext, runId: string) {
  const callbacks = ctx.deps.callbacks;
  if (!callbacks) return undefined;
  const [callback, deliveries] = await Promise.all([
    callbacks.deliveries.callbackOf(runId),
    callbacks.deliveries.deliveries(runId),
  ]);
  if (!callback) return undefined;
  return { url: callback.url, events: callback.events ?? ['finished'], deliveries };
}
