import { createServer, type Server } from 'node:http';
import type { Registry } from 'prom-client';
import { DEFAULT_METRICS_HOST } from '../constants.js';

/**
 * Serves `/metrics` (Prometheus text), `/healthz` (the process answers) and `/readyz` (200 when `ready()`
 * says so, else 503: e.g. while the process waits for Redis) on the given port (0 picks a free one) and
 * address (default loopback: metrics say a lot about a deployment and are for its own Prometheus).
 */
export async function startMetricsServer(
  registry: Registry,
  port: number,
  host = DEFAULT_METRICS_HOST,
  ready: () => boolean = () => true,
): Promise<{ server: Server; port: number; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    if (req.url === '/metrics') {
      registry
        .metrics()
        .then((body) => {
          res.writeHead(200, { 'content-type': registry.contentType });
          res.end(body);
        })
        .catch((err: unknown) => {
          res.writeHead(500, { 'content-type': 'text/plain' });
          res.end(String(err));
        });
      return;
    }
    if (req.url === '/healthz') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"status":"ok"}');
      return;
    }
    if (req.url === '/readyz') {
      const ok = ready();
      res.writeHead(ok ? 200 : 503, { 'content-type': 'application/json' });
      res.end(ok ? '{"status":"ready"}' : '{"status":"not_ready"}');
      return;
    }
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end('{"error":{"code":"NOT_FOUND","message":"only /metrics, /healthz and /readyz are served here"}}');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address();
  return {
    server,
    port: typeof address === 'object' && address !== null ? address.port : port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
