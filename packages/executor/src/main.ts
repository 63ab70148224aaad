import { parseArgs } from 'node:util';
import { constants, createLogger, exitOnSignals, loadConfig } from '@agent-reach/shared';
import { startTracing } from '@agent-reach/shared/tracing-sdk';
import { startExecutor } from './executor.js';
import { loadToolModules } from './tool-modules.js';

const HELP = `agent-reach executor: runs tool calls from the tool queues.

Usage: executor [--groups a,b] [--tools ./my-tools.ts,...] [--concurrency N]

  --groups       tool groups whose queues to serve (env EXECUTOR_GROUPS). Default: every group of the tools
                 it loads (the built-in tools are in "default"; a module's tools in theirs) and of the MCP
                 servers and OpenAPI sources the configuration declares, growing as a new configuration
                 declares more.
                 Named groups are all it serves: the MCP servers and OpenAPI documents of other groups
                 are not started or read (its modules' tools of other groups are announced, not served).
  --tools        extra tool modules; each default-exports ToolDefinition[] or (deps) => ToolDefinition[]
                 (env TOOL_MODULES). Only this executor's modules: another group's need not be present.
  --concurrency  calls run at once per group (env EXECUTOR_CONCURRENCY, default 50)

Environment: REDIS_URL, AR_KEY_PREFIX, AGENTS_FILE, OUTPUTS_DIR, EXECUTOR_METRICS_PORT, SHUTDOWN_GRACE_MS,
BREAKER_FAILURE_THRESHOLD, BREAKER_RESET_TIMEOUT_MS, LOCK_DURATION_MS, STALLED_INTERVAL_MS,
HEARTBEAT_INTERVAL_MS, ANNOUNCEMENT_TTL_MS, LOG_LEVEL;
traces (off unless asked for): OTEL_TRACES_EXPORTER, OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL,
OTEL_SERVICE_NAME, OTEL_SDK_DISABLED and the other standard OTEL_* variables.
Exit codes: 0 after a clean shutdown, 1 on bad configuration or a failed start.`;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      groups: { type: 'string' },
      tools: { type: 'string' },
      concurrency: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(HELP);
    return;
  }
  const env = { ...process.env };
  if (values.groups) env.EXECUTOR_GROUPS = values.groups;
  if (values.concurrency) env.EXECUTOR_CONCURRENCY = values.concurrency;
  const config = loadConfig(env);
  // Before anything that makes spans: until a provider is registered they go nowhere.
  const tracing = await startTracing(env, {
    serviceName: constants.EXECUTOR_SERVICE_NAME,
    logger: createLogger('executor', { level: config.logLevel }),
  });
  const modules = (values.tools ?? env.TOOL_MODULES ?? '').split(',').filter(Boolean);
  const factories = await loadToolModules(modules);
  const num = (name: string) => (env[name] ? Number(env[name]) : undefined);
  const executor = await startExecutor(config, {
    extraTools: (deps) => factories.flatMap((f) => f(deps)),
    env,
    ...(num('LOCK_DURATION_MS') === undefined ? {} : { lockDurationMs: num('LOCK_DURATION_MS') as number }),
    ...(num('STALLED_INTERVAL_MS') === undefined
      ? {}
      : { stalledIntervalMs: num('STALLED_INTERVAL_MS') as number }),
    ...(num('HEARTBEAT_INTERVAL_MS') === undefined
      ? {}
      : { heartbeatIntervalMs: num('HEARTBEAT_INTERVAL_MS') as number }),
    ...(num('ANNOUNCEMENT_TTL_MS') === undefined
      ? {}
      : { announcementTtlMs: num('ANNOUNCEMENT_TTL_MS') as number }),
  });
  const close = async () => {
    await executor.close();
    await tracing?.shutdown();
  };
  exitOnSignals(close, executor.logger, {
    forceAfterMs: config.executor.shutdownGraceMs + constants.SHUTDOWN_BACKSTOP_MS,
  });
  process.send?.({ type: 'ready', metricsPort: executor.metricsPort });
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
