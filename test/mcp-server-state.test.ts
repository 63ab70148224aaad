import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmodSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolResult } from '@agent-reach/protocol';
import {
  createLogger,
  liveAnnouncements,
  mcpServersOf,
  publishConfig,
  type ConfigDocument,
  type ExecutorAnnouncement,
} from '@agent-reach/shared';
import { Dispatcher, ToolCatalog } from '@agent-reach/scheduler/internal';
import { seedCalls, seedRun } from './helpers/ledger.js';
import { toolMessages } from './helpers/loop.js';
import { FILESYSTEM_SERVER, MCP_FIXTURES, tempDir, untilOffered, writeAgentsFile } from './helpers/mcp.js';
import { runCli } from './helpers/cli.js';
import { REDIS_URL, waitFor } from './helpers/redis.js';
import { apiEnv, startRunsHarness } from './helpers/runs.js';

const API_KEY = 'mcp-state-key-0123456789abcdef';
const MISSING = 'agent-reach-no-such-command';
const HOSTILE = path.join(MCP_FIXTURES, 'hostile-server.mjs');
const FS_TOOLS = ['fs__list_directory', 'fs__read_text_file'];

describe('MCP server states: seen per server and per tool, and a down server answered at once', () => {
  let h: Awaited<ReturnType<typeof startRunsHarness>>;
  const root = tempDir('mcp-state');
  writeFileSync(path.join(root, 'notes.txt'), 'the meeting moved to Thursday');
  const fs = { name: 'fs', command: process.execPath, args: [FILESYSTEM_SERVER, root] };
  // A server started through a script the test deletes: once killed, it cannot start again.
  const fragileRoot = tempDir('mcp-fragile');
  const fragileScript = path.join(fragileRoot, 'start-server.sh');
  writeFileSync(
    fragileScript,
    `#!/bin/sh\nexec "${process.execPath}" "${FILESYSTEM_SERVER}" "${fragileRoot}"\n`,
  );
  chmodSync(fragileScript, 0o755);
  const documentWith = (fsExtra: object = {}): ConfigDocument =>
    ({
      agents: [
        { name: 'test_agent', tools: ['query_weather'] },
        { name: 'files_agent', tools: [...FS_TOOLS, 'broken__read'] },
        { name: 'fragile_agent', tools: ['fragile__list_directory'] },
      ],
      tool_groups: {
        default: {
          mcp_servers: [
            { ...fs, ...fsExtra },
            { name: 'broken', command: MISSING },
            { name: 'fragile', command: fragileScript },
          ],
        },
      },
    }) as unknown as ConfigDocument;

  beforeAll(async () => {
    h = await startRunsHarness(
      { AGENTS_FILE: writeAgentsFile(documentWith()), ...apiEnv(API_KEY) },
      {
        executorOptions: {
          mcp: { restartBackoffMs: 200, restartBackoffMaxMs: 1000, pingIntervalMs: 1000 },
        },
      },
    );
    await untilOffered(h, [...FS_TOOLS, 'fragile__list_directory']);
  }, 60_000);
  afterAll(async () => h?.close());

  const announcement = async (): Promise<ExecutorAnnouncement> => {
    await h.executor!.worker.publishCatalog();
    const [time, raw] = await Promise.all([h.redis.time(), h.redis.hgetall(h.keys.catalog)]);
    return liveAnnouncements(raw, Number(time[0]) * 1000)[0]!;
  };
  const agentTools = async () => {
    const res = await fetch(`${h.schedulers[0]!.apiUrl}/v1/agents`, {
      headers: { authorization: `Bearer ${API_KEY}` },
    });
    const body = (await res.json()) as { agents: Array<{ name: string; tools: Array<Record<string, any>> }> };
    const agent = body.agents.find((a) => a.name === 'files_agent')!;
    return new Map(agent.tools.map((t) => [t.name as string, t]));
  };

  it('announces each server with its state, since when, restarts, tool count and the error of one that cannot start', async () => {
    const servers = await waitFor(async () => {
      const list = (await announcement()).mcpServers ?? [];
      return list.find((s) => s.name === 'broken')?.state === 'down' ? list : undefined;
    }, 20_000);
    expect(servers.find((s) => s.name === 'fs')).toMatchObject({
      up: true,
      state: 'up',
      since: expect.any(Number),
      restarts: 0,
      tools: expect.any(Number),
    });
    expect(servers.find((s) => s.name === 'fs')!.tools).toBeGreaterThan(2);
    expect(servers.find((s) => s.name === 'broken')).toMatchObject({
      up: false,
      state: 'down',
      since: expect.any(Number),
      tools: 0,
      error: expect.stringContaining(`spawn ${MISSING} ENOENT`),
    });
    const metrics = await (await fetch(`http://127.0.0.1:${h.executor!.metricsPort}/metrics`)).text();
    expect(metrics).toContain('agent_reach_mcp_server_state{server="broken",state="down"} 1');
    expect(metrics).toContain('agent_reach_mcp_server_state{server="broken",state="starting"} 0');
    expect(metrics).toContain('agent_reach_mcp_server_state{server="fs",state="up"} 1');
    expect(metrics).toContain('agent_reach_mcp_server_up{server="broken"} 0');
  });

  it('says on /v1/agents which tools an executor can run now and the state of each tool’s server', async () => {
    const tools = await waitFor(async () => {
      const t = await agentTools();
      return t.get('broken__read')?.mcp_server?.state === 'down' ? t : undefined;
    }, 20_000);
    expect(tools.get('fs__list_directory')).toMatchObject({
      registered: true,
      served: true,
      mcp_server: { name: 'fs', state: 'up', executors: [{ state: 'up', restarts: 0, digests_refused: 0 }] },
    });
    expect(tools.get('broken__read')).toMatchObject({
      registered: false,
      served: false,
      mcp_server: {
        name: 'broken',
        state: 'down',
        since: expect.any(Number),
        error: expect.stringContaining(`spawn ${MISSING} ENOENT`),
        executors: [{ state: 'down', tools: 0 }],
      },
    });
  });

  it('prints each server and each agent MCP tool with its state on agent-reach mcp', async () => {
    const out = await runCli({ REDIS_URL, AR_KEY_PREFIX: h.prefix, AGENTS_FILE: h.config.agentsFile }, [
      'mcp',
    ]);
    expect(out.code).toBe(0);
    expect(out.stdout).toMatch(/^fs \(group default\): up since \S+ on 1 executor\(s\)$/m);
    expect(out.stdout).toMatch(
      /^ {2}executor-\S+: up since \S+, \d+ tool\(s\), 0 restart\(s\), settings of version 0$/m,
    );
    expect(out.stdout).toMatch(
      new RegExp(
        `^broken \\(group default\\): down since \\S+ on 1 executor\\(s\\): server "broken": .*spawn ${MISSING} ENOENT`,
        'm',
      ),
    );
    expect(out.stdout).toContain(
      'agent files_agent: fs__list_directory served; fs__read_text_file served; broken__read not served (server broken down)',
    );
  });

  it('answers a call to a tool whose server cannot start unavailable with the server’s error, short for the model and whole in the record', async () => {
    await waitFor(async () => {
      const catalog = await h.schedulers[0]!.runner.catalog.refresh();
      return catalog.downServer('broken__read') !== undefined;
    }, 20_000);
    h.sim.addScenario({
      name: 'broken-call',
      turns: [
        { tool_calls: [{ name: 'broken__read', arguments: { path: 'x' } }] },
        { content: '{{ last.error.kind }}' },
      ],
    });
    const runId = await h.control.start({ agent: 'files_agent', input: 'read x', model: 'broken-call' });
    const outcome = await h.control.wait(runId, 30_000);
    // The model read the answer; the run is not taken for a success, since no tool ran.
    expect(outcome).toMatchObject({
      status: 'failed',
      reason: 'no_tool_available',
      answer: 'unavailable',
      report: expect.stringContaining('broken__read: unavailable'),
    });
    const record = await h.control.get(runId);
    const step = record?.state?.steps.find((st) => st.tool === 'broken__read');
    expect(step).toMatchObject({
      error_kind: 'unavailable',
      error_detail: expect.stringMatching(
        new RegExp(
          `^MCP server "broken" is down since .* on 1 executor\\(s\\): server "broken": .*spawn ${MISSING} ENOENT`,
        ),
      ),
    });
    const last = h.sim.requests.filter((r) => r.scenario === 'broken-call').at(-1);
    const [seen] = toolMessages(last!.body as never);
    expect(seen?.result.error).toMatchObject({
      kind: 'unavailable',
      message: expect.stringContaining(
        `its MCP server "broken" is down (could not be initialized: spawn ${MISSING} ENOENT)`,
      ),
    });
    expect(seen?.result.error).not.toHaveProperty('detail');
    // Not the answer of a call that waited for an executor until its time ran out.
    expect(seen?.result.error.message).not.toContain('in time');
  });

  it('lets calls made while a killed stdio server restarts wait for it: each succeeds and the breaker stays closed', async () => {
    const before = (await announcement()).mcpServers!.find((s) => s.name === 'fs')!.restarts ?? 0;
    const pid = serverPid(root);
    const run = { runId: `run-${randomUUID()}`, agent: 'files_agent' };
    await seedRun(h.producer, h.keys, run);
    const calls = Array.from({ length: 8 }, (_, i) => ({
      toolCallId: `call_${i}`,
      name: 'fs__list_directory',
      arguments: JSON.stringify({ path: root }),
    }));
    await seedCalls(h.producer, h.keys, run, calls);
    process.kill(pid, 'SIGKILL');
    const results: ToolResult[] = await h.schedulers[0]!.runner.dispatcher.dispatch(
      { runId: run.runId, traceId: run.runId, agent: run.agent },
      calls,
    );
    expect(results.map((r) => r.error?.kind ?? 'ok')).toEqual(calls.map(() => 'ok'));
    expect(h.executor!.worker.breakers.state('fs__list_directory')).toBe('closed');
    const after = await waitFor(async () => {
      const fsServer = (await announcement()).mcpServers!.find((s) => s.name === 'fs');
      return fsServer?.state === 'up' && fsServer.tools > 0 ? fsServer : undefined;
    }, 20_000);
    expect(after.restarts).toBeGreaterThan(before);
    expect(serverPid(root)).not.toBe(pid);
  });

  it('follows a tool its executor withdraws into a scheduler’s catalog without waiting for a periodic read', async () => {
    const catalog = new ToolCatalog(h.producer, h.keys).follow();
    try {
      await catalog.refresh();
      expect(catalog.has('fs__read_text_file')).toBe(true);
      // Only this catalog's subscription reads it again from here on.
      await publishConfig(h.producer, h.keys, documentWith({ deny: ['read_text_file'] }), 'test');
      await waitFor(() => !catalog.has('fs__read_text_file'), 20_000, 'the withdrawal followed');
      expect(catalog.has('fs__list_directory')).toBe(true);
    } finally {
      await catalog.close();
      await publishConfig(h.producer, h.keys, documentWith(), 'test');
    }
  });
  it('answers a waiting call as soon as its server, still starting when the call was made, fails to start', async () => {
    const slow = {
      name: 'slow',
      command: process.execPath,
      args: [HOSTILE, 'silent'],
      initialize_timeout_ms: 5000,
    };
    const document = documentWith();
    const withSlow = {
      ...document,
      tool_groups: { default: { mcp_servers: [...mcpServersOf(document).map((m) => m.spec), slow] } },
    } as unknown as ConfigDocument;
    const catalog = new ToolCatalog(h.producer, h.keys, {
      mcpServers: () => mcpServersOf(withSlow),
    }).follow();
    const dispatcher = new Dispatcher({
      connection: h.producer,
      keys: h.keys,
      catalog,
      logger: createLogger('t', { level: 'silent' }),
    });
    try {
      await publishConfig(h.producer, h.keys, withSlow, 'test');
      // The executor runs it and it has not answered initialize yet.
      await waitFor(
        async () => (await announcement()).mcpServers?.find((s) => s.name === 'slow')?.state === 'starting',
      );
      await catalog.refresh();
      const run = { runId: `run-${randomUUID()}`, agent: 'test_agent' };
      const call = { toolCallId: 'call_slow', name: 'slow__anything', arguments: '{}' };
      await seedRun(h.producer, h.keys, run);
      await seedCalls(h.producer, h.keys, run, [call]);
      const [result] = await dispatcher.dispatch({ ...run, traceId: run.runId }, [call], { fresh: true });
      expect(result?.error).toMatchObject({
        kind: 'unavailable',
        message: expect.stringContaining(
          'its MCP server "slow" is down (did not answer initialize within 5000 ms)',
        ),
      });
      expect(result?.attempts).toBe(0);
    } finally {
      await dispatcher.close();
      await catalog.close();
      await publishConfig(h.producer, h.keys, documentWith(), 'test');
    }
  });

  it('answers at once, naming the error, a call to a tool whose server was killed and cannot start again', async () => {
    const pid = serverPid(fragileRoot);
    unlinkSync(fragileScript);
    process.kill(pid, 'SIGKILL');
    await waitFor(async () => {
      const catalog = await h.schedulers[0]!.runner.catalog.refresh();
      return catalog.downServer('fragile__list_directory') !== undefined;
    }, 20_000);
    h.sim.addScenario({
      name: 'fragile-call',
      turns: [
        { tool_calls: [{ name: 'fragile__list_directory', arguments: { path: fragileRoot } }] },
        { content: '{{ last.error.message }}' },
      ],
    });
    const runId = await h.control.start({ agent: 'fragile_agent', input: 'list', model: 'fragile-call' });
    const outcome = await h.control.wait(runId, 30_000);
    expect(outcome.answer).toMatch(
      /^"fragile__list_directory" cannot run now: its MCP server "fragile" is down \(could not be initialized: spawn \S+start-server\.sh ENOENT\)/,
    );
    expect(h.executor!.worker.breakers.state('fragile__list_directory')).toBe('closed');
  });
});

/** The pid of the filesystem server started for `root` (the executor's child). */
function serverPid(root: string): number {
  const lines = execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' }).split('\n');
  const line = lines.find((l) => l.includes(FILESYSTEM_SERVER) && l.includes(root));
  if (!line) throw new Error(`no filesystem server running for ${root}`);
  return Number(line.trim().split(/\s+/)[0]);
}
