import type { ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import type { StoredEvent } from '../../runs/run-store.js';
import { requirePrincipal } from '../auth.js';
import { ApiError } from '../errors.js';
import type { ApiContext } from '../options.js';
import { runForCaller } from '../run-view.js';
import { EventsHeaders, isFinalStatus, RunParams } from '@agent-reach/protocol';
import { responses } from '../responses.js';

/** One open event stream, so that closing the server can end it. */
interface OpenStream {
  end(): void;
}

/** Writes, and waits for the socket to drain when its buffer is full. */
async function write(res: ServerResponse, chunk: string): Promise<void> {
  if (res.destroyed || res.writableEnded) return;
  if (!res.write(chunk)) {
    await new Promise<void>((resolve) => {
      const done = () => {
        res.off('drain', done);
        res.off('close', done);
        resolve();
      };
      res.on('drain', done);
      res.on('close', done);
    });
  }
}

const message = (e: StoredEvent) =>
  `id: ${e.id}\nevent: ${e.event.type}\ndata: ${JSON.stringify(e.event)}\n\n`;

/**
 * `GET /v1/runs/:id/events`: Server-Sent Events. Replays the run's stored events after `Last-Event-ID`
 * (all of them without one), then streams new ones as the run records them — one blocking XREAD loop on a
 * connection of the stream's own — and ends after `run_finished`. Each message's `id` is the Redis
 * stream id, `event` the event type, `data` the event as JSON. A comment every heartbeat interval keeps
 * idle connections open through proxies.
 */
export function eventRoutes(app: FastifyInstance, ctx: ApiContext): void {
  const { control, redis } = ctx.deps;
  const open = new Set<OpenStream>();
  app.addHook('preClose', async () => {
    for (const s of open) s.end();
  });

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
              'id: Redis stream id; event: event type; data: the event (JSON); ends after run_finished',
            content: { 'text/event-stream': { schema: { type: 'string' } } },
          },
        }),
      },
    },
    async (request, reply) => {
      const principal = requirePrincipal(ctx.auth, request);
      const { view } = await runForCaller(control, request.params.id, principal);
      if (open.size >= ctx.options.maxEventStreams)
        throw new ApiError('RATE_LIMITED', 'too many event streams are open; retry later');
      const runId = view.run_id;
      let last = request.headers['last-event-id'] ?? '0-0';
      const log = ctx.log.child({ runId });

      reply.hijack();
      const res = reply.raw;
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache, no-transform',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
      });
      res.flushHeaders();

      let reader: Redis | undefined;
      let closed = false;
      const stream: OpenStream = {
        end() {
          closed = true;
          // Cuts a blocking XREAD short: its promise rejects and the loop ends.
          reader?.disconnect();
          if (!res.writableEnded) res.end();
        },
      };
      open.add(stream);
      // The response closes when the client goes away (or the stream ended): stop reading either way.
      res.on('close', () => stream.end());

      try {
        // A run that already ended has all its events stored: replay them and end.
        if (isFinalStatus(view.status)) {
          for (const e of await control.events(runId, last === '0-0' ? undefined : last))
            await write(res, message(e));
          return;
        }
        reader = redis.duplicate({
          connectionName: `${ctx.deps.keys.prefix}-api-events`,
          enableOfflineQueue: true,
          maxRetriesPerRequest: 1,
          // Its XREAD blocks for a heartbeat interval: the API connection's command timeout is not for it.
          commandTimeout: undefined,
          lazyConnect: false,
        });
        reader.on('error', (err: unknown) => log.debug({ err }, 'event stream connection error'));
        while (!closed) {
          const events = await control.store.waitEvents(runId, last, ctx.options.sseHeartbeatMs, reader);
          for (const e of events) {
            await write(res, message(e));
            last = e.id;
            if (e.event.type === 'run_finished') return;
          }
          if (events.length > 0 || closed) continue;
          await write(res, ': heartbeat\n\n');
          // Quiet for a whole interval: a run that ended before `last` (a resumed stream) sends no more.
          const summary = await control.store.summary(runId);
          if (summary && isFinalStatus(summary.status) && (await control.events(runId, last)).length === 0)
            return;
        }
      } catch (err) {
        if (!closed) log.warn({ err }, 'event stream failed');
      } finally {
        open.delete(stream);
        closed = true;
        reader?.disconnect();
        if (!res.writableEnded) res.end();
      }
    },
  );
}
