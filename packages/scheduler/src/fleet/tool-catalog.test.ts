import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKeys } from '@agent-reach/protocol';
import { constants, createRedis, waitReady, type McpServerSpec, type RedisClient } from '@agent-reach/shared';
import { REDIS_URL } from '@agent-reach/testing';
import { ToolCatalog } from './tool-catalog.js';

let redis: RedisClient;

beforeAll(async () => {
  redis = createRedis(REDIS_URL, 'producer');
  await waitReady(redis, REDIS_URL);
});

afterAll(async () => {
  await redis.quit();
});

describe('ToolCatalog: tools of configured MCP servers before any executor announces them', () => {
  it("routes a tool in a configured MCP server's namespace to the server's group while nothing announces it", async () => {
    // A fresh prefix: no executor announces anything, as right after the whole fleet restarted.
    const keys = createKeys(`t${randomUUID().slice(0, 8)}`);
    const fs = { name: 'fs', command: 'node' } as unknown as McpServerSpec;
    const catalog = await new ToolCatalog(redis, keys, {
      memoryMs: 0,
      mcpServers: () => [{ group: 'files', spec: fs }],
    }).refresh();
    expect(catalog.has('fs__read_file')).toBe(false);
    expect(catalog.expectedGroup('fs__read_file')).toBe('files');
    expect(catalog.group('fs__read_file')).toBe('files');
    // Outside every configured namespace nothing is expected: such a name stays unknown.
    expect(catalog.expectedGroup('web__fetch')).toBeUndefined();
    expect(catalog.expectedGroup('fsread')).toBeUndefined();
    expect(catalog.group('web__fetch')).toBe(constants.DEFAULT_TOOL_GROUP);
  });
});

describe('ToolCatalog: MCP servers as the fleet runs them', () => {
  /** Writes an executor's announcement of `servers` (and `tools`), valid for a minute. */
  const announce = async (
    keys: ReturnType<typeof createKeys>,
    executorId: string,
    servers: object[],
    tools: object[] = [],
  ) => {
    const [seconds] = await redis.time();
    const expiresAt = Number(seconds) * 1000 + 60_000;
    await redis.hset(
      keys.catalog,
      executorId,
      JSON.stringify({ expiresAt, executorId, groups: ['default'], tools, mcpServers: servers }),
    );
  };
  const tool = (name: string, server: string) => ({
    name,
    description: 'd',
    parameters: { type: 'object' },
    group: 'default',
    origin: { kind: 'mcp', server, tool: name.split('__')[1], digest: 'x' },
  });

  it('counts a server up when one executor has it up, down only when every executor has it down', async () => {
    const keys = createKeys(`t${randomUUID().slice(0, 8)}`);
    await announce(keys, 'e1', [
      { name: 'fs', group: 'default', up: false, state: 'down', since: 2000, tools: 0, error: 'old error' },
    ]);
    await announce(
      keys,
      'e2',
      [{ name: 'fs', group: 'default', up: true, state: 'up', since: 1000, tools: 1 }],
      [tool('fs__read', 'fs')],
    );
    const catalog = await new ToolCatalog(redis, keys).refresh();
    expect(catalog.mcpServerOf('fs__read')).toMatchObject({ name: 'fs', state: 'up', since: 1000 });
    expect(catalog.served('fs__read')).toBe(true);
    expect(catalog.downServer('fs__read')).toBeUndefined();

    await announce(keys, 'e2', [
      { name: 'fs', group: 'default', up: false, state: 'down', since: 3000, tools: 0, error: 'new error' },
    ]);
    await catalog.refresh();
    // The tool e2 no longer announces is not kept by the memory: live executors run its server.
    expect(catalog.has('fs__read')).toBe(false);
    expect(catalog.served('fs__read')).toBe(false);
    expect(catalog.downServer('fs__read')).toMatchObject({
      state: 'down',
      since: 2000,
      error: 'new error',
    });
    expect(
      catalog
        .downServer('fs__read')
        ?.executors.map((e) => e.executorId)
        .sort(),
    ).toEqual(['e1', 'e2']);
  });

  it('takes a server an older executor reports without a state as starting, not down', async () => {
    const keys = createKeys(`t${randomUUID().slice(0, 8)}`);
    await announce(keys, 'old', [{ name: 'fs', group: 'default', up: false, tools: 0, error: 'restarting' }]);
    const catalog = await new ToolCatalog(redis, keys).refresh();
    expect(catalog.mcpServerOf('fs__read')?.state).toBe('starting');
    expect(catalog.downServer('fs__read')).toBeUndefined();
  });
});
