import { randomBytes } from 'node:crypto';
import { constants, createLogger, loadConfig, type Logger } from '@agent-reach/shared';
import { startTracing } from '@agent-reach/shared/tracing-sdk';
import { startExecutor, type ExecutorProcess } from '@agent-reach/executor';
import { BUNDLED_SCENARIOS_DIR, startLlmSim, type LlmSim } from '@agent-reach/llm-sim';
import { startScheduler, type SchedulerProcess } from '@agent-reach/scheduler';
import { BOARD_PATH } from '@agent-reach/scheduler/internal';
import { loadToolModules } from '@agent-reach/executor';

export interface DevStack {
  apiUrl: string;
  docsUrl: string;
  boardUrl: string;
  /** The API key to use (generated when API_KEYS was not set). */
  apiKey: string;
  /** Set when no model is configured and llm-sim plays the model. */
  simUrl: string | undefined;
  model: string;
  executor: ExecutorProcess;
  scheduler: SchedulerProcess;
  logger: Logger;
  close(): Promise<void>;
}

export interface DevOptions {
  /** The scenarios llm-sim plays. Default: the ones llm-sim ships. */
  scenariosDir?: string;
}

/**
 * Everything in one process on a local Redis: an executor, a scheduler with the HTTP API, and llm-sim
 * when no model is configured (OPENAI_API_KEY / OPENAI_BASE_URL unset). Ports left unset in the
 * environment default to free ones for metrics; the API uses API_PORT (default 8080).
 */
export async function startDev(
  env: Record<string, string | undefined>,
  options: DevOptions = {},
): Promise<DevStack> {
  const e = { ...env };
  const logger = createLogger('dev', { level: e.LOG_LEVEL ?? 'warn' });
  let sim: LlmSim | undefined;
  if (!e.OPENAI_API_KEY && !e.OPENAI_BASE_URL) {
    sim = await startLlmSim({
      scenariosDir: options.scenariosDir ?? BUNDLED_SCENARIOS_DIR,
      port: Number(e.LLM_SIM_PORT ?? 0),
    });
    e.OPENAI_BASE_URL = sim.url;
    e.OPENAI_API_KEY = 'llm-sim';
    e.OPENAI_MODEL ??= 'weather-trip';
  }
  let apiKey = e.API_KEYS?.split(',')[0]?.split(':')[1];
  if (!apiKey) {
    apiKey = `dev-${randomBytes(12).toString('hex')}`;
    e.API_KEYS = `dev:${apiKey}`;
  }
  e.EXECUTOR_METRICS_PORT ??= '0';
  e.SCHEDULER_METRICS_PORT ??= '0';
  const config = loadConfig(e);
  // One process, one service: its spans are the scheduler's and the executor's alike.
  const tracing = await startTracing(e, { serviceName: constants.DEV_SERVICE_NAME, logger });
  const factories = await loadToolModules((e.TOOL_MODULES ?? '').split(',').filter(Boolean));
  const executor = await startExecutor(config, {
    logger,
    extraTools: (deps) => factories.flatMap((f) => f(deps)),
  });
  // Providers read their API keys (`api_key_env`) from the same environment the configuration came from.
  const scheduler = await startScheduler(config, { logger, env: e });
  const apiUrl = (scheduler.apiUrl ?? '').replace('://0.0.0.0:', '://127.0.0.1:');
  return {
    apiUrl,
    docsUrl: `${apiUrl}/docs`,
    boardUrl: `${apiUrl}${BOARD_PATH}`,
    apiKey,
    simUrl: sim?.url,
    model: config.llm.model ?? constants.DEFAULT_LLM_MODEL,
    executor,
    scheduler,
    logger,
    async close() {
      await scheduler.close();
      await executor.close();
      await sim?.close();
      await tracing?.shutdown();
    },
  };
}
