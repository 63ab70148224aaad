import path from 'node:path';
import { createLogger, createRedis, loadConfig, waitReady } from '@agent-reach/shared';
import { startExecutor, type ExecutorProcess } from '@agent-reach/executor';
import { startLlmSim, type LlmSim } from '@agent-reach/llm-sim';
import { RunControl, startScheduler, type SchedulerProcess } from '@agent-reach/scheduler';
import testTools from './test-tools.js';
import { REDIS_URL, testRedis } from './redis.js';
import { ROOT, TEST_AGENTS } from './processes.js';

/** The environment of a scheduler or executor of a test: its prefix, the test agents, llm-sim. */
export function testEnv(
  prefix: string,
  sim: LlmSim,
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    REDIS_URL,
    AR_KEY_PREFIX: prefix,
    AGENTS_FILE: TEST_AGENTS,
    TOOL_MODULES: path.join(ROOT, 'test/helpers/test-tools.ts'),
    OUTPUTS_DIR: path.join(ROOT, 'outputs', 'test'),
    OPENAI_API_KEY: 'test',
    OPENAI_BASE_URL: sim.url,
    OPENAI_MODEL: 'echo',
    EXECUTOR_METRICS_PORT: '0',
    SCHEDULER_METRICS_PORT: '0',
    LLM_MAX_RETRIES: '4',
    LLM_TIMEOUT_MS: '10000',
    ...extra,
  };
}

/** The environment of a scheduler serving the HTTP API with one key, on a free local port. */
export function apiEnv(apiKey: string): Record<string, string> {
  return {
    API_KEYS: `test:${apiKey}`,
    API_PORT: '0',
    API_HOST: '127.0.0.1',
    // Tests poll through the API until what they wait for happens: how many requests that takes depends
    // on the machine's speed, so the key's request rate is not limited here (tests of the limit set theirs).
    API_RATE_LIMIT_PER_MINUTE: '1000000',
  };
}

/** llm-sim, an executor and a scheduler in this process, a RunControl, on a prefix of their own. */
export async function startRunsHarness(
  extra: Record<string, string> = {},
  options: {
    executor?: boolean;
    scheduler?: boolean;
    /** Executor options beyond the config (MCP limits, its environment). */
    executorOptions?: Omit<NonNullable<Parameters<typeof startExecutor>[1]>, 'extraTools' | 'logger'>;
  } = {},
) {
  const t = testRedis();
  const sim = await startLlmSim({ scenarios: [{ name: 'echo', turns: [{ content: 'hello' }] }] });
  const config = loadConfig(testEnv(t.prefix, sim, extra));
  const logger = createLogger('test', { level: 'silent' });
  const executor: ExecutorProcess | undefined =
    options.executor === false
      ? undefined
      : await startExecutor(config, { extraTools: testTools, logger, ...options.executorOptions });
  const schedulers: SchedulerProcess[] =
    options.scheduler === false ? [] : [await startScheduler(config, { logger })];
  const producer = createRedis(REDIS_URL, 'producer');
  await waitReady(producer, REDIS_URL);
  const control = new RunControl(producer, t.keys);
  return {
    ...t,
    sim,
    config,
    executor,
    schedulers,
    control,
    producer,
    /** Starts one more scheduler in this process. */
    async addScheduler() {
      const s = await startScheduler(config, { logger });
      schedulers.push(s);
      return s;
    },
    async close() {
      await control.close();
      for (const s of schedulers) await s.close();
      await executor?.close();
      await sim.close();
      await producer.quit();
      await t.cleanup();
    },
  };
}
