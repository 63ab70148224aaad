import { once } from 'node:events';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI, { APIUserAbortError } from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { streamCompletion } from './stream-completion.js';

/** One SSE chunk of a chat-completion stream. */
function chunk(content: string, finish: string | null = null): string {
  const body = {
    id: 'c1',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'm',
    choices: [{ index: 0, delta: { content }, finish_reason: finish }],
  };
  return `data: ${JSON.stringify(body)}\n\n`;
}

/** A model server whose n-th request (from 0) is answered by `answer(n, res)`; counts the requests. */
async function modelServer(answer: (n: number, res: ServerResponse) => void) {
  let requests = 0;
  const open = new Set<ServerResponse>();
  const server: Server = createServer((req, res) => {
    req.resume();
    open.add(res);
    res.on('close', () => open.delete(res));
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    answer(requests++, res);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const client = new OpenAI({ apiKey: 'x', baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0 });
  return {
    client,
    requests: () => requests,
    close: async () => {
      for (const res of open) res.destroy();
      server.close();
      await once(server, 'close');
    },
  };
}

const params = { model: 'm', messages: [{ role: 'user' as const, content: 'hi' }] };

describe('streamCompletion', () => {
  let close: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await close?.();
    close = undefined;
  });

  it('asks a turn again when its stream stops moving for the idle time, and returns the next answer', async () => {
    const server = await modelServer((n, res) => {
      // The first stream sends one chunk and then nothing; the second one completes.
      if (n === 0) res.write(chunk('Hel'));
      else res.end(chunk('Hello', 'stop') + 'data: [DONE]\n\n');
    });
    close = server.close;
    const answer = await streamCompletion(server.client, params, { maxRetries: 1, idleMs: 300 });
    expect(answer.choices[0]?.message.content).toBe('Hello');
    expect(server.requests()).toBe(2);
  });

  it('keeps a stream that moves more slowly than the idle time in total but not between chunks', async () => {
    const server = await modelServer((_, res) => {
      let sent = 0;
      const next = () => {
        sent += 1;
        if (sent < 5) {
          res.write(chunk('a'));
          setTimeout(next, 100);
        } else res.end(chunk('a', 'stop') + 'data: [DONE]\n\n');
      };
      next();
    });
    close = server.close;
    const answer = await streamCompletion(server.client, params, { maxRetries: 0, idleMs: 300 });
    expect(answer.choices[0]?.message.content).toBe('aaaaa');
    expect(server.requests()).toBe(1);
  });

  it("stops a stream when the caller's signal aborts, without asking again", async () => {
    const server = await modelServer((_, res) => res.write(chunk('Hel')));
    close = server.close;
    const caller = new AbortController();
    const deltas: string[] = [];
    const turn = streamCompletion(server.client, params, {
      maxRetries: 2,
      idleMs: 10_000,
      signal: caller.signal,
      onDelta: (d) => {
        deltas.push(d.content ?? '');
        caller.abort();
      },
    });
    await expect(turn).rejects.toBeInstanceOf(APIUserAbortError);
    expect(deltas).toEqual(['Hel']);
    expect(server.requests()).toBe(1);
  });
});
