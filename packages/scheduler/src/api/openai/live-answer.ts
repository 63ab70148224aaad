import { duplicateRedis, type RedisClient } from '@agent-reach/shared';
import type { ApiContext } from '../options.js';
import { answerPieces } from './sse.js';

/** The text of a run's model turns as they stream, subscribed before the run's answer is recorded. */
export interface LiveAnswer {
  /**
   * What is left to send of the recorded answer: the part the streamed text of the last turn did not
   * carry yet, in pieces; the whole answer when that text is not where the answer begins.
   */
  rest(answer: string): string[];
  close(): void;
}

/**
 * Subscribes to a run's `answer_delta` channel (Redis pub/sub, only live text: nothing is stored) and
 * hands each piece of answer text to `onText` as it comes. A new turn, or a new try of one, starts the
 * turn's text over: text sent before it stays sent (the model's words before a tool call).
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
    return { rest: (answer) => answerPieces(answer), close: () => undefined };
  const sub: RedisClient = duplicateRedis(ctx.deps.redis, {
    connectionName: `${ctx.deps.keys.prefix}-api-openai-live`,
    enableOfflineQueue: true,
    maxRetriesPerRequest: 1,
    commandTimeout: undefined,
    lazyConnect: false,
  });
  sub.on('error', (err: unknown) => ctx.log.debug({ err, runId }, 'openai live answer connection error'));
  let current = '';
  let turnText = '';
  sub.on('message', (_channel: string, text: string) => {
    let delta: { type?: unknown; turn?: unknown; attempt?: unknown; content?: unknown };
    try {
      delta = JSON.parse(text) as typeof delta;
    } catch {
      return;
    }
    if (delta.type !== 'answer_delta' || typeof delta.content !== 'string' || delta.content === '') return;
    const at = `${String(delta.turn)}.${String(delta.attempt)}`;
    if (at !== current) {
      current = at;
      turnText = '';
    }
    turnText += delta.content;
    // A batch of text is sent in pieces of the size the recorded answer is sent in.
    for (const piece of answerPieces(delta.content)) onText(piece);
  });
  await sub.subscribe(ctx.deps.keys.runDeltas(runId));
  return {
    rest: (answer) => answerPieces(answer.startsWith(turnText) ? answer.slice(turnText.length) : answer),
    close: () => sub.disconnect(),
  };
}
