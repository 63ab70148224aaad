import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConfigDocument } from '@agent-reach/shared';
import { startPlatform } from './helpers/platform.js';

const KEY = 'items-key-0123456789';

/** A loopback HTTP server that records each request (method, path and query, headers) and answers by `route`. */
async function recordingServer(route: (req: IncomingMessage, res: ServerResponse) => void) {
  const seen: Array<{ method: string; url: string; headers: IncomingMessage['headers'] }> = [];
  const server = createServer((req, res) => {
    seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    route(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const json = (res: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(value));
};

/** The document of the items API: served under `/api` of its server, with a header credential. */
const DOCUMENT = {
  openapi: '3.0.3',
  info: { title: 'Items (test fixture)', version: '1' },
  paths: {
    '/items/{id}': {
      get: {
        operationId: 'getItem',
        parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
        responses: { '200': { description: 'the item' } },
      },
    },
    '/moved': { get: { operationId: 'moved', responses: { '200': { description: 'moved' } } } },
    '/tagged': {
      get: {
        operationId: 'tagged',
        parameters: [{ name: 'X-Tag', in: 'header', required: true, schema: { type: 'string' } }],
        responses: { '200': { description: 'the tag' } },
      },
    },
  },
};
const TOOLS = ['items__getItem', 'items__moved', 'items__tagged'];

describe('an HTTP tool sends requests only to its base URL, one path segment per path parameter', () => {
  let api: Awaited<ReturnType<typeof recordingServer>>;
  let other: Awaited<ReturnType<typeof recordingServer>>;
  let platform: Awaited<ReturnType<typeof startPlatform>>;
  let dir: string;
  const call = (name: string, args: unknown) => platform.call(name, args, 'items_agent');
  /** Requests the items API received after `from`. */
  const since = (from: number) => api.seen.slice(from).map((r) => `${r.method} ${r.url}`);

  beforeAll(async () => {
    other = await recordingServer((_req, res) => json(res, 200, 'ok'));
    api = await recordingServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://localhost');
      if (url.pathname === '/api/moved')
        return json(res, 302, {}, { location: `${other.url}/stolen?from=items` });
      if (url.pathname === '/api/tagged') return json(res, 200, { tag: req.headers['x-tag'] });
      if (url.pathname === '/api/items/missing') return json(res, 404, { error: 'no item missing' });
      const item = /^\/api\/items\/([^/]+)$/.exec(url.pathname);
      if (item) return json(res, 200, { id: decodeURIComponent(item[1]!) });
      // The parent of the declared paths: no operation lists it.
      json(res, 200, { listing: 'everything under /api' });
    });
    dir = mkdtempSync(path.join(tmpdir(), 'openapi-boundaries-'));
    writeFileSync(path.join(dir, 'items.openapi.json'), JSON.stringify(DOCUMENT));
    const config: ConfigDocument = {
      agents: [{ name: 'items_agent', tools: TOOLS }],
      tool_groups: {
        items: {
          openapi: [
            {
              name: 'items',
              document: './items.openapi.json',
              base_url: `${api.url}/api`,
              auth: { type: 'header', name: 'X-Api-Key', env: 'ITEMS_KEY' },
              operations: ['getItem', 'moved', 'tagged'],
              tools: { tagged: { max_attempts: 3, backoff_ms: 0 } },
            },
          ],
        },
      },
    };
    writeFileSync(path.join(dir, 'agents.yaml'), JSON.stringify(config, null, 2));
    platform = await startPlatform(
      { AGENTS_FILE: path.join(dir, 'agents.yaml') },
      { executor: { env: { ITEMS_KEY: KEY } } },
    );
  });
  afterAll(async () => {
    await platform?.close();
    await api?.close();
    await other?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('does not follow a redirect to another origin: the call is an execution_error and the credential stays home', async () => {
    const result = await call('items__moved', {});
    expect(result).toMatchObject({
      ok: false,
      attempts: 1,
      error: { kind: 'execution_error', status: 302, retryable: false },
    });
    expect(result.error?.message).toBe(
      `HTTP 302 Found from GET /api/moved: a redirect to ${other.url}/stolen that was not followed (an HTTP tool sends requests only to its base URL)`,
    );
    expect(other.seen).toEqual([]);
    expect(api.seen.find((r) => r.url === '/api/moved')?.headers['x-api-key']).toBe(KEY);
  });

  it('refuses a path parameter of "..", "." or "" as invalid_arguments, sends nothing, and keeps other values in one segment', async () => {
    const before = api.seen.length;
    for (const id of ['..', '.', '']) {
      const result = await call('items__getItem', { id });
      expect(result, JSON.stringify(id)).toMatchObject({
        ok: false,
        error: { kind: 'invalid_arguments', field: '/id', retryable: false },
      });
      expect(result.error?.message).toBe(
        `path parameter "id" cannot be ${JSON.stringify(id)}: it must name one path segment; no request was made`,
      );
    }
    expect(since(before)).toEqual([]);
    // Slashes and dots inside a value stay in its one segment.
    const result = await call('items__getItem', { id: '../../etc/..' });
    expect(result).toMatchObject({ ok: true, content: { id: '../../etc/..' } });
    expect(since(before)).toEqual(['GET /api/items/..%2F..%2Fetc%2F..']);
  });

  it('names the request as it was sent in an error: the method and the full path under the base URL', async () => {
    const result = await call('items__getItem', { id: 'missing' });
    expect(result).toMatchObject({ ok: false, error: { kind: 'invalid_arguments', status: 404 } });
    expect(result.error?.message).toBe(
      'HTTP 404 Not Found from GET /api/items/missing: {"error":"no item missing"}',
    );
  });

  it('answers a header parameter holding CR/LF as invalid_arguments at once, without a retry or a request', async () => {
    const before = api.seen.length;
    const result = await call('items__tagged', { 'X-Tag': 'a\r\nX-Injected: yes' });
    expect(result).toMatchObject({
      ok: false,
      attempts: 1,
      error: { kind: 'invalid_arguments', field: '/X-Tag', retryable: false },
    });
    expect(result.error?.message).toContain('header parameter "X-Tag" cannot hold a line break');
    expect(since(before)).toEqual([]);
    expect(await call('items__tagged', { 'X-Tag': 'plain' })).toMatchObject({
      ok: true,
      content: { tag: 'plain' },
    });
  });
});
