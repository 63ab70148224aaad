/**
 * A callback receiver as a service would run one (`pnpm faults`, scenario `callback-receiver-killed`):
 * an HTTP server on 127.0.0.1 that verifies each delivery with the client's `verifyWebhook` and appends
 * one JSON line per delivery to a file (before it answers), then answers 204, or 401 when the delivery
 * does not verify. Its settings come from the environment: `RECEIVER_SECRET` (whsec_…), `RECEIVER_FILE`,
 * `RECEIVER_PORT` (0: any free port). It tells its parent `{ type: 'ready', port }` over IPC.
 *
 * It is run from its source under tsx (and left out of this package's build): the client package is
 * built apart (tsup), after the TypeScript projects.
 */
import { appendFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { verifyWebhook } from '@agent-reach/client';
import type { ReceivedDelivery } from './callback-check.js';

const secret = process.env.RECEIVER_SECRET ?? '';
const file = process.env.RECEIVER_FILE ?? '';
if (!secret || !file) throw new Error('RECEIVER_SECRET and RECEIVER_FILE must be set');

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8');
    const id = String(req.headers['webhook-id'] ?? '');
    let line: ReceivedDelivery;
    try {
      const event = verifyWebhook(secret, req.headers, body) as {
        type?: string;
        data?: { run_id?: string };
      };
      line = { id, type: event.type ?? '', runId: event.data?.run_id ?? '', verified: true };
    } catch (err) {
      line = {
        id,
        type: '',
        runId: '',
        verified: false,
        error: (err as { code?: string }).code ?? String(err),
      };
    }
    appendFileSync(file, `${JSON.stringify(line)}\n`);
    res.writeHead(line.verified ? 204 : 401).end();
  });
});
server.listen(Number(process.env.RECEIVER_PORT ?? 0), '127.0.0.1', () => {
  const address = server.address();
  process.send?.({ type: 'ready', port: typeof address === 'object' && address ? address.port : 0 });
});
