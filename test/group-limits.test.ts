import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolResult } from '@agent-reach/protocol';
import { createLogger, createRedis, publishConfig, waitReady } from '@agent-reach/shared';
import { Dispatcher, ToolCatalog } from '@agent-reach/scheduler/internal';
import { seedRun } from './helpers/ledger.js';
import { startExecutorChild, type Child } from './helpers/processes.js';
import { REDIS_URL, testRedis, waitFor } from './helpers/redis.js';

const AGENTS = (groups: string) =>
  ['agents:', '  - name: test_agent', '    tools: [limited_work, noop]', groups].join('\n');

interface Span {
  start: number;
  end: number;
  pid: number;
}

/** Most spans open at one instant. */
function maxOverlap(spans: Span[]): number {
  const edges = spans.flatMap((s) => [
    { at: s.start, d: 1 },
    { at: s.end, d: -1 },
  ]);
  // Ends before starts at the same instant: a call that ended lets the next one start.
  edges.sort((a, b) => a.at - b.at || a.d - b.d);
  let open = 0;
  let most = 0;
  for (const e of edges) most = Math.max(most, (open += e.d));
  return most;
}

/** Most starts inside any window of `ms` (sliding). */
function maxStartsPerWindow(spans: Span[], ms: number): number {
  const starts = spans.map((s) => s.start).sort((a, b) => a - b);
  let most = 0;
  for (let i = 0, j = 0; i < starts.length; i += 1) {
    while ((starts[i] as number) - (starts[j] as number) >= ms) j += 1;
    most = Math.max(most, i - j + 1);
  }
  return most;
}

// Three executor processes serve the "limited" group; the limits live in the queue's BullMQ metadata.
describe('tool-group limits across executor processes', { timeout: 120_000 }, () => {
  let t: ReturnType<typeof testRedis>;
  let dir: string;
  let children: Child[];
  let producer: ReturnType<typeof createRedis>;
  let dispatcher: Dispatcher;
  let queue: Queue;
  let batch = 0;
  const logger = createLogger('test', { level: 'silent' });

  const spans = async (): Promise<Span[]> =>
    (await t.redis.lrange(`${t.prefix}:test:limited:spans`, 0, -1)).map((line) => {
      const [start, end, pid] = line.split('|').map(Number);
      return { start: start as number, end: end as number, pid: pid as number };
    });
  /** Dispatches `n` calls of `limited_work` in one turn of a fresh run and returns their results. */
  const turn = async (n: number, ms: number): Promise<ToolResult[]> => {
    batch += 1;
    const run = { runId: `run-limits-${batch}-${t.prefix}`, agent: 'test_agent' };
    const made = Array.from({ length: n }, (_, i) => ({
      toolCallId: `call_${i}`,
      name: 'limited_work',
      arguments: JSON.stringify({ ms }),
    }));
    await seedRun(producer, t.keys, run, made);
    return dispatcher.dispatch({ runId: run.runId, traceId: run.runId, agent: run.agent }, made);
  };
  const metrics = async (child: Child) =>
    (await fetch(`http://127.0.0.1:${String((await child.ready).metricsPort)}/metrics`)).text();

  beforeAll(async () => {
    t = testRedis();
    dir = await mkdtemp(path.join(tmpdir(), 'group-limits-'));
    const file = path.join(dir, 'agents.yaml');
    await writeFile(file, AGENTS('tool_groups:\n  limited: { concurrency: 2 }\n'));
    children = [0, 1, 2].map(() => startExecutorChild(t.prefix, { AGENTS_FILE: file }));
    await Promise.all(children.map((c) => c.ready));
    producer = createRedis(REDIS_URL, 'producer');
    await waitReady(producer, REDIS_URL);
    const catalog = await new ToolCatalog(producer, t.keys).refresh();
    dispatcher = new Dispatcher({ connection: producer, keys: t.keys, catalog, logger });
    queue = new Queue(t.keys.toolQueue('limited'), {
      connection: producer,
      prefix: t.keys.queuePrefix(t.keys.toolQueue('limited')),
    });
  });
  afterAll(async () => {
    await dispatcher?.close();
    await queue?.obliterate({ force: true }).catch(() => undefined);
    await queue?.close();
    for (const c of children ?? []) c.kill('SIGKILL');
    await Promise.all((children ?? []).map((c) => c.exited));
    await producer?.quit();
    await rm(dir, { recursive: true, force: true });
    await t.cleanup();
  });

  it('never runs more calls of a group at once than its concurrency limit, across three processes', async () => {
    expect(await queue.getGlobalConcurrency()).toBe(2);
    const results = await turn(18, 120);
    expect(results.filter((r) => !r.ok)).toEqual([]);
    const seen = await spans();
    expect(seen).toHaveLength(18);
    // The limit is reached (the calls did run side by side) and never passed.
    expect(maxOverlap(seen)).toBe(2);
    expect(await metrics(children[0] as Child)).toMatch(
      /^agent_reach_tool_group_concurrency_limit\{group="limited"\} 2$/m,
    );
  });

  it('applies a rate limit published while the processes run, and lifts the concurrency limit it no longer names', async () => {
    const version = await publishConfig(
      producer,
      t.keys,
      {
        agents: [{ name: 'test_agent', tools: ['limited_work', 'noop'] }],
        tool_groups: { limited: { rate: { max: 4, per_ms: 1000 } } },
      },
      'test',
    );
    for (const child of children) {
      await waitFor(
        async () => (await metrics(child)).includes(`agent_reach_config_version ${version}`),
        15_000,
        'every executor on the new version',
      );
    }
    await waitFor(
      async () => (await queue.getGlobalConcurrency()) === null,
      10_000,
      'the concurrency limit lifted',
    );
    expect(await queue.getGlobalRateLimit()).toEqual({ max: 4, duration: 1000 });
    await t.redis.del(`${t.prefix}:test:limited:spans`);
    const results = await turn(12, 5);
    expect(results.filter((r) => !r.ok)).toEqual([]);
    const seen = await spans();
    expect(seen).toHaveLength(12);
    // BullMQ's window is fixed (it opens at the first start after the last one closed), so a sliding
    // window spanning two of them holds at most twice the limit; unlimited, all 12 start at once.
    expect(maxStartsPerWindow(seen, 1000)).toBeLessThanOrEqual(8);
    const text = await metrics(children[1] as Child);
    expect(text).toMatch(/^agent_reach_tool_group_rate_limit_max\{group="limited"\} 4$/m);
    expect(text).toMatch(/^agent_reach_tool_group_rate_limit_window_seconds\{group="limited"\} 1$/m);
    expect(text).not.toMatch(/agent_reach_tool_group_concurrency_limit\{/);
  });
});
