import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKeys } from '@agent-reach/protocol';
import { createRedis, redisUnavailable, waitReady } from '@agent-reach/shared';
import { RunControl, startApiServer, type ApiServer } from '@agent-reach/scheduler';
import { bareApiDeps, request, TEST_API_KEYS } from './helpers/api.js';
import { waitFor } from './helpers/redis.js';

async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}

/** Every route a caller uses, with a body where it needs one. */
const ROUTES: Array<[string, string, unknown?]> = [
  ['POST', '/v1/runs', { agent: 'test_agent', input: 'hello' }],
  ['GET', '/v1/runs'],
  ['GET', '/v1/runs/run_somewhere'],
  ['GET', '/v1/runs/run_somewhere/events'],
  ['POST', '/v1/runs/run_somewhere/cancel'],
  ['POST', '/v1/runs/run_somewhere/approvals', { tool_call_id: 'call_1', decision: 'approve' }],
  ['POST', '/v1/sessions', { session_id: 'sess-down' }],
  ['GET', '/v1/sessions/sess-down'],
  ['POST', '/v1/sessions/sess-down/messages', { agent: 'test_agent', input: 'hello' }],
  ['GET', '/v1/agents'],
];

describe('HTTP API while Redis is unavailable: 503 UNAVAILABLE with Retry-After, never 500', () => {
  let server: ChildProcess;
  let url: string;
  let admin: Redis;
  let redis: Redis;
  let queued: Redis;
  let api: ApiServer;
  let control: RunControl;

  beforeAll(async () => {
    const port = await freePort();
    url = `redis://127.0.0.1:${port}`;
    server = spawn('redis-server', ['--port', String(port), '--save', '', '--appendonly', 'no'], {
      stdio: 'ignore',
    });
    admin = createRedis(url, 'worker', { retryStrategy: () => 50 });
    // The outage is the point of these tests: its connection errors are expected.
    admin.on('error', () => undefined);
    await waitReady(admin, url, 10_000);
    // The API's connection as the scheduler makes it: no offline queue, a command timeout.
    redis = createRedis(url, 'producer', { commandTimeout: 500 });
    redis.on('error', () => undefined);
    await waitReady(redis, url);
    // The tool catalog reads on the scheduler's own connection, which queues commands through an outage.
    queued = createRedis(url, 'worker');
    queued.on('error', () => undefined);
    await waitReady(queued, url);
    const keys = createKeys('down');
    control = new RunControl(redis, keys);
    // BullMQ keeps a failed start of its connection for good: let it finish before the server's set-up
    // holds the event loop longer than the command timeout.
    await control.queue.waitUntilReady();
    control.queue.on('error', () => undefined);
    const deps = bareApiDeps(control, redis, keys, queued);
    api = await startApiServer(deps, {
      apiKeys: TEST_API_KEYS,
      port: 0,
      host: '127.0.0.1',
      allowedModels: ['echo'],
      board: false,
      docs: false,
      redisTimeoutMs: 500,
    });
  });
  afterAll(async () => {
    await api?.close();
    await control?.close().catch(() => undefined);
    redis?.disconnect();
    queued?.disconnect();
    admin?.disconnect();
    if (server && server.exitCode === null) {
      server.kill('SIGKILL');
      await once(server, 'exit');
    }
  });

  const expectUnavailable = async (method: string, path: string, body: unknown, message: RegExp) => {
    const res = await request(api.url, method, path, body === undefined ? {} : { body });
    expect(res.status, `${method} ${path}: ${res.text}`).toBe(503);
    expect(res.headers.get('retry-after'), `${method} ${path}`).toBe('5');
    expect(res.json.error.code).toBe('UNAVAILABLE');
    expect(res.json.error.message, `${method} ${path}`).toMatch(message);
  };

  it('answers 503 when Redis is at maxmemory (OOM command not allowed), and serves again once memory is freed', async () => {
    await admin.config('SET', 'maxmemory-policy', 'noeviction');
    await admin.config('SET', 'maxmemory', '1');
    try {
      await expectUnavailable(
        'POST',
        '/v1/runs',
        ROUTES[0]![2],
        /^Redis is out of memory \(maxmemory reached\); retry later$/,
      );
      await expectUnavailable('POST', '/v1/sessions', { session_id: 'sess-oom' }, /out of memory/);
    } finally {
      await admin.config('SET', 'maxmemory', '0');
    }
    const created = await request(api.url, 'POST', '/v1/runs', {
      body: { agent: 'test_agent', input: 'hello' },
    });
    expect(created.status).toBe(201);
  });

  it('answers 503 while Redis is paused (a command timeout), and serves again after the pause', async () => {
    await admin.call('CLIENT', 'PAUSE', '3000', 'ALL');
    await expectUnavailable('GET', '/v1/runs', undefined, /^Redis does not answer; retry later$/);
    await waitFor(
      async () => (await request(api.url, 'GET', '/v1/runs')).status === 200,
      5000,
      'the pause to end',
    );
  });

  it('answers 503 with Retry-After on every route when Redis is down, while /healthz stays up', async () => {
    server.kill('SIGTERM');
    await once(server, 'exit');
    await waitFor(() => redis.status !== 'ready', 5000, 'the connection to drop');
    for (const [method, path, body] of ROUTES)
      await expectUnavailable(method, path, body, /^Redis (does not answer|cannot be reached); retry later$/);
    expect((await request(api.url, 'GET', '/healthz', { key: null })).status).toBe(200);
    const ready = await request(api.url, 'GET', '/readyz', { key: null });
    expect(ready.status).toBe(503);
    expect(ready.headers.get('retry-after')).toBe('5');
    expect(api.app.server.listening).toBe(true);
  });

  it('recognizes what ioredis and Redis report when Redis cannot serve, and nothing else', () => {
    const unavailable = [
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' }),
      Object.assign(new Error('Reached the max retries per request limit (which is 1).'), {
        name: 'MaxRetriesPerRequestError',
      }),
      new Error('Connection is closed.'),
      new Error("Stream isn't writeable and enableOfflineQueue options is false"),
      new Error('Command timed out'),
      new Error('LOADING Redis is loading the dataset in memory'),
      new Error("READONLY You can't write against a read only replica."),
      new Error("OOM command not allowed when used memory > 'maxmemory'."),
      new Error(
        "ERR Error running script (call to f_1): @user_script:12: @user_script: 12: -OOM command not allowed when used memory > 'maxmemory'.",
      ),
      new Error('wrapped', { cause: new Error('Connection is closed.') }),
      new Error('Too many Cluster redirections. Last error: ReplyError: MOVED 12434 127.0.0.1:37195'),
      new Error('Too many Cluster redirections. Last error: Error: Connection is closed.'),
      new Error("Cluster isn't ready and enableOfflineQueue options is false"),
      new Error('CLUSTERDOWN The cluster is down'),
      new Error('TRYAGAIN Multiple keys request during rehashing of slot'),
      // From a pipeline ioredis does not resend, as a failover's new master takes the slot over.
      new Error('MOVED 14574 127.0.0.1:42431'),
      new Error('ASK 3999 127.0.0.1:6381'),
    ];
    for (const err of unavailable) expect(redisUnavailable(err), err.message).toBeDefined();
    expect(
      redisUnavailable(new Error('Too many Cluster redirections. Last error: Error: Connection is closed.')),
    ).toBe('Redis Cluster does not serve the key right now');
    const others = [
      new Error('WRONGTYPE Operation against a key holding the wrong kind of value'),
      new Error('Unexpected token } in JSON'),
      new TypeError("Cannot read properties of undefined (reading 'agent')"),
      new Error('ROOM command not allowed'),
      new Error('the key MOVED elsewhere'),
    ];
    for (const err of others) expect(redisUnavailable(err), err.message).toBeUndefined();
  });
});
