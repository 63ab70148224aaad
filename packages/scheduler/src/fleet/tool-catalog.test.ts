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
