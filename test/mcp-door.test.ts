import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Agent, MCPServerStreamableHttp, OpenAIProvider, Runner } from '@openai/agents';
import OpenAI from 'openai';
import type { Scenario } from '@agent-reach/llm-sim';
import { MAX_INPUT_CHARS } from '@agent-reach/protocol';
import { FULL_KEY, LIMITED_KEY, request, startApiHarness, type ApiHarness } from './helpers/api.js';
import { TEST_AGENTS } from './helpers/processes.js';
import { waitFor } from './helpers/redis.js';

/** What every run of this file's agents plays: it sleeps as many ms as the input says, then says so. */
const INNER: Scenario = {
  name: 'mcp-inner',
  turns: [
    { tool_calls: [{ name: 'slow', arguments: '{"ms": {{ user }}}' }] },
    { content: 'slept {{ last.content.slept_ms }} ms' },
  ],
};

/** The outer agent (OpenAI Agents SDK) hands a task to Agent-Reach's `test_agent`, then reports its answer. */
const OUTER: Scenario = {
  name: 'mcp-outer',
  turns: [
    { tool_calls: [{ name: 'test_agent', arguments: { input: '30' } }] },
    { content: 'Agent-Reach answered: {{ last }}' },
  ],
};

const DESCRIPTIONS = {
  test_agent: 'Sleeps as many milliseconds as the task says, then says so. Test agent.',
  weather_only: 'Weekend weather for Chinese cities. Test agent.',
};

const meta = (result: CallToolResult) => result._meta as Record<string, string>;

