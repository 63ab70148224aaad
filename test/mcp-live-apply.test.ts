import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { liveAnnouncements } from '@agent-reach/shared';
import { runCli } from './helpers/cli.js';
import { FILESYSTEM_SERVER, tempDir, untilOffered, writeAgentsFile } from './helpers/mcp.js';
import { REDIS_URL, waitFor } from './helpers/redis.js';
import { startRunsHarness } from './helpers/runs.js';

const MISSING = 'agent-reach-no-such-command';

describe('a live apply of MCP servers: a broken replacement never takes a working server down, and the applier is told', () => {
  let h: Awaited<ReturnType<typeof startRunsHarness>>;
  const root = tempDir('mcp-apply');
  writeFileSync(path.join(root, 'notes.txt'), 'the meeting moved to Thursday');
  const fs = { name: 'fs', command: process.execPath, args: [FILESYSTEM_SERVER, root] };
  const documentWith = (server: object, tools = ['fs__list_directory', 'fs__read_text_file']) => ({
    agents: [
      { name: 'test_agent', tools: ['query_weather'] },
      { name: 'files_agent', tools },
    ],
    tool_groups: { default: { mcp_servers: [server] } },
  });
  const apply = (document: object) =>
    runCli({ REDIS_URL, AR_KEY_PREFIX: h.prefix, AGENTS_FILE: h.config.agentsFile }, [
      'config',
      'apply',
      writeAgentsFile(document),
    ]);
  const fsServer = async () => {
    const [time, raw] = await Promise.all([h.redis.time(), h.redis.hgetall(h.keys.catalog)]);
    return liveAnnouncements(raw, Number(time[0]) * 1000)[0]?.mcpServers?.find((s) => s.name === 'fs');
  };

  beforeAll(async () => {
    h = await startRunsHarness(
      { AGENTS_FILE: writeAgentsFile(documentWith(fs)) },
      { executorOptions: { mcp: { restartBackoffMs: 200, restartBackoffMaxMs: 1000 } } },
    );
    await untilOffered(h, ['fs__list_directory', 'fs__read_text_file']);
  }, 60_000);
  afterAll(async () => h?.close());

  it('keeps the working server serving when the applied one cannot start, and says so in the apply’s output', async () => {
    const out = await apply(documentWith({ ...fs, command: MISSING }));
    expect(out.stdout).toContain('published configuration version 1');
    expect(out.stderr).toMatch(
      new RegExp(
        `warning: mcp server fs on executor-\\S+: the change of version 1 did not start \\(.*spawn ${MISSING} ENOENT.*\\); the server as it was \\(version 0\\) keeps serving`,
      ),
    );
    expect(out.code).toBe(0);
    expect(await fsServer()).toMatchObject({
      state: 'up',
      version: 0,
      changeRefused: { version: 1, error: expect.stringContaining('ENOENT') },
    });
    const metrics = await (await fetch(`http://127.0.0.1:${h.executor!.metricsPort}/metrics`)).text();
    expect(metrics).toContain('agent_reach_mcp_server_change_refused{server="fs"} 1');
    expect(metrics).toContain('agent_reach_mcp_server_up{server="fs"} 1');
    h.sim.addScenario({
      name: 'fs-list-after-apply',
      turns: [
        { tool_calls: [{ name: 'fs__list_directory', arguments: { path: root } }] },
        { content: 'listed: {{ last.content.content }}' },
      ],
    });
    const runId = await h.control.start({
      agent: 'files_agent',
      input: 'list',
      model: 'fs-list-after-apply',
    });
    expect(await h.control.wait(runId, 30_000)).toMatchObject({
      status: 'succeeded',
      answer: 'listed: [FILE] notes.txt',
    });
  });

  it('tells the applier that an agent names a tool its server does not offer, with the real name', async () => {
    const out = await apply(documentWith(fs, ['fs__list_directory', 'fs__read_txt_file']));
    expect(out.stdout).toContain('published configuration version 2');
    expect(out.stdout).toMatch(/mcp server fs on executor-\S+: up, \d+ tool\(s\)/);
    expect(out.stderr).toContain(
      'warning: agent "files_agent" names "fs__read_txt_file", which server "fs" does not offer; did you mean "fs__read_text_file"?: the agent does not have that tool',
    );
    // Back to the command that runs: the refused change is forgotten.
    const server = await waitFor(async () => {
      const s = await fsServer();
      return s?.version === 2 ? s : undefined;
    });
    expect(server).not.toHaveProperty('changeRefused');
    const metrics = await (await fetch(`http://127.0.0.1:${h.executor!.metricsPort}/metrics`)).text();
    expect(metrics).toContain('agent_reach_mcp_server_change_refused{server="fs"} 0');
  });

  it('replaces the server once the applied one is up', async () => {
    const before = await fsServer();
    const out = await apply(documentWith({ ...fs, env: { AGENT_REACH_TEST_RESTART: '1' } }));
    expect(out.stdout).toMatch(/mcp server fs on executor-\S+: up, \d+ tool\(s\)/);
    expect(out.stderr).toBe('');
    const after = await fsServer();
    expect(after).toMatchObject({ state: 'up', version: 3 });
    expect(after?.since).toBeGreaterThanOrEqual(before?.since ?? Infinity);
  });

  it('drops a removed server from the metrics, so no alert goes on about a server nobody runs', async () => {
    const metrics = async () => (await fetch(`http://127.0.0.1:${h.executor!.metricsPort}/metrics`)).text();
    expect(await metrics()).toContain('agent_reach_mcp_server_up{server="fs"} 1');
    const out = await apply({ agents: [{ name: 'test_agent', tools: ['query_weather'] }] });
    expect(out.code).toBe(0);
    const left = await waitFor(async () => {
      const text = await metrics();
      return text.includes('server="fs"') ? undefined : text;
    }, 20_000);
    expect(left).toContain('# TYPE agent_reach_mcp_server_up gauge');
  });
});
