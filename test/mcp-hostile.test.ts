import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createLogger,
  liveAnnouncements,
  publishConfig,
  type ExecutorAnnouncement,
} from '@agent-reach/shared';
import { MCP_FIXTURES, writeAgentsFile } from './helpers/mcp.js';
import { startPlatform } from './helpers/platform.js';
import { waitFor } from './helpers/redis.js';

const HOSTILE = path.join(MCP_FIXTURES, 'hostile-server.mjs');
const CHANGING = path.join(MCP_FIXTURES, 'changing-server.mjs');
const MAX_MESSAGE_BYTES = 1_000_000;

const TOOLS = [
  'noisy__hello',
  'huge__huge',
  'huge__small',
  'badschema__good',
  'badschema__bad',
  'dup__twice',
  'dup__fine',
  'changing__echo',
  'changing__add_tool',
  'changing__late',
  'changing__rug_pull',
];

const hostile = (name: string, mode: string, initializeMs?: number) => ({
  name,
  command: process.execPath,
  args: [HOSTILE, mode],
  ...(initializeMs === undefined ? {} : { initialize_timeout_ms: initializeMs }),
});

/** The configuration of these tests; `pinned` accepts digests of the changing server's tools. */
const documentWith = (pinned?: Record<string, string>, extra: object[] = []) => ({
  agents: [
    { name: 'test_agent', tools: ['noop'] },
    { name: 'mcp_agent', tools: ['query_weather', ...TOOLS] },
  ],
  tool_groups: {
    default: {
      mcp_servers: [
        hostile('garbage', 'garbage', 3000),
        hostile('silent', 'silent', 1500),
        hostile('noisy', 'noisy'),
        hostile('huge', 'huge'),
        hostile('badschema', 'bad-schema'),
        hostile('dup', 'duplicate'),
        { name: 'changing', command: process.execPath, args: [CHANGING], ...(pinned ? { pinned } : {}) },
        ...extra,
      ],
    },
  },
});

