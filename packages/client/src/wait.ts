import { AgentReachApiError } from './errors.js';
import type { StreamOptions } from './client-api.js';
import type { ResolvedWaitOptions } from './options.js';

/** What {@link follow} follows: a run or a workflow. */
export interface Followed<T extends { status: string }> {
  /** Names the subject in a TIMEOUT message, e.g. `run run_1`. */
  what: string;
  get: (signal: AbortSignal) => Promise<T>;
  isFinal: (t: T) => boolean;
  stream: (o: StreamOptions) => AsyncGenerator<{ id: string; type: string }>;
  /** The event type after which the subject is final. */
  lastType: string;
}

/** Waits `ms`, or until `signal` aborts; either way it leaves no listener on `signal` behind. */
export const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const onAbort = () => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });

/**
 * Reads the subject until it is final, following its events in between (resuming a dropped stream
 * after the last event seen), up to the timeout.
 */
export async function follow<T extends { status: string }>(
  subject: Followed<T>,
  o: ResolvedWaitOptions,
): Promise<T> {
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, o.timeoutMs);
  const onAbort = () => controller.abort();
  o.signal?.addEventListener('abort', onAbort, { once: true });
  const cursor: { last?: string } = {};
  try {
    for (;;) {
      const current = await subject.get(controller.signal);
      if (subject.isFinal(current)) return current;
      if (!(await readToEnd(subject, controller.signal, cursor)))
        await sleep(o.reconnectDelayMs, controller.signal);
    }
  } catch (err) {
    if (timedOut)
      throw new AgentReachApiError({
        status: 0,
        code: 'TIMEOUT',
        message: `${subject.what} did not end within ${o.timeoutMs} ms`,
      });
    throw err;
  } finally {
    clearTimeout(timer);
    o.signal?.removeEventListener('abort', onAbort);
  }
}

/**
 * Reads the subject's events from after `cursor.last` (moving it on) until its last event (true) or
 * until the stream drops (false).
 */
async function readToEnd<T extends { status: string }>(
  subject: Followed<T>,
  signal: AbortSignal,
  cursor: { last?: string },
): Promise<boolean> {
  try {
    for await (const e of subject.stream({ signal, ...(cursor.last ? { lastEventId: cursor.last } : {}) })) {
      cursor.last = e.id;
      if (e.type === subject.lastType) return true;
    }
  } catch (err) {
    // A dropped stream is resumed; an API error answer is the caller's.
    if (signal.aborted || (err instanceof AgentReachApiError && err.status !== 0)) throw err;
  }
  return false;
}
