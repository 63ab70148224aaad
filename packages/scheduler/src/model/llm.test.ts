import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { createLlmClient, withCauses } from './llm.js';

const ANSWER = {
  id: 'c1',
  object: 'chat.completion',
  created: 1,
  model: 'm',
  choices: [{ index: 0, message: { role: 'assistant', content: 'moved' }, finish_reason: 'stop' }],
};

describe('createLlmClient', () => {
  it('does not follow a redirect of the model endpoint: the turn fails, saying so, and the other address is never asked', async () => {
    const paths: string[] = [];
    const server = createServer((req, res) => {
      paths.push(req.url ?? '');
      req.resume();
      if (req.url?.startsWith('/v1/')) {
        res.writeHead(307, { location: '/elsewhere/chat/completions' }).end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(ANSWER));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    const llm = createLlmClient({
      apiKey: 'x',
      baseURL: `http://127.0.0.1:${port}/v1`,
      model: 'm',
      maxRetries: 0,
      stream: false,
    });
    try {
      const err: unknown = await llm.complete([{ role: 'user', content: 'hi' }], []).then(
        () => undefined,
        (e: unknown) => e,
      );
      // What the run's llm_error says: the SDK's own message names no cause.
      expect(withCauses(err)).toBe('Connection error: fetch failed: unexpected redirect');
      expect(paths).toEqual(['/v1/chat/completions']);
    } finally {
      server.close();
    }
  });
});
