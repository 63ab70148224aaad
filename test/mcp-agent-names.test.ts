import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, publishConfig, type ConfigDocument } from '@agent-reach/shared';
import { FILESYSTEM_SERVER, tempDir, writeAgentsFile } from './helpers/mcp.js';
import { startPlatform } from './helpers/platform.js';
import { waitFor } from './helpers/redis.js';

const MESSAGE = 'an agent names a tool its MCP server does not offer; the agent does not have it';

describe('an agent naming a tool its MCP server does not offer is a warning of the executor', () => {
  let p: Awaited<ReturnType<typeof startPlatform>>;
  const logs: Array<Record<string, unknown>> = [];
  const root = tempDir('mcp-names');
  const documentWith = (tools: string[]) =>
    ({
      agents: [
        { name: 'test_agent', tools: ['noop'] },
        { name: 'files_agent', tools },
      ],
      tool_groups: {
        default: {
          mcp_servers: [{ name: 'fs', command: process.execPath, args: [FILESYSTEM_SERVER, root] }],
        },
      },
    }) as unknown as ConfigDocument;
  const warned = (tool: string) =>
    waitFor(() => logs.find((l) => l.msg === MESSAGE && l.tool === tool), 20_000, `a warning for ${tool}`);

  beforeAll(async () => {
    const logger = createLogger(
      'test',
      { level: 'warn' },
      { write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) },
    );
    p = await startPlatform(
      { AGENTS_FILE: writeAgentsFile(documentWith(['fs__list_directory', 'fs__read_txt_file'])) },
      { logger },
    );
  }, 60_000);
  afterAll(async () => p?.close());

  it('names the agent, the tool and the closest tool the server offers once the server is up', async () => {
    expect(await warned('fs__read_txt_file')).toMatchObject({
      level: 40,
      agent: 'files_agent',
      server: 'fs',
      didYouMean: 'fs__read_text_file',
    });
    expect(logs.some((l) => l.msg === MESSAGE && l.tool === 'fs__list_directory')).toBe(false);
  });

  it('says so too for a name a live configuration brings, without the server restarting', async () => {
    await publishConfig(p.producer, p.keys, documentWith(['fs__list_directory', 'fs__writ_file']), 'test');
    expect(await warned('fs__writ_file')).toMatchObject({
      agent: 'files_agent',
      didYouMean: 'fs__write_file',
    });
  });
});
