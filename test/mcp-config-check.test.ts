import { describe, expect, it } from 'vitest';
import { runCli } from './helpers/cli.js';
import { FILESYSTEM_SERVER, tempDir, writeAgentsFile } from './helpers/mcp.js';

const root = tempDir('mcp-check');

/** An agents file mounting the reference filesystem server as `fs`, with `extra` servers beside it. */
function agentsFile(tools: string[], fs: Record<string, unknown> = {}, extra: unknown[] = []): string {
  return writeAgentsFile({
    agents: [{ name: 'files_agent', tools }],
    tool_groups: {
      default: {
        mcp_servers: [
          { name: 'fs', command: process.execPath, args: [FILESYSTEM_SERVER, root], ...fs },
          ...extra,
        ],
      },
    },
  });
}

describe('config check and the MCP servers of the agents file', () => {
  it('with --probe, names an agent tool the server does not list and suggests its real name', async () => {
    const file = agentsFile(['fs__read_txt_file', 'fs__list_directory']);
    const out = await runCli({ AGENTS_FILE: file }, ['config', 'check', '--probe']);
    expect(out.stdout).toMatch(/mcp server fs: up, \d+ tool\(s\) \(.*read_text_file/);
    expect(out.stderr).toContain(
      `agent "files_agent" names tool "fs__read_txt_file": server "fs" lists no tool "read_txt_file"; did you mean "fs__read_text_file"?`,
    );
    expect(out.stderr).not.toContain('fs__list_directory');
    expect(out.code).toBe(4);
  });

  it('with --probe, checks allow, deny, per-tool settings and pins against the listed tools', async () => {
    const file = agentsFile(['fs__read_text_file', 'fs__write_file'], {
      allow: ['read_text_file', 'get_fle_info'],
      tools: { read_txt_file: { timeout_ms: 1000 } },
    });
    const out = await runCli({ AGENTS_FILE: file }, ['config', 'check', '--probe']);
    expect(out.stderr).toContain(
      `mcp_servers "fs": allow names "get_fle_info", which the server does not list; did you mean "get_file_info"?`,
    );
    expect(out.stderr).toContain(
      `mcp_servers "fs": tools names "read_txt_file", which the server does not list; did you mean "read_text_file"?`,
    );
    expect(out.stderr).toContain(
      `agent "files_agent" names tool "fs__write_file": the server lists "write_file" but "allow" leaves it out`,
    );
    expect(out.code).toBe(4);
  });

  it('with --probe, reports a server whose command does not exist with the error of starting it', async () => {
    const file = agentsFile(['fs__read_text_file'], {}, [{ name: 'broken', command: 'nodee-missing' }]);
    const out = await runCli({ AGENTS_FILE: file }, ['config', 'check', '--probe']);
    expect(out.stderr).toMatch(
      /mcp_servers "broken": could not be started or reached: .*spawn nodee-missing ENOENT/,
    );
    expect(out.code).toBe(4);
  });

  it('without --probe, warns that a server command is not on PATH and passes a file with no other problem', async () => {
    const file = agentsFile(['fs__read_txt_file'], {}, [{ name: 'broken', command: 'nodee-missing' }]);
    const out = await runCli({ AGENTS_FILE: file }, ['config', 'check']);
    expect(out.stdout).toContain(
      `warning: ${file}: tool_groups.default.mcp_servers "broken": command "nodee-missing" is not found on PATH`,
    );
    // Offline, a name in a declared server's namespace is accepted: only the server knows its tools.
    expect(out.stdout).toContain('no problems found');
    expect(out.code).toBe(0);
  });

  it('without --probe, warns that a server folder does not exist', async () => {
    const file = agentsFile(['fs__read_text_file'], { cwd: `${root}/no-such-folder` });
    const out = await runCli({ AGENTS_FILE: file }, ['config', 'check']);
    expect(out.stdout).toContain(
      `warning: ${file}: tool_groups.default.mcp_servers "fs": its folder "cwd: ${root}/no-such-folder" is not a directory`,
    );
  });

  it('refuses an argument other than --probe, naming it', async () => {
    const out = await runCli({ AGENTS_FILE: agentsFile([]) }, ['config', 'check', '--prob']);
    expect(out.stderr).toContain('config check takes no arguments but --probe, got "--prob"');
    expect(out.code).toBe(2);
  });
});
