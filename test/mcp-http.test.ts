import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolResult } from '@agent-reach/protocol';
import { toolMessages } from './helpers/loop.js';
import {
  freePort,
  startEverythingHttp,
  untilOffered,
  writeAgentsFile,
  type ServerProcess,
} from './helpers/mcp.js';
import { waitFor } from './helpers/redis.js';
import { startRunsHarness } from './helpers/runs.js';

const LONG = 'trigger-long-running-operation';

describe('an MCP server over streamable HTTP as a tool source (the reference "everything" server)', () => {
  let h: Awaited<ReturnType<typeof startRunsHarness>>;
  let server: ServerProcess;
  let port: number;

  beforeAll(async () => {
    port = await freePort();
    server = await startEverythingHttp(port);
    const url = `http://127.0.0.1:${port}/mcp`;
    const agents = writeAgentsFile({
      agents: [
        { name: 'test_agent', tools: ['query_weather'] },
        {
          name: 'http_agent',
          tools: ['every__echo', 'every__get-tiny-image', `every__${LONG}`, `slow__${LONG}`],
        },
      ],
      tool_groups: {
        default: {
          mcp_servers: [
            {
              name: 'every',
              url,
              allow: ['echo', 'get-tiny-image', LONG],
              tools: { [LONG]: { timeout_ms: 30_000 } },
            },
            // The same server under another namespace, with a short timeout and no retry.
            { name: 'slow', url, allow: [LONG], tools: { [LONG]: { timeout_ms: 1500, retries: 1 } } },
          ],
        },
      },
    });
    h = await startRunsHarness(
      { AGENTS_FILE: agents },
      {
        executorOptions: {
          mcp: { pingIntervalMs: 300, pingTimeoutMs: 1000, restartBackoffMs: 100, restartBackoffMaxMs: 500 },
        },
      },
    );
    await untilOffered(h, ['every__echo', 'every__get-tiny-image', `every__${LONG}`, `slow__${LONG}`]);
  }, 60_000);
  afterAll(async () => {
    await h?.close();
    await server?.kill();
  });

  const run = async (model: string, turns: Parameters<typeof h.sim.addScenario>[0]['turns']) => {
    h.sim.addScenario({ name: model, turns });
    const runId = await h.control.start({ agent: 'http_agent', input: `do ${model}`, model });
    const outcome = await h.control.wait(runId, 40_000);
    const last = h.sim.requests.filter((r) => r.scenario === model).at(-1);
    const results = toolMessages(last!.body as never).map((m) => m.result as ToolResult);
    return { runId, outcome, results };
  };

  it('calls tools over HTTP: a text collapses to a string, an image is described by its type and size', async () => {
    const { outcome, results } = await run('http-echo-image', [
      {
        tool_calls: [
          { name: 'every__echo', arguments: { message: 'over http' } },
          { name: 'every__get-tiny-image', arguments: {} },
        ],
      },
      { content: 'both answered' },
    ]);
    expect(outcome).toMatchObject({ status: 'succeeded' });
    expect(results[0]).toMatchObject({ ok: true, content: 'Echo: over http' });
    const image = results[1]?.content as { content: Array<Record<string, unknown>> };
    expect(image.content).toContainEqual({
      type: 'image',
      mime_type: 'image/png',
      bytes: expect.any(Number),
    });
    expect(image.content).toContainEqual({ type: 'text', text: "Here's the image you requested:" });
    // The picture itself (base64) never reaches the model.
    expect(JSON.stringify(image).length).toBeLessThan(1000);
  });

  it('cancels a long-running MCP tool at its timeout and answers timeout without hanging', async () => {
    const { results } = await run('http-long', [
      { tool_calls: [{ name: `slow__${LONG}`, arguments: { duration: 30, steps: 30 } }] },
      { content: 'done' },
    ]);
    // What the model read: the executor's tries are not part of it.
    expect(results[0]).not.toHaveProperty('attempts');
    expect(results[0]).toMatchObject({
      ok: false,
      error: {
        kind: 'timeout',
        retryable: true,
        message: expect.stringMatching(/did not finish within 1500 ms/),
      },
    });
  });

  it('answers a call whose server is killed mid-call with a retryable error, hides its tools, and serves them again once it is back', async () => {
    h.sim.addScenario({
      name: 'http-killed',
      turns: [
        { tool_calls: [{ name: `every__${LONG}`, arguments: { duration: 20, steps: 20 } }] },
        { content: 'after the kill' },
      ],
    });
    const runId = await h.control.start({ agent: 'http_agent', input: 'run long', model: 'http-killed' });
    // The run's ledger holds the call before it is published.
    await waitFor(
      async () => (await h.redis.exists(h.keys.runCalls(runId))) === 1,
      15_000,
      'the call published',
    );
    // Killed while the 20-second operation runs (or, on a slow machine, before it starts: down either way).
    await new Promise((r) => setTimeout(r, 500));
    await server.kill();
    const outcome = await h.control.wait(runId, 40_000);
    expect(outcome.status).toBe('succeeded');
    const last = h.sim.requests.filter((r) => r.scenario === 'http-killed').at(-1);
    const [result] = toolMessages(last!.body as never).map((m) => m.result as ToolResult);
    expect(result).toMatchObject({
      ok: false,
      error: { kind: 'transient', retryable: true, message: expect.stringMatching(/server "every"/) },
    });
    // Down: withdrawn from the catalog at once (not kept for the catalog's memory).
    await waitFor(
      async () => !(await h.schedulers[0]!.runner.catalog.refresh()).has('every__echo'),
      15_000,
      'every__echo withdrawn',
    );
    server = await startEverythingHttp(port);
    await untilOffered(h, ['every__echo']);
    const { results } = await run('http-back', [
      { tool_calls: [{ name: 'every__echo', arguments: { message: 'back again' } }] },
      { content: 'ok' },
    ]);
    expect(results[0]).toMatchObject({ ok: true, content: 'Echo: back again' });
  });
});