describe('hostile MCP servers: each failure is named, the executor stays up, the rest keeps serving', () => {
  let p: Awaited<ReturnType<typeof startPlatform>>;
  const logs: Array<Record<string, unknown>> = [];

  beforeAll(async () => {
    const logger = createLogger(
      'test',
      { level: 'info' },
      {
        write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>),
      },
    );
    p = await startPlatform(
      { AGENTS_FILE: writeAgentsFile(documentWith()) },
      {
        logger,
        executor: {
          mcp: {
            initializeTimeoutMs: 30_000,
            maxMessageBytes: MAX_MESSAGE_BYTES,
            pingIntervalMs: 500,
            pingTimeoutMs: 15_000,
            restartBackoffMs: 200,
            restartBackoffMaxMs: 2000,
          },
        },
      },
    );
    await waitFor(
      () => p.executor.registry.has('changing__echo') && p.executor.registry.has('dup__fine'),
      45_000,
      'servers mounted',
    );
  }, 90_000);
  afterAll(async () => {
    if (process.env.MCP_DEBUG)
      console.log(
        logs
          .filter((l) => Number(l.level) >= 40)
          .map((l) => `${l.server} ${l.msg} ${l.why ?? ''} ${JSON.stringify(l.err ?? '')}`),
      );
    await p?.close();
  });

  const call = (name: string, args: unknown = {}) => p.call(name, args, 'mcp_agent');
  const announcement = async (): Promise<ExecutorAnnouncement> => {
    await p.executor.worker.publishCatalog();
    const [time, raw] = await Promise.all([p.redis.time(), p.redis.hgetall(p.keys.catalog)]);
    const [own] = liveAnnouncements(raw, Number(time[0]) * 1000);
    return own!;
  };
  const withdrawn = async (name: string) => (await announcement()).withdrawn?.find((w) => w.name === name);
  const server = async (name: string) => (await announcement()).mcpServers?.find((s) => s.name === name);

  it('names a server that writes garbage and never answers initialize, and keeps restarting it', async () => {
    const pattern =
      /server "garbage": did not answer initialize within 3000 ms \(it wrote \d+ lines that are not JSON-RPC\)/;
    const garbage = await waitFor(
      async () => {
        const s = await server('garbage');
        return pattern.test(s?.error ?? '') && s;
      },
      25_000,
      'the garbage server named',
    );
    expect(garbage).toMatchObject({ up: false, tools: 0 });
  });

  it('names a server that never finishes initialize', async () => {
    const silent = await waitFor(async () => (await server('silent'))?.error && server('silent'), 20_000);
    expect(silent).toMatchObject({
      up: false,
      error: expect.stringMatching(/server "silent": did not answer initialize within 1500 ms/),
    });
  });

  it('keeps serving a server that writes garbage between its answers, and counts what it ignored', async () => {
    expect(await call('noisy__hello')).toMatchObject({ ok: true, content: 'hello ok' });
    // The executor's own tools are untouched by any of it.
    expect(await call('query_weather', { city: '杭州' })).toMatchObject({ ok: true });
    expect(logs.some((l) => l.server === 'noisy' && /not JSON-RPC/.test(String(l.msg)))).toBe(true);
  });

  it('closes the connection of a result over the size cap, answers an error naming it, and serves again after the restart', async () => {
    const result = await call('huge__huge');
    expect(result).toMatchObject({
      ok: false,
      error: {
        kind: 'execution_error',
        retryable: false,
        message: `server "huge": tool "huge": the server sent a message over ${MAX_MESSAGE_BYTES} bytes; the connection was closed`,
      },
    });
    await waitFor(async () => (await server('huge'))?.up, 20_000, 'huge back up');
    expect(await call('huge__small')).toMatchObject({ ok: true, content: 'small ok' });
  });

  it('refuses a tool whose schema ajv cannot compile, naming server and tool, and mounts its sibling', async () => {
    expect(await withdrawn('badschema__bad')).toMatchObject({
      server: 'badschema',
      reason: 'refused',
      message: expect.stringMatching(
        /^server "badschema": tool "bad" refused: .*parameters is not a valid JSON Schema/,
      ),
    });
    expect((await call('badschema__bad', { x: 'a' })).error?.kind).toBe('unknown_tool');
    expect(await call('badschema__good', { x: 'a' })).toMatchObject({ ok: true, content: 'good ok' });
  });

  it('mounts neither of two tools listed under one name, and says so', async () => {
    expect(await withdrawn('dup__twice')).toMatchObject({
      reason: 'refused',
      message: 'server "dup": tool "twice" is listed twice; neither is mounted',
    });
    expect((await call('dup__twice')).error?.kind).toBe('unknown_tool');
    expect(await call('dup__fine')).toMatchObject({ ok: true, content: 'fine ok' });
  });

  it('follows a server that adds a tool (tools/list_changed) into the announced catalog', async () => {
    expect(p.executor.registry.has('changing__late')).toBe(false);
    expect(await call('changing__add_tool')).toMatchObject({ ok: true, content: 'added' });
    await waitFor(
      async () => (await announcement()).tools.some((t) => t.name === 'changing__late'),
      15_000,
      'late announced',
    );
    expect(await call('changing__late')).toMatchObject({ ok: true, content: 'late ok' });
  });

  it('hides a tool whose description changes after it was pinned, reports it, and serves it again once a configuration accepts the new digest', async () => {
    const before = p.executor.registry.get('changing__echo')?.origin?.digest;
    expect(before).toMatch(/^[0-9a-f]{64}$/);
    expect(await call('changing__rug_pull')).toMatchObject({ ok: true, content: 'changed' });
    const changed = await waitFor(() => withdrawn('changing__echo'), 15_000, 'echo withdrawn');
    expect(changed).toMatchObject({
      server: 'changing',
      reason: 'digest_changed',
      pinned: before,
      digest: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    expect(changed.digest).not.toBe(before);
    expect((await announcement()).tools.some((t) => t.name === 'changing__echo')).toBe(false);
    expect((await call('changing__echo', { text: 'hi' })).error?.kind).toBe('unknown_tool');
    expect(
      logs.some((l) => l.security === true && l.tool === 'changing__echo' && l.digest === changed.digest),
    ).toBe(true);
    // The operator accepts the new description: a configuration pins it (the garbage server dropped too).
    const accepted = documentWith({ echo: changed.digest! });
    accepted.tool_groups.default.mcp_servers = accepted.tool_groups.default.mcp_servers.filter(
      (s) => (s as { name: string }).name !== 'garbage',
    );
    await publishConfig(p.producer, p.keys, accepted as never, 'test');
    await waitFor(() => p.executor.registry.has('changing__echo'), 15_000, 'echo accepted');
    expect(await call('changing__echo', { text: 'hi again' })).toMatchObject({
      ok: true,
      content: 'hi again',
    });
    expect(await withdrawn('changing__echo')).toBeUndefined();
    // Removed by the configuration: stopped, no longer announced.
    await waitFor(async () => (await server('garbage')) === undefined, 15_000, 'garbage stopped');
  });
});
