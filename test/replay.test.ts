import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentReachError, defineTool, Type, type ToolDefinition } from '@agent-reach/protocol';
import { createLogger, ToolRegistry } from '@agent-reach/shared';
import { startExecutor, type ExecutorProcess, type ToolModuleDeps } from '@agent-reach/executor';
import { replayRun } from '@agent-reach/scheduler';
import { waitFor } from './helpers/redis.js';
import { startRunsHarness } from './helpers/runs.js';

/**
 * Tools that count their executions in Redis: one that needs a person's approval (an email), one
 * declared read-only, and one with no declaration (a side effect).
 */
function countingTools({ redis, keys }: ToolModuleDeps): ToolDefinition[] {
  const count = (name: string) => redis.incr(`${keys.prefix}:test:count:${name}`);
  return [
    defineTool({
      name: 'send_email',
      description: 'Sends an email; a person approves each one. Test tool.',
      parameters: Type.Object({ to: Type.String() }, { additionalProperties: false }),
      requiresConfirmation: true,
      handler: async ({ to }) => ({ sent_to: to, sent: await count('send_email') }),
    }),
    defineTool({
      name: 'look_up',
      description: 'Reads a value; changes nothing. Test tool.',
      parameters: Type.Object({}, { additionalProperties: false }),
      readOnly: true,
      handler: async () => ({ seen: await count('look_up') }),
    }),
    defineTool({
      name: 'book_room',
      description: 'Books a room (a side effect, not declared idempotent). Test tool.',
      parameters: Type.Object({}, { additionalProperties: false }),
      handler: async () => ({ booked: await count('book_room') }),
    }),
  ];
}

