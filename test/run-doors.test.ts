import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toolMessageContent, type ToolResult } from '@agent-reach/protocol';
import { FULL_KEY, LIMITED_KEY, TEST_MODELS, startApiHarness, type ApiHarness } from './helpers/api.js';
import { waitFor } from './helpers/redis.js';
import { addCommonScenarios } from './helpers/scenarios.js';

const REASONING = 'Weather first, then the order, then the archive; the last tool may not exist.';

/** Every door of a run (API, SSE, client) shows what each tool call did and what the model saw. */
describe('what a run did, on every door: tool results, model turns, finding runs', () => {
  let h: ApiHarness;
  beforeAll(async () => {
    h = await startApiHarness({ allowedModels: [...TEST_MODELS, 'doors'] });
    addCommonScenarios(h.sim);
    h.sim.addScenario({
      name: 'doors',
      turns: [
        {
          reasoning: REASONING,
          tool_calls: [
            { name: 'query_weather', arguments: { city: '杭州' } },
            { name: 'query_order_status', arguments: { order_id: 'ORD-123000' } },
            { name: 'big_result', arguments: { items: 300 } },
            { name: 'no_such_tool', arguments: {} },
          ],
        },
        { content: 'done' },
      ],
    });
  });
  afterAll(async () => h?.close());

  const finished = async (runId: string) =>
    waitFor(
      async () => {
        const run = (await h.call('GET', `/v1/runs/${runId}`)).json;
        return ['succeeded', 'failed', 'not_converged'].includes(run?.status) ? run : undefined;
      },
      20_000,
      `run ${runId} finished`,
    );

  it('shows each tool call with its arguments, the result exactly as the model saw it, its kind, executor and whether it was dispatched', async () => {
    const before = Date.now();
    const created = await h.call('POST', '/v1/runs', {
      body: { agent: 'test_agent', input: 'doors', model: 'doors', metadata: { user_id: 'u-doors' } },
    });
    expect(created.status).toBe(201);
    expect(created.json.created_at).toBeGreaterThanOrEqual(before);
    expect(created.json.created_at).toBeLessThanOrEqual(Date.now());
    const run = await finished(created.json.run_id);
    expect(run.status).toBe('succeeded');
    // One creation time on every door: the POST answer, the queued job and the run's own record.
    expect(run.created_at).toBe(created.json.created_at);

    const byTool = Object.fromEntries(run.steps.map((s: { tool: string }) => [s.tool, s]));
    const weather = byTool.query_weather;
    expect(weather).toMatchObject({ kind: 'ok', answered: 'dispatched', arguments: '{"city":"杭州"}' });
    expect(weather.executor_id).toMatch(/^executor-/);
    expect(weather.result.content.forecast.length).toBeGreaterThan(0);
    expect(weather.result).not.toHaveProperty('executor_id');

    expect(byTool.query_order_status).toMatchObject({ kind: 'no_result', ok: true, answered: 'dispatched' });
    expect(byTool.query_order_status.result.no_result).toBe(true);

    const big = byTool.big_result;
    expect(big).toMatchObject({ kind: 'ok', truncated: true, answered: 'dispatched' });
    expect(big.ref).toEqual(expect.any(String));
    expect(big.result).toMatchObject({ truncated: true, ref: big.ref });

    const unknown = byTool.no_such_tool;
    expect(unknown).toMatchObject({ kind: 'error', error_kind: 'unknown_tool', answered: 'local' });
    expect(unknown).not.toHaveProperty('executor_id');
    expect(unknown.result.error.kind).toBe('unknown_tool');

    const second = h.sim.requests.filter((r) => r.scenario === 'doors').at(-1)!;
    const toolMessages = (
      second.body as { messages: Array<{ role: string; tool_call_id?: string; content?: string }> }
    ).messages.filter((m) => m.role === 'tool');
    // What the model read in its next request is, byte for byte, the result the API shows, less the
    // executor's attempts, which the API keeps and the model never sees.
    for (const step of run.steps as Array<{ tool_call_id: string; result: ToolResult }>) {
      const seen = toolMessages.find((m) => m.tool_call_id === step.tool_call_id);
      expect(step.result.attempts).toEqual(expect.any(Number));
      expect(seen?.content).toBe(toolMessageContent(step.result));
      expect(seen?.content).not.toContain('"attempts"');
    }

    expect(run.turns).toHaveLength(2);
    expect(run.turns[0]).toMatchObject({ turn: 1, tool_calls: 4, reasoning: REASONING });
    expect(run.turns[0].prompt_tokens).toBeGreaterThan(0);
    expect(run.turns[1]).not.toHaveProperty('reasoning');

    // The SSE stream (through the client) carries the same results and the reasoning.
    const streamed = [];
    for await (const e of h.client.streamEvents(run.run_id)) streamed.push(e);
    const results = streamed.filter((e) => e.type === 'tool_result').map((e) => e.data);
    expect(results.map((r) => r.result)).toEqual(run.steps.map((s: { result: unknown }) => s.result));
    expect(results.find((r) => r.tool === 'no_such_tool')).toMatchObject({
      answered: 'local',
      kind: 'error',
    });
    expect(streamed.find((e) => e.type === 'llm_request')?.data.reasoning).toBe(REASONING);
    const viaClient = await h.client.getRun(run.run_id);
    expect(viaClient.steps.find((s) => s.tool === 'query_order_status')?.kind).toBe('no_result');
  });

  it('finds runs by metadata, tool, error kind and trace id, a cursor page at a time, and a limited key only among its agents', async () => {
    const tag = `u-${Date.now()}`;
    const start = async (body: Record<string, unknown>, key = FULL_KEY) =>
      (await h.call('POST', '/v1/runs', { body, key })).json.run_id as string;
    const mine = [
      await start({ agent: 'test_agent', input: 'a', model: 'doors', metadata: { user_id: tag } }),
      await start({ agent: 'test_agent', input: 'b', model: 'echo', metadata: { user_id: tag } }),
      await start({ agent: 'weather_only', input: 'c', metadata: { user_id: tag } }, LIMITED_KEY),
    ];
    const other = await start({ agent: 'test_agent', input: 'd', model: 'echo', metadata: { user_id: 'x' } });
    const runs = [];
    for (const id of [...mine, other]) runs.push(await finished(id));

    const ids = async (query: string, key = FULL_KEY) => {
      const res = await h.call('GET', `/v1/runs?${query}`, { key });
      expect(res.status, query).toBe(200);
      return res.json.runs.map((r: { run_id: string }) => r.run_id) as string[];
    };
    expect(await ids(`metadata=user_id=${tag}`)).toEqual([...mine].reverse());
    expect(await ids(`metadata=user_id=${tag}&tool=big_result`)).toEqual([mine[0]]);
    expect(await ids(`metadata=user_id=${tag}&error_kind=unknown_tool`)).toEqual([mine[0]]);
    expect(await ids(`metadata=user_id=${tag}&agent=weather_only`)).toEqual([mine[2]]);
    expect(await ids(`trace_id=${runs[1].trace_id}`)).toEqual([mine[1]]);
    expect(await ids(`metadata=user_id=${tag}`, LIMITED_KEY)).toEqual([mine[2]]);
    const listed = (await h.call('GET', `/v1/runs?metadata=user_id=${tag}&limit=1`)).json.runs[0];
    expect(listed.metadata).toEqual({ user_id: tag });

    // Cursor pages: one run each, newest first, none twice, then no cursor.
    const paged: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 5; page += 1) {
      const list = await h.client.listRuns({
        metadata: { user_id: tag },
        limit: 1,
        ...(cursor ? { cursor } : {}),
      });
      paged.push(...list.runs.map((r) => r.run_id));
      cursor = list.next_cursor;
      if (!cursor) break;
    }
    expect(paged).toEqual([...mine].reverse());
    expect(cursor).toBeUndefined();

    const bad = await h.call('GET', '/v1/runs?cursor=bm90LWEtY3Vyc29y');
    expect(bad.status).toBe(400);
    expect(bad.json.error.code).toBe('VALIDATION_FAILED');
  });
});
