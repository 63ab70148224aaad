import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolResult } from '@agent-reach/protocol';
import {
  createLogger,
  createRedis,
  LiveConfig,
  publishConfig,
  readPublishedConfig,
  waitReady,
} from '@agent-reach/shared';
import { startLlmSim, type LlmSim } from '@agent-reach/llm-sim';
import { RunControl } from '@agent-reach/scheduler';
import { Dispatcher, ToolCatalog } from '@agent-reach/scheduler/internal';
import { seedCalls, seedRun } from './helpers/ledger.js';
import {
  atConfigVersion,
  startExecutorWith,
  startSchedulerChild,
  TEST_AGENTS,
  type Child,
} from './helpers/processes.js';
import { REDIS_URL, testRedis, waitFor } from './helpers/redis.js';
import { apiEnv, testEnv } from './helpers/runs.js';
import { childEnv, cliArgs } from './helpers/node-run.js';

const exec = promisify(execFile);
const API_KEY = `live-${randomUUID().replace(/-/g, '')}`;

/** The test agents with `weather_only` reaching the given tools. */
async function agentsWith(weatherOnly: string[]): Promise<string> {
  const base = await readFile(TEST_AGENTS, 'utf8');
  return base.replace(/tools: \[query_weather\]\s*$/, `tools: [${weatherOnly.join(', ')}]\n`);
}