describe('runs replay: recorded results by default, live only where declared safe, no decision reused', () => {
  let h: Awaited<ReturnType<typeof startRunsHarness>>;
  let executor: ExecutorProcess;
  let original: string;
  const executions = async (tool: string) =>
    Number((await h.redis.get(`${h.prefix}:test:count:${tool}`)) ?? 0);
  const replay = (options?: { live?: boolean; force?: boolean }, runId = original) =>
    replayRun(runId, { runner: h.schedulers[0]!.runner, store: h.control.store }, options);

  beforeAll(async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'replay-agents-'));
    const agentsFile = path.join(dir, 'agents.yaml');
    writeFileSync(
      agentsFile,
      'agents:\n  - name: office_agent\n    tools: [send_email, look_up, book_room]\n' +
        '  - name: weather_agent\n    tools: [query_weather, look_up]\n',
    );
    h = await startRunsHarness({ AGENTS_FILE: agentsFile }, { executor: false, scheduler: false });
    executor = await startExecutor(h.config, {
      extraTools: countingTools,
      logger: createLogger('test', { level: 'silent' }),
    });
    await h.addScheduler();
    h.sim.addScenario({
      name: 'email-then-more',
      plan: ['email', 'look up and book'],
      turns: [
        { tool_calls: [{ name: 'send_email', arguments: { to: 'ada@example.com' } }] },
        {
          tool_calls: [
            { name: 'look_up', arguments: {} },
            { name: 'book_room', arguments: {} },
          ],
        },
        { content: 'all done' },
      ],
    });
    original = await h.control.start({ agent: 'office_agent', input: 'email Ada', model: 'email-then-more' });
    const parked = await waitFor(
      async () => {
        const run = await h.control.get(original);
        return run?.summary.status === 'awaiting_approval' ? run.state : undefined;
      },
      15_000,
      'the email to wait for approval',
    );
    const [pending] = Object.values(parked.approvals);
    await h.control.decide({
      runId: original,
      toolCallId: pending!.toolCallId,
      decision: 'approved',
      by: 'ops',
    });
    expect((await h.control.wait(original, 15_000)).status).toBe('succeeded');
    expect([
      await executions('send_email'),
      await executions('look_up'),
      await executions('book_room'),
    ]).toEqual([1, 1, 1]);
  });
  afterAll(async () => {
    await executor?.close();
    await h?.close();
  });

  it('answers every call from the recording by default: nothing runs again and no approval is asked or reused', async () => {
    const result = await replay();
    expect(result.mode).toBe('recorded');
    expect(result.outcome).toMatchObject({ status: 'succeeded', answer: 'all done' });
    expect(result.differences).toEqual([]);
    expect(result.calls.map((c) => [c.tool, c.source])).toEqual([
      ['send_email', 'recorded'],
      ['look_up', 'recorded'],
      ['book_room', 'recorded'],
    ]);
    expect([
      await executions('send_email'),
      await executions('look_up'),
      await executions('book_room'),
    ]).toEqual([1, 1, 1]);
    const events = (await h.control.events(result.runId)).map((e) => e.event.type);
    expect(events).not.toContain('approval_requested');
    expect(events).not.toContain('approval_decided');
    const replayed = await h.control.get(result.runId);
    expect(replayed?.state?.approvals).toEqual({});
    expect(replayed?.state?.metadata).toEqual({ replay_of: original, replay_mode: 'recorded' });
    // The replayed model read the recorded result of the email, sent once.
    const emailResult = replayed?.state?.messages.find((m) => m.role === 'tool');
    expect(JSON.parse(String(emailResult?.content))).toMatchObject({ ok: true, content: { sent: 1 } });
  });

  it('re-runs only read-only tools live, answers the rest from the recording, and reports the approval-needing call as not run', async () => {
    const result = await replay({ live: true });
    expect(result.mode).toBe('live');
    expect(result.calls.map((c) => [c.tool, c.source])).toEqual([
      ['send_email', 'needs_approval'],
      ['look_up', 'live'],
      ['book_room', 'recorded'],
    ]);
    expect([
      await executions('send_email'),
      await executions('look_up'),
      await executions('book_room'),
    ]).toEqual([1, 2, 1]);
    expect(result.differences).toEqual([
      expect.objectContaining({
        tool: 'send_email',
        recorded: { ok: true },
        replayed: { ok: false, kind: 'awaiting_confirmation' },
      }),
    ]);
    const replayed = await h.control.get(result.runId);
    const email = replayed?.state?.messages.find((m) => m.role === 'tool');
    expect(JSON.parse(String(email?.content)).error.message).toMatch(
      /^not run: send_email requires a person's approval and a replay never reuses a recorded decision/,
    );
    expect(replayed?.state?.approvals).toEqual({});
  });

  it('re-runs every tool with force, except one that needs an approval', async () => {
    const before = [
      await executions('send_email'),
      await executions('look_up'),
      await executions('book_room'),
    ];
    const result = await replay({ live: true, force: true });
    expect(result.mode).toBe('live_forced');
    expect(result.calls.map((c) => c.source)).toEqual(['needs_approval', 'live', 'live']);
    expect([
      await executions('send_email'),
      await executions('look_up'),
      await executions('book_room'),
    ]).toEqual([before[0], (before[1] ?? 0) + 1, (before[2] ?? 0) + 1]);
  });

  it('records a tool name outside the name pattern as the model sent it, and a live replay never runs it', async () => {
    h.sim.addScenario({
      name: 'misspelled-tool-names',
      turns: [
        {
          tool_calls: [
            { name: 'query＿weather', arguments: { city: '上海' } },
            { name: 'look up', arguments: {} },
          ],
        },
        { content: 'could not look it up' },
      ],
    });
    const misspelled = await h.control.start({
      agent: 'weather_agent',
      input: 'weather in Shanghai',
      model: 'misspelled-tool-names',
    });
    // Every call was refused, so the run fails saying no tool ran.
    expect(await h.control.wait(misspelled, 15_000)).toMatchObject({
      status: 'failed',
      reason: 'no_tool_available',
    });
    const lookUps = await executions('look_up');
    const run = await h.control.get(misspelled);
    const sent = ['query＿weather', 'look up'];
    const assistant = run?.state?.messages.find((m) => m.role === 'assistant' && m.tool_calls);
    expect(
      (assistant as { tool_calls: Array<{ function: { name: string } }> }).tool_calls.map(
        (c) => c.function.name,
      ),
    ).toEqual(sent);
    expect(run?.state?.steps.map((s) => [s.tool, s.error_kind, s.answered])).toEqual([
      ['query＿weather', 'unknown_tool', 'local'],
      ['look up', 'unknown_tool', 'local'],
    ]);
    const events = (await h.control.events(misspelled)).map((e) => e.event);
    const request = events.find((e) => e.type === 'llm_request' && e.tool_calls > 0);
    expect(request?.type === 'llm_request' && request.message.tool_calls?.map((c) => c.name)).toEqual(sent);
    const results = events.flatMap((e) => (e.type === 'tool_result' ? [e] : []));
    expect(results.map((e) => e.tool)).toEqual(sent);
    expect(results[0]?.error).toMatchObject({
      kind: 'unknown_tool',
      did_you_mean: 'query_weather',
      message: expect.stringContaining('"query＿weather" is not a tool name'),
    });

    const result = await replay({ live: true, force: true }, misspelled);
    expect(result.outcome).toMatchObject({ status: 'failed', reason: 'no_tool_available' });
    expect(result.calls.filter((c) => c.source === 'live')).toEqual([]);
    expect(result.differences).toEqual([]);
    const replayed = await h.control.get(result.runId);
    expect(replayed?.state?.steps.map((s) => [s.tool, s.error_kind, s.answered])).toEqual([
      ['query＿weather', 'unknown_tool', 'local'],
      ['look up', 'unknown_tool', 'local'],
    ]);
    expect(await executions('look_up')).toBe(lookUps);
  });

  it('publishes each tool flag in the catalog the schedulers read', () => {
    const catalog = h.schedulers[0]!.runner.catalog;
    expect(catalog.get('look_up')).toMatchObject({ readOnly: true, idempotent: false });
    expect(catalog.get('book_room')).toMatchObject({ readOnly: false, idempotent: false });
    expect(catalog.get('query_weather')).toMatchObject({ readOnly: true });
    expect(catalog.get('query_order_status')).toMatchObject({ readOnly: true });
  });

  it('refuses a tool whose readOnly or idempotent flag is not a boolean, naming the tool and the flag', () => {
    const tool = (flags: object) =>
      ({
        name: 'flagged',
        description: 'A tool with a bad flag. Test tool.',
        parameters: Type.Object({}),
        handler: () => null,
        ...flags,
      }) as unknown as ToolDefinition;
    for (const flag of ['readOnly', 'idempotent']) {
      let error: unknown;
      try {
        new ToolRegistry().register(tool({ [flag]: 'yes' }));
      } catch (err) {
        error = err;
      }
      expect(error).toBeInstanceOf(AgentReachError);
      expect(error).toMatchObject({
        code: 'TOOL_DEFINITION_INVALID',
        message: `tool "flagged": ${flag} must be a boolean (got "yes")`,
      });
    }
    expect(new ToolRegistry().register(tool({ idempotent: true })).catalog()[0]).toMatchObject({
      readOnly: false,
      idempotent: true,
    });
  });
});
