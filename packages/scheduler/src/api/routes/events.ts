import type { FastifyInstance } from 'fastify';
import { EventsHeaders, isFinalStatus, RunParams } from '@agent-reach/protocol';
import { requirePrincipal } from '../auth.js';
import type { EventStreamer } from '../event-stream.js';
import type { ApiContext } from '../options.js';
import { responses } from '../responses.js';
import { runForCaller } from '../run-view.js';

/**
 * `GET /v1/runs/:id/events`: Server-Sent Events (see `createEventStreamer`), ending after `run_finished`.
 */
export function eventRoutes(app: FastifyInstance, ctx: ApiContext, streamEvents: EventStreamer): void {
  const { control } = ctx.deps;

  app.get<{ Params: { id: string }; Headers: { 'last-event-id'?: string } }>(
    '/v1/runs/:id/events',
    {
      schema: {
        tags: ['runs'],
        summary: "Stream a run's events (text/event-stream), resumable with Last-Event-ID",
        params: RunParams,
        headers: EventsHeaders,
        response: responses({
          200: {
            description:
              'id: Redis stream id; event: event type; data: the event (JSON); ends after run_finished. ' +
              'answer_delta events (no id, never stored) carry the text of a streamed model turn live',
            content: { 'text/event-stream': { schema: { type: 'string' } } },
          },
        }),
      },
    },
    async (request, reply) => {
      const principal = requirePrincipal(ctx.auth, request);
      const { view } = await runForCaller(ctx, request.params.id, principal);
      const runId = view.run_id;
      await streamEvents(reply, request.headers['last-event-id'], {
        final: isFinalStatus(view.status),
        stored: (after) => control.events(runId, after),
        wait: (after, blockMs, reader) => control.store.waitEvents(runId, after, blockMs, reader),
        ended: async () => {
          const summary = await control.store.summary(runId);
          return summary !== undefined && isFinalStatus(summary.status);
        },
        lastType: 'run_finished',
        liveChannel: ctx.deps.keys.runDeltas(runId),
        log: ctx.log.child({ runId }),
      });
    },
  );
}
