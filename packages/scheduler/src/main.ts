import { parseArgs } from 'node:util';
import { constants, createLogger, exitOnSignals, loadConfig } from '@agent-reach/shared';
import { startTracing } from '@agent-reach/shared/tracing-sdk';
import { startScheduler } from './scheduler.js';

const HELP = `agent-reach scheduler: runs agent runs from the agent-runs queue.

Usage: scheduler [--concurrency N]

Environment: REDIS_URL, AR_KEY_PREFIX, AGENTS_FILE, PROVIDERS_FILE, OPENAI_API_KEY, OPENAI_BASE_URL, OPENAI_MODEL,
SCHEDULER_CONCURRENCY, SCHEDULER_METRICS_PORT, RUN_LOCK_DURATION_MS, RUN_STALLED_INTERVAL_MS,
APPROVAL_TIMEOUT_MS, RUN_RETENTION_S, RUN_RETENTION_COUNT, SCHEDULER_SHUTDOWN_GRACE_MS,
COMPACTION_THRESHOLD_TOKENS, MAX_OUTPUT_TOKENS, RUN_TOKEN_BUDGET, RUN_DEADLINE_MS, OUTPUT_RETRIES, LLM_TIMEOUT_MS, LLM_MAX_RETRIES, QUEUE_SAMPLE_INTERVAL_MS,
LOG_LEVEL;
traces (off unless asked for): OTEL_TRACES_EXPORTER, OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL,
OTEL_SERVICE_NAME, OTEL_SDK_DISABLED and the other standard OTEL_* variables;
the HTTP API (served when API_KEYS is set): API_KEYS, API_PORT, API_HOST, API_OPEN_HEALTH,
API_OPEN_METRICS, API_RATE_LIMIT_PER_MINUTE, API_BODY_LIMIT_BYTES, API_TRUST_PROXY, ALLOWED_MODELS,
API_MAX_INPUT_TOKENS, API_REDIS_TIMEOUT_MS.
Exit codes: 0 after a clean shutdown, 1 on bad configuration or a failed start.`;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { concurrency: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  });
  if (values.help) {
    console.log(HELP);
    return;
  }
  const env = { ...process.env };
  if (values.concurrency) env.SCHEDULER_CONCURRENCY = values.concurrency;
  const config = loadConfig(env);
  // Before anything that makes spans: until a provider is registered they go nowhere.
  const tracing = await startTracing(env, {
    serviceName: constants.SCHEDULER_SERVICE_NAME,
    logger: createLogger('scheduler', { level: config.logLevel }),
  });
  const scheduler = await startScheduler(config, { env });
  const close = async () => {
    await scheduler.close();
    await tracing?.shutdown();
  };
  exitOnSignals(close, scheduler.logger, {
    forceAfterMs: config.scheduler.shutdownGraceMs + constants.SHUTDOWN_BACKSTOP_MS,
  });
  process.send?.({ type: 'ready', metricsPort: scheduler.metricsPort, apiUrl: scheduler.apiUrl });
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