describe('agents as MCP tools at /mcp (streamable HTTP)', () => {
  let h: ApiHarness;
  let dir: string;
  const open: Client[] = [];

  beforeAll(async () => {
    // The test agents, described: a tool's description is its agent's.
    dir = await mkdtemp(path.join(os.tmpdir(), 'mcp-door-'));
    let agents = await readFile(TEST_AGENTS, 'utf8');
    for (const [name, description] of Object.entries(DESCRIPTIONS))
      agents = agents.replace(`- name: ${name}\n`, `- name: ${name}\n    description: ${description}\n`);
    const agentsFile = path.join(dir, 'agents.yaml');
    await writeFile(agentsFile, agents);
    h = await startApiHarness({}, { AGENTS_FILE: agentsFile, OPENAI_MODEL: INNER.name });
    h.sim.addScenario(INNER);
    h.sim.addScenario(OUTER);
  });
  afterAll(async () => {
    for (const c of open) await c.close().catch(() => undefined);
    await h?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** The MCP SDK's own client, connected with `key` (through `fetch`, a stand-in load balancer, if given). */
  async function connect(key: string = FULL_KEY, fetch?: FetchLike): Promise<Client> {
    const client = new Client({ name: 'mcp-door-test', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(`${h.url}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${key}` } },
      ...(fetch ? { fetch } : {}),
    });
    await client.connect(transport);
    open.push(client);
    return client;
  }

  /**
   * Has `test_agent` sleep 1.5 s and aborts the call (with `reason`, if given) once the run's tool call
   * started: the run's id (from the progress messages) and what the call rejected with.
   */
  async function abortMidRun(client: Client, reason?: string) {
    const abort = new AbortController();
    let runId: string | undefined;
    const error = await client
      .callTool({ name: 'test_agent', arguments: { input: '1500' } }, undefined, {
        signal: abort.signal,
        onprogress: ({ message }) => {
          runId ??= message?.split(':')[0];
          if (message?.includes('tool slow started')) abort.abort(reason);
        },
      })
      .then(
        () => undefined,
        (err: unknown) => err,
      );
    return { runId: runId!, error };
  }

  const runOf = async (runId: string) => (await h.call('GET', `/v1/runs/${runId}`)).json;
  /** The run once it ended (waited for on Redis, not over HTTP: the API's rate limit is for callers). */
  const ended = async (runId: string) => {
    await h.control.wait(runId, 30_000, 100);
    return runOf(runId);
  };
  /** The run started with metadata `case=<tag>`, found the way any caller finds runs. */
  const runTagged = (tag: string) =>
    waitFor(
      async () => (await h.call('GET', `/v1/runs?metadata=case=${tag}`)).json?.runs?.[0]?.run_id as string,
      15_000,
      `a run tagged ${tag}`,
    );

  it('lists every agent as a tool, with its description and the run input schema, to a key for every agent', async () => {
    const client = await connect();
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(['test_agent', 'weather_only']);
    const tool = tools[0]!;
    expect(tool.description).toBe(DESCRIPTIONS.test_agent);
    expect(tool.inputSchema.required).toEqual(['input']);
    expect(Object.keys(tool.inputSchema.properties ?? {}).sort()).toEqual([
      'input',
      'metadata',
      'session_id',
    ]);
  });

  it('lists only its agents to a key limited to some, and treats any other agent as an unknown tool', async () => {
    const client = await connect(LIMITED_KEY);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(['weather_only']);
    const refusal = (name: string) =>
      client.callTool({ name, arguments: { input: '1' } }).then(
        () => undefined,
        (err: unknown) => err,
      );
    const forbidden = await refusal('test_agent');
    const unknown = await refusal('no_such_agent');
    expect(forbidden).toBeInstanceOf(McpError);
    expect((forbidden as McpError).code).toBe(ErrorCode.InvalidParams);
    expect((forbidden as McpError).message).toBe(
      (unknown as McpError).message.replace('no_such_agent', 'test_agent'),
    );
  });

  it('refuses a request without a valid key with 401 UNAUTHORIZED, and an oversized body with 413, as the rest of the API', async () => {
    const initialize = {
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
    };
    const headers = { accept: 'application/json, text/event-stream' };
    const anonymous = await h.call('POST', '/mcp', { key: null, body: initialize, headers });
    expect(anonymous.status).toBe(401);
    expect(anonymous.json.error.code).toBe('UNAUTHORIZED');
    const wrong = await h.call('POST', '/mcp', { key: 'not-a-key-0123456789', body: initialize, headers });
    expect(wrong.status).toBe(401);
    const big = { ...initialize, params: { ...initialize.params, padding: 'x'.repeat(1024 * 1024 + 10) } };
    const oversized = await h.call('POST', '/mcp', { body: big, headers });
    expect(oversized.status).toBe(413);
    expect(oversized.json.error.code).toBe('BODY_TOO_LARGE');
    await expect(connect('not-a-key-0123456789')).rejects.toThrow(/UNAUTHORIZED/);
  });

  it('hands out a session id at initialize, opens no stream on GET (405) and has nothing to end on DELETE (204)', async () => {
    const accept = { accept: 'application/json, text/event-stream' };
    const initialize = await h.call('POST', '/mcp', {
      headers: accept,
      body: {
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
      },
    });
    expect(initialize.status).toBe(200);
    expect(initialize.headers.get('mcp-session-id')).toMatch(/^mcp_[0-9a-f-]{36}$/);
    expect(initialize.text).toContain('"serverInfo":{"name":"agent-reach"');
    const get = await h.call('GET', '/mcp', { headers: accept });
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST, DELETE');
    expect((await h.call('DELETE', '/mcp')).status).toBe(204);
  });

  it('answers malformed MCP messages with a 4xx or a JSON-RPC error, never a 5xx', async () => {
    const accept = { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' };
    const call = (params: unknown) => ({ jsonrpc: '2.0', id: 7, method: 'tools/call', params });
    const codeOf = (text: string) => Number(/"error":\{"code":(-?\d+)/.exec(text)?.[1]);
    // Messages the SDK refuses itself (it answers params its schemas reject with -32603).
    const refusedBySdk: unknown[] = [
      {},
      [],
      { jsonrpc: '2.0' },
      call({}),
      call({ name: 'test_agent', arguments: 'x' }),
      call({ name: 'test_agent', arguments: null }),
      { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: { a: 1 } } },
    ];
    for (const body of refusedBySdk) {
      const res = await h.call('POST', '/mcp', { body, headers: accept });
      expect(res.status, JSON.stringify(body)).toBeLessThan(500);
    }
    // Messages that reach the door: unknown names (prototype keys too) are unknown tools.
    for (const name of ['__proto__', 'constructor', 'no_such_agent']) {
      const res = await h.call('POST', '/mcp', {
        body: call({ name, arguments: { input: 'x' } }),
        headers: accept,
      });
      expect(res.status, name).toBe(200);
      expect(codeOf(res.text), name).toBe(ErrorCode.InvalidParams);
    }
    const badKey = call({
      name: 'test_agent',
      arguments: { input: 'x' },
      _meta: { 'agent-reach/idempotency_key': 'a b' },
    });
    const refused = await h.call('POST', '/mcp', { body: badKey, headers: accept });
    expect(refused.text).toContain('VALIDATION_FAILED: _meta/agent-reach/idempotency_key');
    const unknownCall = {
      jsonrpc: '2.0',
      method: 'notifications/cancelled',
      params: { requestId: 99, reason: 'x' },
    };
    expect((await h.call('POST', '/mcp', { body: unknownCall, headers: accept })).status).toBe(202);
    const noAccept = await h.call('POST', '/mcp', { body: call({ name: 'test_agent' }) });
    expect(noAccept.status).toBe(406);
  });

  it("answers a call with the run's answer, names the run in _meta, and records the mcp door in the run's metadata", async () => {
    const client = await connect();
    const result = (await client.callTool({
      name: 'test_agent',
      arguments: { input: '20', metadata: { user_id: 'u-mcp' } },
    })) as CallToolResult;
    expect(result.isError).toBeFalsy();
    expect(result.content).toEqual([{ type: 'text', text: 'slept 20 ms' }]);
    const runId = meta(result)['agent-reach/run_id']!;
    expect(meta(result)['agent-reach/status']).toBe('succeeded');
    const run = await runOf(runId);
    expect(run).toMatchObject({ status: 'succeeded', agent: 'test_agent', answer: 'slept 20 ms' });
    expect(run.metadata).toEqual({ user_id: 'u-mcp', door: 'mcp' });
  });

  it('reports each step of the run as a progress notification that names the run', async () => {
    const client = await connect();
    const progress: Array<{ progress: number; message?: string }> = [];
    const result = (await client.callTool({ name: 'test_agent', arguments: { input: '10' } }, undefined, {
      onprogress: (p) => progress.push(p),
    })) as CallToolResult;
    const runId = meta(result)['agent-reach/run_id']!;
    const messages = progress.map((p) => p.message ?? '');
    for (const m of messages) expect(m.startsWith(`${runId}: `)).toBe(true);
    const steps = messages.map((m) => m.slice(runId.length + 2).replace(/ \(call_[^)]*\)$/, ''));
    expect(steps).toEqual([
      'queued',
      'started (agent test_agent)',
      'model turn 1: 1 tool call',
      'tool slow started',
      'tool slow finished: ok',
      'model turn 2: answered',
      'succeeded (final_answer)',
    ]);
    expect(progress.map((p) => p.progress)).toEqual(steps.map((_s, i) => i + 1));
  });

  it('refuses bad arguments, an unknown session and a door set by the caller as POST /v1/runs does, starting no run', async () => {
    const client = await connect();
    const before = (await h.call('GET', '/v1/runs?agent=test_agent&limit=200')).json.runs.length;
    const cases: Array<[Record<string, unknown>, string, RegExp]> = [
      [{ input: '   ' }, 'VALIDATION_FAILED', /arguments\/input/],
      [{ input: 'x', extra: 1 }, 'VALIDATION_FAILED', /additional properties/],
      [{ input: 'x', metadata: { a: 1 } }, 'VALIDATION_FAILED', /arguments\/metadata\/a/],
      [{ input: 'x', metadata: { door: 'rest' } }, 'VALIDATION_FAILED', /door is recorded by the server/],
      [{ input: 'x', session_id: 'ghost' }, 'NOT_FOUND', /session ghost not found/],
    ];
    for (const [args, code, message] of cases) {
      const result = (await client.callTool({ name: 'test_agent', arguments: args })) as CallToolResult;
      expect(result.isError, JSON.stringify(args)).toBe(true);
      expect(meta(result)['agent-reach/error_code']).toBe(code);
      expect((result.content as Array<{ text: string }>)[0]!.text).toMatch(message);
    }
    expect((await h.call('GET', '/v1/runs?agent=test_agent&limit=200')).json.runs.length).toBe(before);
  });

  it('answers an input over the character cap INPUT_TOO_LONG, as the docs list, starting no run', async () => {
    const client = await connect();
    const before = (await h.call('GET', '/v1/runs?agent=test_agent&limit=200')).json.runs.length;
    const input = 'x'.repeat(MAX_INPUT_CHARS + 1);
    const result = (await client.callTool({ name: 'test_agent', arguments: { input } })) as CallToolResult;
    expect(result.isError).toBe(true);
    expect(meta(result)['agent-reach/error_code']).toBe('INPUT_TOO_LONG');
    expect((result.content as Array<{ text: string }>)[0]!.text).toBe(
      `INPUT_TOO_LONG: input has ${MAX_INPUT_CHARS + 1} characters; at most ${MAX_INPUT_CHARS} are accepted`,
    );
    expect((await h.call('GET', '/v1/runs?agent=test_agent&limit=200')).json.runs.length).toBe(before);
  });

  it('counts each message of a JSON-RPC batch against the rate limit, answering 429 RATE_LIMITED past it', async () => {
    const key = 'mcp-batch-key-0123456789abcdef';
    const server = await h.extraServer({ rateLimitPerMinute: 10, apiKeys: [{ key, name: 'batcher' }] });
    try {
      const headers = { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-03-26' };
      const batch = (n: number) =>
        Array.from({ length: n }, (_, i) => ({ jsonrpc: '2.0', id: i + 1, method: 'tools/list' }));
      const eight = await request(server.url, 'POST', '/mcp', { key, body: batch(8), headers });
      expect(eight.status, eight.text).toBe(200);
      // Eight of ten counted: a batch of three goes past the limit, where one request would not.
      const three = await request(server.url, 'POST', '/mcp', { key, body: batch(3), headers });
      expect(three.status).toBe(429);
      expect(three.json.error.code).toBe('RATE_LIMITED');
      expect(three.json.error.message).toMatch(
        /^rate limit exceeded: a batch of 3 messages counts as 3 requests/,
      );
      expect(Number(three.headers.get('retry-after'))).toBeGreaterThan(0);
    } finally {
      await server.close();
    }
  });

  it("answers a run that failed with isError and the run's error", async () => {
    // weather_only cannot reach `slow`: every tool call the model makes is refused, and the run fails.
    const client = await connect(LIMITED_KEY);
    const result = (await client.callTool({
      name: 'weather_only',
      arguments: { input: '5' },
    })) as CallToolResult;
    expect(result.isError).toBe(true);
    const runId = meta(result)['agent-reach/run_id']!;
    const run = await runOf(runId);
    expect(run.status).toBe('failed');
    expect(meta(result)).toMatchObject({ 'agent-reach/status': 'failed', 'agent-reach/reason': run.reason });
    expect((result.content as Array<{ text: string }>)[0]!.text).toBe(
      `run ${runId} failed (${run.reason}): ${run.report}`,
    );
  });

  it('cancels the run when the client cancels the call mid-run: it ends cancelled after its running tool call', async () => {
    const { runId, error } = await abortMidRun(await connect(), 'the user pressed stop');
    expect(String(error)).toMatch(/the user pressed stop/);
    const run = await ended(runId);
    expect(run).toMatchObject({ status: 'cancelled', reason: 'cancelled', cancel_requested: true });
    expect(run).not.toHaveProperty('answer');
  });

  it("cancels the run from a cancellation that another scheduler's API receives", async () => {
    const other = await h.extraServer({});
    try {
      // A load balancer that sends the client's cancellation to another scheduler than its call.
      const routed: string[] = [];
      const client = await connect(FULL_KEY, async (url, init) => {
        const cancellation = typeof init?.body === 'string' && init.body.includes('notifications/cancelled');
        routed.push(cancellation ? 'other' : 'first');
        return fetch(cancellation ? `${other.url}/mcp` : url, init);
      });
      const { runId, error } = await abortMidRun(client);
      expect(String(error)).toMatch(/aborted/);
      const run = await ended(runId);
      expect(run).toMatchObject({ status: 'cancelled', cancel_requested: true });
      expect(routed).toContain('other');
    } finally {
      await other.close();
    }
  });

  it('continues a session and honours an idempotency key in _meta as POST /v1/runs does', async () => {
    const client = await connect();
    const session = (await h.call('POST', '/v1/sessions', { body: {} })).json.session_id as string;
    const key = `idem-${Date.now()}`;
    const ask = (input: string) =>
      client.callTool({
        name: 'test_agent',
        arguments: { input, session_id: session },
        _meta: { 'agent-reach/idempotency_key': key },
      }) as Promise<CallToolResult>;
    const first = await ask('15');
    const again = await ask('15');
    expect(meta(again)['agent-reach/run_id']).toBe(meta(first)['agent-reach/run_id']);
    expect(again.content).toEqual([{ type: 'text', text: 'slept 15 ms' }]);
    const run = await runOf(meta(first)['agent-reach/run_id']!);
    expect(run.session_id).toBe(session);
    expect((await h.call('GET', `/v1/sessions/${session}`)).json).toMatchObject({
      agent: 'test_agent',
      runs: [run.run_id],
    });
    const conflict = await ask('16');
    expect(conflict.isError).toBe(true);
    expect(meta(conflict)['agent-reach/error_code']).toBe('CONFLICT');
  });

  it("keeps the run going when the client's request times out: it finishes and is found by its id", async () => {
    const client = await connect();
    const tag = `timeout-${Date.now()}`;
    const call = client.callTool(
      { name: 'test_agent', arguments: { input: '3000', metadata: { case: tag } } },
      undefined,
      { timeout: 500 },
    );
    await expect(call).rejects.toMatchObject({ code: ErrorCode.RequestTimeout });
    const runId = await runTagged(tag);
    const run = await ended(runId);
    expect(run).toMatchObject({ status: 'succeeded', answer: 'slept 3000 ms', cancel_requested: false });
  });

  it("lets an OpenAI Agents SDK agent call an Agent-Reach agent over MCP and answer with that agent's answer", async () => {
    const server = new MCPServerStreamableHttp({
      name: 'agent-reach',
      url: `${h.url}/mcp`,
      requestInit: { headers: { authorization: `Bearer ${FULL_KEY}` } },
    });
    await server.connect();
    try {
      const outer = new Agent({
        name: 'concierge',
        instructions: 'Hand every task to the test_agent tool and report its answer.',
        model: OUTER.name,
        mcpServers: [server],
      });
      const runner = new Runner({
        modelProvider: new OpenAIProvider({
          openAIClient: new OpenAI({ baseURL: h.sim.url, apiKey: 'llm-sim', maxRetries: 0 }),
          useResponses: false,
        }),
        tracingDisabled: true,
      });
      const result = await runner.run(outer, 'Have the agent sleep a little.');
      expect(result.finalOutput).toContain('Agent-Reach answered:');
      expect(result.finalOutput).toContain('slept 30 ms');
      // The outer model offered the agent as a function tool, described as the agent is.
      const request = h.sim.requests.find((r) => r.scenario === OUTER.name)!;
      const offered = (request.body as { tools: Array<{ function: { name: string; description: string } }> })
        .tools;
      expect(offered.find((t) => t.function.name === 'test_agent')?.function.description).toBe(
        DESCRIPTIONS.test_agent,
      );
    } finally {
      await server.close();
    }
  });
});
