/**
 * What a parked run costs: Redis memory per run waiting for an approval (state, messages, events,
 * listing, delayed job), and the scheduler's heap while N runs wait (nothing should be held in-process).
 * Prints a table and writes bench/results/parked-runs.json.
 */
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { createKeys, defineTool, Type } from '@agent-reach/protocol';
import { createLogger, createRedis, loadConfig, waitReady } from '@agent-reach/shared';
import { startExecutor } from '@agent-reach/executor';
import { startLlmSim } from '@agent-reach/llm-sim';
import { RunControl, startScheduler } from '@agent-reach/scheduler';
import { deleteByPrefix } from './redis-stats.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const RUNS = Number(process.env.BENCH_PARKED_RUNS ?? 500);

async function usedMemory(redis: ReturnType<typeof createRedis>): Promise<number> {
  const info = await redis.info('memory');
  return Number(/^used_memory:(\d+)/m.exec(info)?.[1] ?? 0);
}

function heapUsed(): number {
  (globalThis as { gc?: () => void }).gc?.();
  return process.memoryUsage().heapUsed;
}

async function main(): Promise<void> {
  const prefix = `bench-park-${randomUUID().slice(0, 6)}`;
  const dir = await mkdtemp(path.join(tmpdir(), 'ar-park-'));
  const agentsFile = path.join(dir, 'agents.yaml');
  await writeFile(
    agentsFile,
    'agents:\n  - name: bench_agent\n    tools: [bench_sensitive, query_weather]\n',
  );
  const sim = await startLlmSim({
    scenarios: [
      {
        name: 'park',
        turns: [
          { tool_calls: [{ name: 'query_weather', arguments: { city: '上海' } }] },
          { tool_calls: [{ name: 'bench_sensitive', arguments: { amount: 10 } }] },
          { content: 'done' },
        ],
      },
    ],
  });
  const config = loadConfig({
    REDIS_URL,
    AR_KEY_PREFIX: prefix,
    AGENTS_FILE: agentsFile,
    OUTPUTS_DIR: dir,
    EXECUTOR_METRICS_PORT: '0',
    SCHEDULER_METRICS_PORT: '0',
    OPENAI_API_KEY: 'x',
    OPENAI_BASE_URL: sim.url,
    OPENAI_MODEL: 'park',
  });
  const logger = createLogger('bench', { level: 'silent' });
  const sensitive = defineTool({
    name: 'bench_sensitive',
    description: 'Moves money; a person approves each call.',
    parameters: Type.Object({ amount: Type.Integer({ minimum: 1 }) }, { additionalProperties: false }),
    requiresConfirmation: true,
    handler: ({ amount }) => ({ moved: amount }),
  });
  const executor = await startExecutor(config, { extraTools: [sensitive], logger });
  const scheduler = await startScheduler(config, { logger });
  const redis = createRedis(REDIS_URL, 'producer');
  await waitReady(redis, REDIS_URL);
  const control = new RunControl(redis, createKeys(prefix));

  const memBefore = await usedMemory(redis);
  const heapBefore = heapUsed();
  const started = performance.now();
  const ids = await Promise.all(
    Array.from({ length: RUNS }, (_, i) => control.start({ agent: 'bench_agent', input: `park #${i}` })),
  );
  for (;;) {
    const parked = await scheduler.control.queue.getDelayedCount();
    if (parked >= RUNS) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const parkSeconds = (performance.now() - started) / 1000;
  const memAfter = await usedMemory(redis);
  // The simulator keeps every request it saw; that is the test double's memory, not the platform's.
  sim.clearRequests();
  const heapAfter = heapUsed();
  const active = await scheduler.control.queue.getActiveCount();
  const one = ids[0] as string;
  const keys = createKeys(prefix);
  const perKey: Record<string, number> = {};
  for (const [label, key] of [
    ['state', keys.runState(one)],
    ['messages', keys.runMessages(one)],
    ['events', keys.runEvents(one)],
    ['meta', keys.runMeta(one)],
    ['results', keys.results(one)],
    ['job hash', `${keys.queuePrefix(keys.runsQueue)}:${keys.runsQueue}:${one}`],
  ] as const) {
    perKey[label] = Number((await redis.call('MEMORY', 'USAGE', key)) ?? 0);
  }

  const figures = {
    runs: RUNS,
    seconds_to_park_all: Number(parkSeconds.toFixed(2)),
    redis_bytes_per_parked_run: Math.round((memAfter - memBefore) / RUNS),
    redis_bytes_by_key_for_one_run: perKey,
    scheduler_heap_bytes_per_parked_run: Math.round((heapAfter - heapBefore) / RUNS),
    active_run_jobs_while_parked: active,
  };
  console.log(
    `parked runs: ${RUNS} in ${figures.seconds_to_park_all} s; active run jobs while parked: ${active}`,
  );
  console.log(
    `redis memory per parked run: ${figures.redis_bytes_per_parked_run} bytes (used_memory delta / runs)`,
  );
  for (const [label, bytes] of Object.entries(perKey))
    console.log(`  ${label.padEnd(10)} ${String(bytes).padStart(7)} bytes`);
  console.log(
    `process heap per parked run (scheduler + executor in this process): ${figures.scheduler_heap_bytes_per_parked_run} bytes`,
  );
  await mkdir('bench/results', { recursive: true });
  await writeFile('bench/results/parked-runs.json', `${JSON.stringify(figures, null, 2)}\n`);
  console.log('wrote bench/results/parked-runs.json');

  await control.close();
  await scheduler.close();
  await executor.close();
  await sim.close();
  await deleteByPrefix(redis, prefix);
  await redis.quit();
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
