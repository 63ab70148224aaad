import { Registry, collectDefaultMetrics } from 'prom-client';
import { AgentReachError, createKeys } from '@agent-reach/protocol';
import {
  connectRedis,
  createLogger,
  startAfterRedis,
  type AgentReachConfig,
  type Logger,
} from '@agent-reach/shared';
import { startArchiver, type Archiver } from './archiver.js';

export interface ArchiverProcess {
  readonly archiver: Archiver;
  readonly logger: Logger;
  readonly metricsPort: number;
  close(): Promise<void>;
}

/**
 * Starts an archiver process from a config: serves `/metrics`, `/healthz` and `/readyz` at once, waits for
 * Redis, then archives runs from the outbox (applying the migrations first, waiting for PostgreSQL as long
 * as it takes). Refuses to start without `DATABASE_URL`.
 */
export async function startArchiverProcess(
  config: AgentReachConfig,
  options: { logger?: Logger; pollMs?: number } = {},
): Promise<ArchiverProcess> {
  const databaseUrl = config.archive.databaseUrl;
  if (!databaseUrl)
    throw new AgentReachError('CONFIG_INVALID', 'the archiver needs DATABASE_URL (a postgres:// URL)');
  const logger = options.logger ?? createLogger('archiver', { level: config.logLevel });
  const redis = connectRedis(config.redisUrl, 'worker', {
    cluster: config.redisCluster,
    connectionName: `${config.keyPrefix}-archiver`,
  });
  const registry = new Registry();
  return await startAfterRedis(
    redis,
    config.redisUrl,
    logger,
    { registry, port: config.archive.metricsPort, host: config.metricsHost },
    async (server) => {
      collectDefaultMetrics({ register: registry, prefix: 'agent_reach_archiver_' });
      const archiver = await startArchiver({
        redis,
        keys: createKeys(config.keyPrefix),
        databaseUrl,
        logger,
        registry,
        archivedRunRetentionS: config.archive.archivedRunRetentionS,
        retentionDays: config.archive.retentionDays,
        batchSize: config.archive.batchSize,
        visibilityTimeoutMs: config.archive.visibilityTimeoutMs,
        ...(options.pollMs === undefined ? {} : { pollMs: options.pollMs }),
      });
      return {
        archiver,
        logger,
        metricsPort: server.port,
        async close() {
          await archiver.close();
          await server.close();
          await redis.quit().catch(() => undefined);
          logger.info('archiver stopped');
        },
      };
    },
  );
}
