import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startExecutor, type ExecutorProcess } from '@agent-reach/executor';
import { createKeys } from '@agent-reach/protocol';
import { Dispatcher, ToolCatalog } from '@agent-reach/scheduler/internal';
import { createLogger, createRedis, loadConfig, waitReady } from '@agent-reach/shared';
import faultTools, { STARTS_FILE_ENV, type StartRecord } from '@agent-reach/faults/fault-tools';
import { FAULT_AGENTS_FILE } from '@agent-reach/faults';
import { seedRun } from './helpers/ledger.js';
import { startPrivateRedis, type PrivateRedis } from './helpers/redis-server.js';

// A private redis-server, made to refuse writes (maxmemory reached) while a tool runs: the executor keeps
// the result it got and writes it once Redis has room again, instead of failing the job and running the
// tool a second time.
describe('an executor whose result cannot be written while Redis is out of memory', () => {
  const prefix = `oom${randomUUID().slice(0, 8)}`;
  const keys = createKeys(prefix);
  const logger = createLogger('test', { level: 'silent' });
  let redis: PrivateRedis;
  let dir: string;
  let starts: string;
  let executor: ExecutorProcess;
  let producer: ReturnType<typeof createRedis>;
  let admin: ReturnType<typeof createRedis>;
  let dispatcher: Dispatcher;

  beforeAll(async () => {
    redis = await startPrivateRedis();
    dir = await mkdtemp(path.join(tmpdir(), 'executor-oom-'));
    starts = path.join(dir, 'starts.jsonl');
    process.env[STARTS_FILE_ENV] = starts;
    const config = loadConfig({
      REDIS_URL: redis.url,
      AR_KEY_PREFIX: prefix,
      AGENTS_FILE: FAULT_AGENTS_FILE,
      EXECUTOR_METRICS_PORT: '0',
      OUTPUTS_DIR: path.join(dir, 'outputs'),
    });
    producer = createRedis(redis.url, 'worker');
    admin = createRedis(redis.url, 'worker');
    await Promise.all([waitReady(producer, redis.url), waitReady(admin, redis.url)]);
    executor = await startExecutor(config, { extraTools: faultTools({ redis: producer, keys }), logger });
    const catalog = await new ToolCatalog(producer, keys).refresh();
    dispatcher = new Dispatcher({ connection: producer, keys, catalog, logger });
  });

  afterAll(async () => {
    delete process.env[STARTS_FILE_ENV];
    await admin?.config('SET', 'maxmemory', '0').catch(() => undefined);
    await dispatcher?.close();
    await executor?.close();
    await producer?.quit();
    await admin?.quit();
    await redis?.destroy();
    await rm(dir, { recursive: true, force: true });
  });

  it('keeps a finished call result through the outage and writes it after: the tool runs once, the result is recorded', async () => {
    const run = { runId: `run-${randomUUID()}`, agent: 'fault_agent' };
    const call = {
      toolCallId: 'call_oom',
      name: 'recorded_effect',
      arguments: JSON.stringify({ step: 1, ms: 1500 }),
    };
    await seedRun(producer, keys, run, [call]);
    const pending = dispatcher.dispatch({ runId: run.runId, traceId: run.runId, agent: run.agent }, [call]);
    // Once the tool has started, Redis refuses every write until well after the tool finished.
    const started = async () => (await readFile(starts, 'utf8').catch(() => '')).includes(call.toolCallId);
    for (let i = 0; i < 100 && !(await started()); i += 1) await new Promise((r) => setTimeout(r, 50));
    expect(await started()).toBe(true);
    await admin.config('SET', 'maxmemory', '1');
    await new Promise((r) => setTimeout(r, 3500));
    await admin.config('SET', 'maxmemory', '0');
    const [result] = await pending;
    expect(result).toMatchObject({ ok: true, content: { step: 1, worked_ms: 1500 } });
    const lines = (await readFile(starts, 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as StartRecord)
      .filter((s) => s.toolCallId === call.toolCallId);
    expect(lines, 'executions of the call').toHaveLength(1);
    const recorded = JSON.parse(
      (await producer.hget(keys.results(run.runId), call.toolCallId)) ?? 'null',
    ) as {
      content?: { execution?: string };
    };
    expect(recorded?.content?.execution).toBe((result?.content as { execution?: string }).execution);
  }, 60_000);
});
