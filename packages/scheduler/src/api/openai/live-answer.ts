import { duplicateRedis, type RedisClient } from '@agent-reach/shared';
import type { ApiContext } from '../options.js';
import { LiveOrder, turnRecorded } from '../live-order.js';
import type { FollowHooks } from '../mcp/follow-run.js';
import { answerPieces } from './sse.js';

/** One `answer_delta` message with text. */
interface Delta {
  type: string;
  turn?: unknown;
  attempt?: unknown;
  content: string;
}

/** The text of a run's model turns as they stream, subscribed before the run's answer is recorded. */
export interface LiveAnswer {
  /**
   * Passes a run event on (`pass`) in its place among the live text: live text is sent in the run's order
   * (see `LiveOrder`), so text that came ahead of its turn goes out once the events before the turn did.
   */
  recorded(event: { type: string; turn?: unknown }, pass: () => void): Promise<void>;
  /** What the door's follower of the run calls back: after each batch, and to catch up on events. */
  readonly hooks: FollowHooks;
  /**
   * What is left to send of the recorded answer: the part the streamed text of the last turn did not
   * carry yet, in pieces; the whole answer when that text is not where the answer begins.
   */
  rest(answer: string): string[];
  close(): void;
}

/**
 * Subscribes to a run's `answer_delta` channel (Redis pub/sub, only live text: nothing is stored) and
 * hands each piece of answer text to `onText` in the run's order. A new turn, or a new try of one, starts
 * the turn's text over: text sent before it stays sent (the model's words before a tool call).
 */
export async function subscribeLiveAnswer(
  ctx: ApiContext,
  runId: string,
  onText: (text: string) => void,
  structured: { agent: string; outputSchema?: unknown },
): Promise<LiveAnswer> {
  // An answer that must match a JSON Schema is sent once validated: live text may be an answer the model
  // is then asked to correct, and a client parsing the content would get both.
  if (structured.outputSchema !== undefined || ctx.deps.agents.agents.get(structured.agent)?.output_schema)
    return {
      recorded: async (_event, pass) => pass(),
      hooks: {},
      rest: (answer) => answerPieces(answer),
      close: () => undefined,
    };
  const sub: RedisClient = duplicateRedis(ctx.deps.redis, {
    connectionName: `${ctx.deps.keys.prefix}-api-openai-live`,
    enableOfflineQueue: true,
    maxRetriesPerRequest: 1,
    commandTimeout: undefined,
    lazyConnect: false,
  });
  sub.on('error', (err: unknown) => ctx.log.debug({ err, runId }, 'openai live answer connection error'));
  const order = new LiveOrder<Delta>();
  let current = '';
  let currentTurn: unknown;
  let turnText = '';
  const send = (delta: Delta) => {
    const at = `${String(delta.turn)}.${String(delta.attempt)}`;
    if (at !== current) {
      current = at;
      currentTurn = delta.turn;
      turnText = '';
    }
    turnText += delta.content;
    // A batch of text is sent in pieces of the size the recorded answer is sent in.
    for (const piece of answerPieces(delta.content)) onText(piece);
  };
  let readStored: ((first: () => void) => Promise<void>) | undefined;
  let caughtUpTurn: unknown;
  let tail: Promise<unknown> = Promise.resolve();
  // A turn's first text waits for a read of what was stored before it came (the follower passes those
  // events on first); text that comes before the follower started waits for it.
  const admit = () => {
    tail = tail
      .then(async () => {
        if (!order.waiting || readStored === undefined) return;
        const turn = order.nextTurn;
        if (turn !== caughtUpTurn) {
          caughtUpTurn = turn;
          await readStored(() => order.caughtUp());
        } else order.caughtUp();
        for (const d of order.ready()) send(d);
      })
      .catch((err: unknown) => ctx.log.debug({ err, runId }, 'openai live text not sent'));
  };
  sub.on('message', (_channel: string, text: string) => {
    let delta: { type?: unknown; turn?: unknown; attempt?: unknown; content?: unknown };
    try {
      delta = JSON.parse(text) as typeof delta;
    } catch {
      return;
    }
    if (delta.type !== 'answer_delta' || typeof delta.content !== 'string' || delta.content === '') return;
    order.arrived({ ...delta, type: delta.type, content: delta.content });
    admit();
  });
  await sub.subscribe(ctx.deps.keys.runDeltas(runId));
  return {
    recorded: async (event, pass) => {
      const turn = turnRecorded(event);
      if (turn !== undefined) {
        // The turn's text was published before its record: a round trip brings in what is on its way.
        await sub.ping().catch(() => undefined);
        order.caughtUp(turn);
      }
      for (const d of order.before(event)) send(d);
      pass();
      order.recorded(event);
    },
    hooks: {
      afterBatch: () => {
        for (const d of order.ready()) send(d);
      },
      catchUp: (read) => {
        readStored = read;
        admit();
      },
    },
    // Live text stands for the answer only when it was the text of the answering (last recorded) turn.
    rest: (answer) =>
      answerPieces(
        currentTurn === order.lastRecordedTurn && answer.startsWith(turnText)
          ? answer.slice(turnText.length)
          : answer,
      ),
    close: () => sub.disconnect(),
  };
}
