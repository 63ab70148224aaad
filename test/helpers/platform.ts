import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { createLogger, createRedis, loadConfig, waitReady, type ToolResult } from '@agent-reach/shared';
import { startExecutor, type ExecutorProcess } from '@agent-reach/executor';
import { Dispatcher, ToolCatalog } from '@agent-reach/scheduler';
import testTools from './test-tools.js';
import { REDIS_URL, testRedis } from './redis.js';
import { ROOT, TEST_AGENTS } from './processes.js';

export const OUTPUTS = path.join(ROOT, 'outputs', 'test');

/** An in-process executor serving the test tools and a dispatcher, on a key prefix of their own. */
export async function startPlatform(env: Record<string, string> = {}) {
  const t = testRedis();
  const logger = createLogger('test', { level: 'silent' });
  const config = loadConfig({
    REDIS_URL,
    AR_KEY_PREFIX: t.prefix,
    AGENTS_FILE: TEST_AGENTS,
    OUTPUTS_DIR: OUTPUTS,
    EXECUTOR_METRICS_PORT: '0',
    ...env,
  });
  const executor: ExecutorProcess = await startExecutor(config, { extraTools: testTools, logger });
  const producer = createRedis(REDIS_URL, 'producer');
  await waitReady(producer, REDIS_URL);
  const catalog = await new ToolCatalog(producer, t.keys).refresh();
  const dispatcher = new Dispatcher({ connection: producer, keys: t.keys, catalog, logger });
  const runId = `run-${randomUUID()}`;
  let seq = 0;
  /** Dispatches one call for agent `test_agent` (or the given one) and returns its result. */
  const call = async (name: string, args: unknown, agent = 'test_agent'): Promise<ToolResult> => {
    const [result] = await dispatcher.dispatch({ runId, traceId: runId, agent }, [
      {
        toolCallId: `call_${++seq}`,
        name,
        arguments: typeof args === 'string' ? args : JSON.stringify(args),
      },
    ]);
    return result as ToolResult;
  };
  return {
    ...t,
    config,
    executor,
    dispatcher,
    catalog,
    producer,
    runId,
    call,
    async close() {
      await dispatcher.close();
      await executor.close();
      await producer.quit();
      await t.cleanup();
    },
  };
}
