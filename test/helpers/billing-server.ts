import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A request as the billing server saw it. */
export interface SeenRequest {
  method: string;
  /** Path and query. */
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
  /** The client went away before the answer was sent. */
  aborted: boolean;
}

const INVOICES = [
  { id: 'INV-1', customer: 'ACME', amount: 120.5, status: 'open', note: null },
  { id: 'INV-2', customer: 'Globex', amount: 80, status: 'paid', note: 'paid by card' },
];

/** The invoice lookup again, as an OpenAPI 3.1 document the server publishes (servers relative to it). */
const OPENAPI_31 = {
  openapi: '3.1.0',
  info: { title: 'Billing 3.1 (test fixture)', version: '1' },
  servers: [{ url: '/' }],
  paths: {
    '/invoices/{invoiceId}': {
      get: {
        operationId: 'getInvoice',
        summary: 'One invoice by its id.',
        parameters: [
          { name: 'invoiceId', in: 'path', required: true, schema: { $ref: '#/components/schemas/Id' } },
          {
            name: 'fields',
            in: 'query',
            explode: false,
            schema: { type: ['array', 'null'], items: { type: 'string' }, examples: [['id', 'amount']] },
          },
        ],
        responses: { '200': { description: 'the invoice' } },
      },
    },
  },
  components: { schemas: { Id: { type: 'string', pattern: '^INV-[0-9]+$', examples: ['INV-1'] } } },
};

/**
 * The HTTP server `test/fixtures/billing.openapi.yaml` describes, on a free loopback port. It records every
 * request; `/flaky` answers 503 (Retry-After: 0) to the first `flakyFailures` requests of each key, `/slow`
 * answers only when the client goes away or the server closes, `/whoami` answers the bearer credential.
 */
export async function startBillingServer(options: { flakyFailures?: number } = {}) {
  const seen: SeenRequest[] = [];
  const flaky = new Map<string, number>();
  const slow = new Set<ServerResponse>();
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      const entry: SeenRequest = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body,
        aborted: false,
      };
      seen.push(entry);
      res.on('close', () => {
        if (!res.writableFinished) entry.aborted = true;
      });
      route(req, res, body);
    });
  });
  const json = (
    res: ServerResponse,
    status: number,
    value: unknown,
    headers: Record<string, string> = {},
  ) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(value));
  };
  const route = (req: IncomingMessage, res: ServerResponse, body: string) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const invoice = /^\/invoices\/([^/]+)$/.exec(url.pathname);
    if (req.method === 'GET' && url.pathname === '/invoices') {
      const status = url.searchParams.get('status');
      const limit = Number(url.searchParams.get('limit') ?? 100);
      return json(res, 200, INVOICES.filter((i) => !status || i.status === status).slice(0, limit));
    }
    if (req.method === 'POST' && url.pathname === '/invoices') {
      const input = JSON.parse(body) as { customer: string; amount: number };
      if (input.amount > 1_000_000)
        return json(res, 422, { error: 'amount above the limit of 1000000', field: 'amount' });
      return json(res, 201, { id: 'INV-3', status: 'open', ...input });
    }
    if (req.method === 'GET' && invoice) {
      const found = INVOICES.find((i) => i.id === decodeURIComponent(invoice[1]!));
      return found ? json(res, 200, found) : json(res, 404, { error: `no invoice ${invoice[1]}` });
    }
    if (req.method === 'GET' && url.pathname === '/flaky') {
      const key = url.searchParams.get('key') ?? '';
      const count = (flaky.get(key) ?? 0) + 1;
      flaky.set(key, count);
      if (count <= (options.flakyFailures ?? 2))
        return json(res, 503, { error: 'try again' }, { 'retry-after': '0' });
      return json(res, 200, { report: `ready after ${count} requests` });
    }
    if (req.method === 'GET' && url.pathname === '/slow') {
      slow.add(res);
      res.on('close', () => slow.delete(res));
      return;
    }
    if (req.method === 'GET' && url.pathname === '/openapi-3.1.json') return json(res, 200, OPENAPI_31);
    if (req.method === 'GET' && url.pathname === '/whoami') {
      const auth = req.headers.authorization;
      return auth ? json(res, 200, { credential: auth }) : json(res, 401, { error: 'no credential' });
    }
    json(res, 404, { error: 'no route' });
  };
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    /** Requests whose path starts with `prefix`. */
    requestsTo: (prefix: string) => seen.filter((r) => r.url.startsWith(prefix)),
    async close() {
      for (const res of slow) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
