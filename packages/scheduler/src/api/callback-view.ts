import type { ApiContext } from './options.js';

/**
 * A run's (or a workflow's) callback as `GET /v1/runs/:id` and `GET /v1/workflows/:id` show it: where,
 * which events (`defaultEvents` when it named none), and each delivery's state.
 */
export async function callbackView(ctx: ApiContext, runId: string, defaultEvents: string[] = ['finished']) {
  const callbacks = ctx.deps.callbacks;
  if (!callbacks) return undefined;
  const [callback, deliveries] = await Promise.all([
    callbacks.deliveries.callbackOf(runId),
    callbacks.deliveries.deliveries(runId),
  ]);
  if (!callback) return undefined;
  return { url: callback.url, events: callback.events ?? defaultEvents, deliveries };
}
