import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { parseAgents, parseAgentsCheck } from './agents.js';
import type { ConfigDocument } from './agents.js';
import { pinAnnouncedDigests } from './agents.js';

const server = (extra: Record<string, unknown>) => ({ name: 'fs', command: 'node', ...extra });
const doc = (servers: unknown[], tools = ['query_weather']) =>
  stringify({ agents: [{ name: 'files_agent', tools }], tool_groups: { files: { mcp_servers: servers } } });

describe('MCP servers in the configuration document', () => {
  it('accepts a stdio and an HTTP server, and takes names in their namespaces before they ever ran', () => {
    const file = parseAgents(
      doc(
        [
          server({
            args: ['x.js'],
            env: { TOKEN: '${FS_TOKEN}' },
            allow: ['read_file'],
            tools: { read_file: { timeout_ms: 100 } },
          }),
          {
            name: 'search',
            url: 'http://127.0.0.1:1/mcp',
            headers_from_env: { Authorization: 'SEARCH_TOKEN' },
          },
        ],
        ['query_weather', 'fs__read_file', 'search__query'],
      ),
      'agents.yaml',
      ['query_weather'],
    );
    expect(file.toolGroups.get('files')?.mcp_servers).toHaveLength(2);
    expect(parseAgentsCheck(file, ['query_weather'])).toEqual([]);
  });

  it('still refuses a tool outside every declared namespace', () => {
    expect(() =>
      parseAgents(doc([server({})], ['other__read_file']), 'agents.yaml', ['query_weather']),
    ).toThrow(/tools\[0\] "other__read_file" is not a registered tool/);
  });

  it('lists every problem of the servers at once, each naming the group and the server', () => {
    let details: readonly string[] = [];
    try {
      parseAgents(
        doc([
          server({ url: 'http://x/mcp' }),
          { name: 'web', url: 'http://x/mcp', args: ['a'], allow: ['a'], deny: ['b'] },
          { name: 'fs', command: 'node' },
        ]),
        'agents.yaml',
      );
    } catch (err) {
      details = (err as { details: string[] }).details;
    }
    expect(details).toEqual([
      'agents.yaml: tool_groups.files.mcp_servers "fs": needs exactly one of "command" (stdio) or "url" (streamable HTTP)',
      'agents.yaml: tool_groups.files.mcp_servers "web": "args", "env" and "cwd" are for a stdio server ("command"), not a "url"',
      'agents.yaml: tool_groups.files.mcp_servers "web": give "allow" or "deny", not both',
      'agents.yaml: tool_groups.files.mcp_servers "fs": the server name is declared twice',
    ]);
  });

  it('refuses by schema a server name with "_" (it would blur the namespace), a secret in headers, an unknown key', () => {
    let details: readonly string[] = [];
    try {
      parseAgents(
        doc([
          { name: 'my_fs', command: 'node' },
          { name: 'web', url: 'http://x/mcp', headers_from_env: { Authorization: 'Bearer abc.def' } },
          server({ name: 'x', restart: true }),
        ]),
        'agents.yaml',
      );
    } catch (err) {
      details = (err as { details: string[] }).details;
    }
    expect(details).toEqual([
      expect.stringMatching(/tool_groups\.files\.mcp_servers\.0\.name must match pattern/),
      expect.stringMatching(
        /tool_groups\.files\.mcp_servers\.1\.headers_from_env\.Authorization must match pattern/,
      ),
      expect.stringMatching(/tool_groups\.files\.mcp_servers\.2: unknown field "restart"/),
    ]);
  });
});

describe('config apply pinning the digests the fleet serves', () => {
  const mcp = (server: string, tool: string, digest: string) => ({
    origin: { kind: 'mcp', server, tool, digest },
  });
  const document: ConfigDocument = {
    agents: [],
    tool_groups: {
      files: { mcp_servers: [{ name: 'fs', command: 'node', pinned: { write_file: 'b'.repeat(64) } }] },
      slow: { concurrency: 2 },
    },
  };

  it('pins each announced tool the document leaves unpinned, and keeps the pins it has', () => {
    const pinned = pinAnnouncedDigests(document, [
      mcp('fs', 'read_file', 'a'.repeat(64)),
      mcp('fs', 'write_file', 'c'.repeat(64)),
      mcp('other', 'x', 'd'.repeat(64)),
      {},
    ]);
    expect(pinned.tool_groups?.files?.mcp_servers?.[0]?.pinned).toEqual({
      read_file: 'a'.repeat(64),
      write_file: 'b'.repeat(64),
    });
    expect(pinned.tool_groups?.slow).toEqual({ concurrency: 2 });
    // The caller's document is not written to.
    expect(document.tool_groups?.files?.mcp_servers?.[0]?.pinned).toEqual({ write_file: 'b'.repeat(64) });
  });

  it('leaves a document unchanged when the fleet announces no MCP tool', () => {
    expect(pinAnnouncedDigests(document, [{}])).toBe(document);
  });
});
