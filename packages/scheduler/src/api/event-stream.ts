import type { ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Logger } from '@agent-reach/shared';
import { ApiError } from './errors.js';
import { LiveOrder, streamIdAfter, turnRecorded } from './live-order.js';
import type { ApiContext } from './options.js';
import { duplicateRedis, type RedisClient } from '@agent-reach/shared';

/** One open event stream, so that closing the server can end it. */
interface OpenStream {
  end(): void;
}

/** A stored event: its Redis stream id and the event (with its `type`). */
export interface StreamedItem {
  id: string;
  event: { type: string };
}

/** Where a stream's events come from: a run's, a workflow's. */
export interface EventSource {
  /** The subject has ended already: its stored events are all there will be. */
  final: boolean;
  /** Stored events after `after` (exclusive), all of them without it. */
  stored(after?: string): Promise<StreamedItem[]>;
  /** Waits up to `blockMs` on `reader` for events after `after`. */
  wait(after: string, blockMs: number, reader: RedisClient): Promise<StreamedItem[]>;
  /** Whether the subject has ended by now (asked after a quiet heartbeat interval). */
  ended(): Promise<boolean>;
  /** The event type after which the stream ends. */
  lastType: string;
  /**
   * A pub/sub channel whose messages (JSON events with a `type`) are sent as they come, without an
   * `id`: live-only events that are never stored, such as a run's answer deltas.
   */
  liveChannel?: string;
  log: Logger;
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

const message = (e: StreamedItem) =>
  `id: ${e.id}\nevent: ${e.event.type}\ndata: ${JSON.stringify(e.event)}\n\n`;

export type EventStreamer = (
  reply: FastifyReply,
  lastEventId: string | undefined,
  source: EventSource,
) => Promise<void>;

/**
 * Server-Sent Events for every event route of the server (they share the limit on open streams, and
 * closing the server ends them all). A stream replays the stored events after `Last-Event-ID` (all of
 * them without one), then streams new ones as they are recorded — one blocking XREAD loop on a
 * connection of the stream's own — and ends after the source's last event type. Each message's `id` is
 * the Redis stream id, `event` the event type, `data` the event as JSON. A comment every heartbeat
 * interval keeps idle connections open through proxies.
 *
 * Live text (the source's `liveChannel`) is subscribed to before the replay, so none is missed, and goes
 * out in the run's order (see `LiveOrder`): the first text of a turn first sends the events stored by
 * then, and text that comes ahead of its turn is held until the events before that turn were sent.
 * Stored events are sent once each, by stream id.
 */
export function createEventStreamer(app: FastifyInstance, ctx: ApiContext): EventStreamer {
  const open = new Set<OpenStream>();
  app.addHook('preClose', async () => {
    for (const s of open) s.end();
  });

  return async (reply, lastEventId, source) => {
    if (open.size >= ctx.options.maxEventStreams)
      throw new ApiError('RATE_LIMITED', 'too many event streams are open; retry later');
    let last = lastEventId ?? '0-0';
    const log = source.log;

    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    res.flushHeaders();

    let reader: RedisClient | undefined;
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

    // Stored events and live text go out one writer at a time, in the run's order (see `LiveOrder`).
    const order = new LiveOrder<LivePiece>(lastEventId !== undefined);
    let finished = false;
    let tail: Promise<unknown> = Promise.resolve();
    const inTurn = <T>(task: () => Promise<T>): Promise<T> => {
      const next = tail.then(task);
      tail = next.catch(() => undefined);
      return next;
    };
    let live: RedisClient | undefined;
    const sendStored = async (events: StreamedItem[]) => {
      for (const e of events) {
        // A batch read before a catch-up may repeat what the catch-up sent.
        if (finished || !streamIdAfter(e.id, last)) continue;
        const turn = turnRecorded(e.event);
        if (turn !== undefined && live !== undefined) {
          // The turn's text was published before its record: a round trip on the live connection
          // brings in whatever of it is still on its way, to go before the record.
          await live.ping().catch(() => undefined);
          order.caughtUp(turn);
        }
        for (const d of order.before(e.event)) await write(res, liveMessage(d));
        await write(res, message(e));
        last = e.id;
        order.recorded(e.event);
        if (e.event.type === source.lastType) finished = true;
      }
      if (events.length > 0 && !finished) for (const d of order.ready()) await write(res, liveMessage(d));
    };
    let caughtUpTurn: unknown;
    const onLive = (piece: LivePiece) => {
      order.arrived(piece);
      inTurn(async () => {
        if (closed || finished || !order.waiting) return;
        // A turn's first text: the events stored by now (before it was published) go first.
        const read = piece.turn !== caughtUpTurn;
        caughtUpTurn = piece.turn;
        order.caughtUp();
        if (read) await sendStored(await source.stored(last === '0-0' ? undefined : last));
        if (!finished) for (const d of order.ready()) await write(res, liveMessage(d));
      }).catch((err: unknown) => log.debug({ err }, 'live event not sent'));
    };

    try {
      // A subject that already ended has all its events stored: replay them and end.
      if (!source.final && source.liveChannel !== undefined) {
        live = await subscribeLive(ctx, source.liveChannel, onLive, log);
      }
      if (source.final) {
        await inTurn(async () => sendStored(await source.stored(last === '0-0' ? undefined : last)));
        return;
      }
      reader = duplicateRedis(ctx.deps.redis, {
        connectionName: `${ctx.deps.keys.prefix}-api-events`,
        enableOfflineQueue: true,
        maxRetriesPerRequest: 1,
        // Its XREAD blocks for a heartbeat interval: the API connection's command timeout is not for it.
        commandTimeout: undefined,
        lazyConnect: false,
      });
      reader.on('error', (err: unknown) => log.debug({ err }, 'event stream connection error'));
      while (!closed) {
        const events = await source.wait(last, ctx.options.sseHeartbeatMs, reader);
        await inTurn(() => sendStored(events));
        if (finished) return;
        if (events.length > 0 || closed) continue;
        await inTurn(() => write(res, ': heartbeat\n\n'));
        // Quiet for a whole interval: a subject that ended before `last` (a resumed stream) sends no more.
        if ((await source.ended()) && (await source.stored(last)).length === 0) return;
      }
    } catch (err) {
      if (!closed) log.warn({ err }, 'event stream failed');
    } finally {
      open.delete(stream);
      closed = true;
      reader?.disconnect();
      live?.disconnect();
      if (!res.writableEnded) res.end();
    }
  };
}

/** One message of a live channel: its type, the turn it belongs to, and its text as published. */
interface LivePiece {
  type: string;
  turn?: unknown;
  text: string;
}

const liveMessage = (d: LivePiece) => `event: ${d.type}\ndata: ${d.text}\n\n`;

/**
 * Subscribes a connection of the stream's own to a live channel and hands each message on; the stream
 * sends it as an event without an `id` (so `Last-Event-ID` keeps naming the last stored event).
 */
async function subscribeLive(
  ctx: ApiContext,
  channel: string,
  onLive: (piece: LivePiece) => void,
  log: Logger,
): Promise<RedisClient> {
  const sub = duplicateRedis(ctx.deps.redis, {
    connectionName: `${ctx.deps.keys.prefix}-api-live`,
    enableOfflineQueue: true,
    maxRetriesPerRequest: 1,
    commandTimeout: undefined,
    lazyConnect: false,
  });
  sub.on('error', (err: unknown) => log.debug({ err }, 'live event connection error'));
  sub.on('message', (_channel: string, text: string) => {
    let parsed: { type?: unknown; turn?: unknown };
    try {
      parsed = JSON.parse(text) as typeof parsed;
    } catch {
      return;
    }
    if (typeof parsed.type !== 'string') return;
    onLive({ type: parsed.type, turn: parsed.turn, text });
  });
  await sub.subscribe(channel);
  return sub;
}