// Real processes: an executor and a scheduler (with the HTTP API) forked from their main.ts, the CLI as a
// process of its own, llm-sim over HTTP.
describe('live configuration across running processes', { timeout: 120_000 }, () => {
  let t: ReturnType<typeof testRedis>;
  let sim: LlmSim;
  let dir: string;
  let env: Record<string, string>;
  let executor: Child;
  let scheduler: Child;
  let apiUrl: string;
  let control: RunControl;
  let dispatcher: Dispatcher;
  let producer: ReturnType<typeof createRedis>;
  const logger = createLogger('test', { level: 'silent' });

  const cli = async (...args: string[]) => {
    try {
      const { stdout, stderr } = await exec('node', cliArgs(args), {
        env: { ...process.env, ...childEnv(env) },
      });
      return { code: 0, stdout, stderr };
    } catch (err) {
      const e = err as { code: number; stdout: string; stderr: string };
      return { code: e.code, stdout: e.stdout, stderr: e.stderr };
    }
  };
  const metric = async (port: unknown, name: string) => {
    const text = await (await fetch(`http://127.0.0.1:${String(port)}/metrics`)).text();
    return new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1];
  };
  /** Waits until both processes run under `version` (their own /metrics say so). */
  const bothAt = (version: number) => atConfigVersion([executor, scheduler], version);
  let seq = 0;
  /** One call by `agent`, recorded in a run's ledger first as a scheduler does, run by the executor process. */
  const call = async (agent: string, name: string, args: object): Promise<ToolResult> => {
    const run = { runId: `run-${randomUUID()}`, agent };
    const made = { toolCallId: `call_${++seq}`, name, arguments: JSON.stringify(args) };
    await seedRun(producer, t.keys, run);
    await seedCalls(producer, t.keys, run, [made]);
    const [result] = await dispatcher.dispatch({ runId: run.runId, traceId: run.runId, agent }, [made]);
    return result as ToolResult;
  };
  const runResource = async (runId: string) => {
    const res = await fetch(`${apiUrl}/v1/runs/${runId}`, {
      headers: { authorization: `Bearer ${API_KEY}` },
    });
    expect(res.status).toBe(200);
    return (await res.json()) as { status: string; config_version?: number };
  };
  const finishedRun = async () => {
    const runId = await control.start({ agent: 'weather_only', input: 'hello', model: 'echo' });
    await control.wait(runId, 20_000);
    return runResource(runId);
  };

  beforeAll(async () => {
    t = testRedis();
    dir = await mkdtemp(path.join(tmpdir(), 'live-config-'));
    const file = path.join(dir, 'agents.yaml');
    await writeFile(file, await agentsWith(['query_weather']));
    sim = await startLlmSim({ scenarios: [{ name: 'echo', turns: [{ content: 'hello' }] }] });
    env = testEnv(t.prefix, sim, {
      AGENTS_FILE: file,
      ...apiEnv(API_KEY),
      LOG_LEVEL: 'warn',
    });
    executor = startExecutorWith(env);
    await executor.ready;
    scheduler = startSchedulerChild(env);
    apiUrl = String((await scheduler.ready).apiUrl).replace('://0.0.0.0:', '://127.0.0.1:');
    producer = createRedis(REDIS_URL, 'producer');
    await waitReady(producer, REDIS_URL);
    control = new RunControl(producer, t.keys);
    const catalog = await new ToolCatalog(producer, t.keys).refresh();
    dispatcher = new Dispatcher({ connection: producer, keys: t.keys, catalog, logger });
  });
  afterAll(async () => {
    await dispatcher?.close();
    await control?.close();
    for (const c of [executor, scheduler]) c?.kill('SIGKILL');
    await Promise.all([executor?.exited, scheduler?.exited]);
    await producer?.quit();
    await sim?.close();
    await rm(dir, { recursive: true, force: true });
    await t.cleanup();
  });

  it('records version 0 on runs started under the local file, before anything is published', async () => {
    expect((await finishedRun()).config_version).toBe(0);
    expect((await call('weather_only', 'noop', {})).error?.kind).toBe('forbidden');
  });

  it('makes a tool added by config apply callable in the running executor, and records the new version on new runs', async () => {
    const next = path.join(dir, 'v1.yaml');
    await writeFile(next, await agentsWith(['query_weather', 'noop']));
    const applied = await cli('config', 'apply', next);
    expect(applied.stderr).toBe('');
    expect(applied.stdout).toContain('published configuration version 1');
    expect(applied.code).toBe(0);
    await bothAt(1);
    const result = await call('weather_only', 'noop', { value: 'now reachable' });
    expect(result.ok).toBe(true);
    expect(result.content).toEqual({ echo: 'now reachable' });
    expect((await finishedRun()).config_version).toBe(1);
  });

  it('makes the running executor refuse a tool removed by config apply from then on', async () => {
    const next = path.join(dir, 'v2.yaml');
    await writeFile(next, await agentsWith(['query_weather']));
    expect((await cli('config', 'apply', next)).code).toBe(0);
    await bothAt(2);
    const result = await call('weather_only', 'noop', {});
    expect(result.ok).toBe(false);
    expect(result.error?.kind).toBe('forbidden');
    expect(result.error?.message).toBe('agent "weather_only" may not call "noop"');
  });

  it('refuses a file that does not validate with every problem listed, and the version in force stays', async () => {
    const bad = path.join(dir, 'bad.yaml');
    await writeFile(
      bad,
      [
        'agents:',
        '  - name: weather_only',
        '    tools: [query_weather, noop, qeury_weather]',
        '    max_iterations: 0',
        'tool_groups:',
        '  slow: { concurrency: 0 }',
      ].join('\n'),
    );
    const refused = await cli('config', 'apply', bad);
    expect(refused.code).toBe(4);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toContain('agent "weather_only": max_iterations must be >= 1');
    expect(refused.stderr).toContain('tool_groups.slow.concurrency must be >= 1');
    expect(refused.stderr).toContain('refused: configuration version 2 stays in force');
    // Schema problems are listed first; the file is refused before its tool names are checked.
    const unknownTool = path.join(dir, 'unknown-tool.yaml');
    await writeFile(unknownTool, await agentsWith(['query_weather', 'qeury_weather', 'no_such_tool']));
    const second = await cli('config', 'apply', unknownTool);
    expect(second.code).toBe(4);
    expect(second.stderr).toContain(
      'agent "weather_only": tools[1] "qeury_weather" is not a registered tool (did you mean "query_weather"?)',
    );
    expect(second.stderr).toContain('agent "weather_only": tools[2] "no_such_tool" is not a registered tool');
    expect((await readPublishedConfig(producer, t.keys))?.version).toBe(2);
    expect(await metric((await executor.ready).metricsPort, 'agent_reach_config_version')).toBe('2');
    expect((await call('weather_only', 'query_weather', { city: '北京' })).ok).toBe(true);
    expect((await call('weather_only', 'noop', {})).error?.kind).toBe('forbidden');
    const shown = await cli('config', 'show');
    expect(shown.stdout).toMatch(/^version 2, digest [0-9a-f]{16}, applied .* by config apply .*v2\.yaml$/m);
  });

  it('answers a repeated Idempotency-Key with the run it started after its agent was removed; another body is 409, a new key 422', async () => {
    const post = async (body: object, key: string) => {
      const res = await fetch(`${apiUrl}/v1/runs`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${API_KEY}`,
          'content-type': 'application/json',
          'idempotency-key': key,
        },
        body: JSON.stringify(body),
      });
      return {
        status: res.status,
        json: (await res.json()) as { run_id?: string; error?: { code: string } },
      };
    };
    const key = `keyed-${randomUUID()}`;
    const body = { agent: 'weather_only', input: 'keyed', model: 'echo' };
    const first = await post(body, key);
    expect(first.status, JSON.stringify(first.json)).toBe(201);
    await control.wait(first.json.run_id as string, 20_000);
    const next = path.join(dir, 'v3.yaml');
    const base = await readFile(TEST_AGENTS, 'utf8');
    await writeFile(next, base.replace(/ {2}- name: weather_only\n {4}tools: \[query_weather\]\s*$/, ''));
    expect((await cli('config', 'apply', next)).code).toBe(0);
    await bothAt(3);
    const repeat = await post(body, key);
    expect(repeat.status, JSON.stringify(repeat.json)).toBe(200);
    expect(repeat.json).toMatchObject({
      run_id: first.json.run_id,
      status: 'succeeded',
      agent: 'weather_only',
    });
    expect((await post({ ...body, input: 'another' }, key)).status).toBe(409);
    const fresh = await post(body, `keyed-${randomUUID()}`);
    expect(fresh.status).toBe(422);
    expect(fresh.json.error?.code).toBe('UNKNOWN_AGENT');
  });
});

describe('live configuration in one process', { timeout: 30_000 }, () => {
  let t: ReturnType<typeof testRedis>;
  let dir: string;
  beforeAll(async () => {
    t = testRedis();
    dir = await mkdtemp(path.join(tmpdir(), 'live-config-file-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
    await t.cleanup();
  });

  it('takes up a valid change of its file while nothing is published, keeps the old one on an invalid change, lets a published version win, and follows one published afresh after Redis lost it', async () => {
    const file = path.join(dir, 'agents.yaml');
    await writeFile(file, 'agents:\n  - name: a\n    tools: [noop]\n');
    const lines: string[] = [];
    const captured = createLogger('test', { level: 'info' }, { write: (line: string) => lines.push(line) });
    const live = await LiveConfig.start({
      redis: t.redis,
      keys: t.keys,
      file,
      logger: captured,
      filePollMs: 50,
    });
    try {
      const changes: number[] = [];
      live.onChange((next) => changes.push(next.version));
      expect(live.current()).toMatchObject({ version: 0, source: 'file' });
      await writeFile(file, 'agents:\n  - name: a\n    tools: [noop, slow]\n');
      await waitFor(() => live.agents.reachable('a').has('slow'), 5000, 'the file change');
      await writeFile(file, 'agents:\n  - name: a\n    tools: [noop]\n    max_iterations: -1\n');
      const refused = await waitFor(
        () => lines.find((l) => l.includes('changed agents file refused')),
        5000,
        'the refusal',
      );
      expect(refused).toContain('agent \\"a\\": max_iterations must be >= 1');
      // The invalid file was never taken: the valid one before it stays in force.
      expect(live.agents.reachable('a')).toEqual(new Set(['noop', 'slow']));
      const published = await publishConfig(
        t.redis,
        t.keys,
        { agents: [{ name: 'b', tools: ['noop'] }] },
        'test',
      );
      await waitFor(() => live.current().version === published, 5000, 'the published version');
      expect(live.agents.agents.has('a')).toBe(false);
      expect(live.agents.reachable('b')).toEqual(new Set(['noop']));
      expect(changes).toEqual([0, published]);
      // Redis lost the configuration and it was published afresh: the same version number, another document.
      await t.redis.del(t.keys.config);
      const again = await publishConfig(
        t.redis,
        t.keys,
        { agents: [{ name: 'c', tools: ['noop'] }] },
        'test',
      );
      expect(again).toBe(published);
      await waitFor(() => live.agents.agents.has('c'), 5000, 'the document published afresh');
      expect(live.agents.agents.has('b')).toBe(false);
    } finally {
      await live.close();
    }
  });

  it('takes up a valid change of the workflows file, keeps the definitions in force on a cyclic one, and logs every problem', async () => {
    // Nothing published: the test before left a version behind.
    await t.redis.del(t.keys.config);
    const agents = path.join(dir, 'wf-agents.yaml');
    const workflows = path.join(dir, 'wf-workflows.yaml');
    await writeFile(agents, 'agents:\n  - name: a\n    tools: [noop]\n');
    await writeFile(workflows, 'workflows:\n  - name: one\n    nodes: [{ id: x, agent: a }]\n');
    const lines: string[] = [];
    const logger = createLogger('test', { level: 'info' }, { write: (line: string) => lines.push(line) });
    const live = await LiveConfig.start({
      redis: t.redis,
      keys: t.keys,
      file: agents,
      workflowsFile: workflows,
      logger,
      filePollMs: 50,
    });
    try {
      expect([...live.workflows.workflows.keys()]).toEqual(['one']);
      await writeFile(
        workflows,
        'workflows:\n  - name: one\n    nodes: [{ id: x, agent: a }]\n  - name: two\n    nodes: [{ id: y, agent: a }]\n',
      );
      await waitFor(() => live.workflows.workflows.has('two'), 5000, 'the new workflow');
      await writeFile(
        workflows,
        [
          'workflows:',
          '  - name: three',
          '    nodes:',
          "      - { id: p, agent: a, depends_on: [q], input: 'p' }",
          "      - { id: q, agent: b, depends_on: [p], input: 'q' }",
        ].join('\n'),
      );
      const refused = await waitFor(
        () => lines.find((l) => l.includes('changed workflows file refused')),
        5000,
        'the refusal',
      );
      expect(refused).toContain('depends_on has a cycle: p → q → p');
      expect(refused).toContain('agent \\"b\\" is not declared in the agents file');
      expect([...live.workflows.workflows.keys()]).toEqual(['one', 'two']);
      expect(live.current().version).toBe(0);
    } finally {
      await live.close();
    }
  });
});
