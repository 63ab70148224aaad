import type { Registry } from 'prom-client';
import type { Logger } from '../observability/logger.js';
import { startMetricsServer } from '../observability/metrics-server.js';
import { waitForRedis, type RedisClient } from '../redis/connection.js';

/** The metrics server a process serves from its first moment. */
export type MetricsServer = Awaited<ReturnType<typeof startMetricsServer>>;

/**
 * Starts a process that needs Redis: serves `/metrics`, `/healthz` and `/readyz` at once (so a process
 * started during a Redis outage shows itself alive and not ready), waits for Redis as long as it takes,
 * then runs `start`. `/readyz` answers 200 once `start` has finished and while the connection is ready.
 * A failed start closes the server and drops the connection.
 */
export async function startAfterRedis<T>(
  redis: RedisClient,
  url: string,
  logger: Logger,
  metrics: { registry: Registry; port: number; host?: string },
  start: (server: MetricsServer) => Promise<T>,
): Promise<T> {
  let started = false;
  const server = await startMetricsServer(
    metrics.registry,
    metrics.port,
    metrics.host,
    () => started && redis.status === 'ready',
  );
  try {
    await waitForRedis(redis, url, logger);
    const process = await start(server);
    started = true;
    return process;
  } catch (err) {
    await server.close();
    redis.disconnect();
    throw err;
  }
}
