import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, loadConfig } from '@agent-reach/shared';
import { startExecutor, type ExecutorProcess } from '@agent-reach/executor';
import { startLlmSim, type LlmSim } from '@agent-reach/llm-sim';
import { startScheduler, type SchedulerProcess } from '@agent-reach/scheduler';
import { createClient } from '@agent-reach/client';
import testTools from './helpers/test-tools.js';
import { testRedis } from './helpers/redis.js';
import { testEnv } from './helpers/runs.js';

describe('the scheduler serves the HTTP API when API_KEYS is set', () => {
  const t = testRedis();
  const logger = createLogger('test', { level: 'silent' });
  let sim: LlmSim;
  let executor: ExecutorProcess;
  let scheduler: SchedulerProcess;
  beforeAll(async () => {
    sim = await startLlmSim({ scenarios: [{ name: 'echo', turns: [{ content: 'hello' }] }] });
    const config = loadConfig(
      testEnv(t.prefix, sim, {
        API_KEYS: 'ops:ops-key-0123456789abcdef,desk:desk-key-0123456789abcdef:weather_only',
        API_PORT: '0',
        API_HOST: '127.0.0.1',
      }),
    );
    executor = await startExecutor(config, { extraTools: testTools, logger });
    scheduler = await startScheduler(config, { logger });
  });
  afterAll(async () => {
    await scheduler?.close();
    await executor?.close();
    await sim?.close();
    await t.cleanup();
  });

  it('starts a run over HTTP with a key from API_KEYS and limits the limited key to its agents', async () => {
    expect(scheduler.apiUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const ops = createClient({ baseUrl: scheduler.apiUrl!, apiKey: 'ops-key-0123456789abcdef' });
    const run = await ops.createRun({ agent: 'test_agent', input: 'hi' });
    expect(await ops.waitForRun(run.run_id, { timeoutMs: 20_000 })).toMatchObject({
      status: 'succeeded',
      answer: 'hello',
    });
    const desk = createClient({ baseUrl: scheduler.apiUrl!, apiKey: 'desk-key-0123456789abcdef' });
    expect((await desk.listAgents()).map((a) => a.name)).toEqual(['weather_only']);
  });

  it('serves no API without API_KEYS, and reports a malformed API_KEYS entry by variable name', () => {
    expect(loadConfig({}).api.keys).toEqual([]);
    expect(() => loadConfig({ API_KEYS: 'ops:short' })).toThrow(/API_KEYS/);
    expect(() => loadConfig({ API_KEYS: 'no-key-here' })).toThrow(/API_KEYS/);
    expect(loadConfig({ API_KEYS: 'a:aaaaaaaaaaaaaaaa:x|y' }).api.keys).toEqual([
      { name: 'a', key: 'aaaaaaaaaaaaaaaa', agents: ['x', 'y'] },
    ]);
  });
});
