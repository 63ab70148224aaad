import type { AnswerDeltaEvent, Keys } from '@agent-reach/protocol';
import { constants, type Logger, type RedisClient } from '@agent-reach/shared';
import type { AnswerDelta, DeltaListener } from './stream-completion.js';

/** The live text of one model turn: takes deltas as they arrive and publishes them in batches. */
export interface AnswerDeltaSink {
  readonly listener: DeltaListener;
  /** Publishes what is gathered; resolves once Redis took it, so it lands before the turn's checkpoint. */
  close(): Promise<void>;
}

/** Opens a sink for a run's model turn. */
export type AnswerDeltas = (runId: string, turn: number) => AnswerDeltaSink;

/**
 * Publishes the text of streamed model turns on each run's deltas channel (Redis pub/sub: only live
 * subscribers get it, nothing is stored), gathered for `batchMs` so that a fast model costs one PUBLISH
 * per batch, not per token. A publish that fails is logged and dropped: the recorded answer is the
 * record, the deltas only a preview of it.
 */
export function createAnswerDeltas(
  redis: RedisClient,
  keys: Keys,
  log: Logger,
  batchMs: number = constants.ANSWER_DELTA_BATCH_MS,
): AnswerDeltas {
  return (runId, turn) => {
    const channel = keys.runDeltas(runId);
    let pending: AnswerDelta | undefined;
    let timer: NodeJS.Timeout | undefined;
    const flush = async (): Promise<void> => {
      timer = undefined;
      if (pending === undefined) return;
      const event: AnswerDeltaEvent = { type: 'answer_delta', turn, ...pending, at: Date.now() };
      pending = undefined;
      await redis.publish(channel, JSON.stringify(event)).then(
        () => undefined,
        (err: unknown) => log.debug({ err, runId }, 'answer delta not published'),
      );
    };
    return {
      listener: (delta) => {
        // A new try of the turn starts its text over: what the broken one gathered goes first.
        if (pending !== undefined && pending.attempt !== delta.attempt) void flush();
        pending ??= { attempt: delta.attempt };
        if (delta.content !== undefined) pending.content = (pending.content ?? '') + delta.content;
        if (delta.reasoning !== undefined) pending.reasoning = (pending.reasoning ?? '') + delta.reasoning;
        timer ??= setTimeout(() => void flush(), batchMs);
      },
      close: async () => {
        if (timer !== undefined) clearTimeout(timer);
        await flush();
      },
    };
  };
}
