import type { FastifyReply } from 'fastify';
import { ANSWER_CHUNK_CHARS } from '../constants.js';

/**
 * Opens a `text/event-stream` answer on a hijacked reply (keeping the headers set so far, e.g. the rate
 * limit's) and returns its writer. Writes after the client went away are dropped.
 */
export function openSse(reply: FastifyReply, headers: Record<string, string>) {
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, {
    ...(reply.getHeaders() as Record<string, string>),
    ...headers,
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  const write = (text: string) => {
    if (!res.destroyed && !res.writableEnded) res.write(text);
  };
  return {
    /** One `data:` message (and an `event:` line when named). */
    data(payload: unknown, event?: string) {
      write(
        `${event ? `event: ${event}\n` : ''}data: ${typeof payload === 'string' ? payload : JSON.stringify(payload)}\n\n`,
      );
    },
    /** A comment line: keeps proxies from closing a quiet stream. */
    comment(text: string) {
      write(`: ${text}\n\n`);
    },
    end() {
      if (!res.writableEnded) res.end();
    },
  };
}
export type SseWriter = ReturnType<typeof openSse>;

/** An answer cut into pieces of about `ANSWER_CHUNK_CHARS` characters, at spaces where it can. */
export function answerPieces(answer: string): string[] {
  const pieces: string[] = [];
  let rest = answer;
  while (rest.length > ANSWER_CHUNK_CHARS) {
    const space = rest.lastIndexOf(' ', ANSWER_CHUNK_CHARS);
    const cut = space > 0 ? space + 1 : ANSWER_CHUNK_CHARS;
    pieces.push(rest.slice(0, cut));
    rest = rest.slice(cut);
  }
  if (rest !== '') pieces.push(rest);
  return pieces;
}

/** An abort signal that fires when the client goes away before the answer was sent in full. */
export function clientGone(reply: FastifyReply): AbortController {
  const abort = new AbortController();
  reply.raw.on('close', () => {
    if (!reply.raw.writableFinished) abort.abort();
  });
  return abort;
}
