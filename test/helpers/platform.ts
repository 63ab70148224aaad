import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { type ToolResult } from '@agent-reach/protocol';
import { createLogger, createRedis, loadConfig, waitReady, type Logger } from '@agent-reach/shared';
import { startExecutor, type ExecutorProcess } from '@agent-reach/executor';
import { Dispatcher, ToolCatalog } from '@agent-reach/scheduler/internal';
import { seedCalls, seedRun, type SeededRun } from './ledger.js';
import testTools from './test-tools.js';
import { REDIS_URL, testRedis } from './redis.js';
import { ROOT, TEST_AGENTS } from './processes.js';

export const OUTPUTS = path.join(ROOT, 'outputs', 'test');

/** An in-process executor serving the test tools and a dispatcher, on a key prefix of their own. */
export async function startPlatform(
  env: Record<string, string> = {},
  options: {
    /** The executor's logger (default: silent). */
    logger?: Logger;
    /** Executor options beyond the config (heartbeat, TTLs). */
    executor?: Omit<NonNullable<Parameters<typeof startExecutor>[1]>, 'extraTools' | 'logger'>;
  } = {},
) {
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
  const executor: ExecutorProcess = await startExecutor(config, {
    extraTools: testTools,
    logger: options.logger ?? logger,
    ...options.executor,
  });
  const producer = createRedis(REDIS_URL, 'producer');
  await waitReady(producer, REDIS_URL);
  const catalog = await new ToolCatalog(producer, t.keys).refresh();
  const dispatcher = new Dispatcher({ connection: producer, keys: t.keys, catalog, logger });
  const runId = `run-${randomUUID()}`;
  let seq = 0;
  const seeded = new Set<string>();
  /**
   * Dispatches one call in a run of the caller's choosing and returns its result. The run (agent,
   * session) is recorded on first use and the call put in its ledger first, as the scheduler does before
   * it publishes a model turn.
   */
  const callIn = async (run: SeededRun, name: string, args: unknown): Promise<ToolResult> => {
    if (!seeded.has(run.runId)) {
      seeded.add(run.runId);
      await seedRun(producer, t.keys, run);
    }
    const made = {
      toolCallId: `call_${++seq}`,
      name,
      arguments: typeof args === 'string' ? args : JSON.stringify(args),
    };
    await seedCalls(producer, t.keys, run, [made]);
    const [result] = await dispatcher.dispatch({ runId: run.runId, traceId: run.runId, agent: run.agent }, [
      made,
    ]);
    return result as ToolResult;
  };
  /** One run per agent (a run belongs to one agent); `test_agent`'s is `runId`. */
  const runs = new Map<string, string>([['test_agent', runId]]);
  /** Dispatches one call for agent `test_agent` (or the given one) in that agent's run. */
  const call = (name: string, args: unknown, agent = 'test_agent'): Promise<ToolResult> => {
    let id = runs.get(agent);
    if (!id) runs.set(agent, (id = `run-${randomUUID()}`));
    return callIn({ runId: id, agent }, name, args);
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
    callIn,
    async close() {
      await dispatcher.close();
      await executor.close();
      await producer.quit();
      await t.cleanup();
    },
  };
}
