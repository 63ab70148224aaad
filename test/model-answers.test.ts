import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateChatRequest } from '@agent-reach/llm-sim';
import { constants } from '@agent-reach/shared';
import type { RunEvent, RunState } from '@agent-reach/scheduler';
import { TASK_STACK_HEADING } from '@agent-reach/scheduler/internal';
import { startLoopHarness, systemText, toolMessages } from './helpers/loop.js';
import { startApiHarness } from './helpers/api.js';
import { waitFor } from './helpers/redis.js';

const ID = /^[A-Za-z0-9_-]{1,64}$/;

/** The provider's own check of a conversation: every call answered once, right after it was made. */
function expectValidHistory(messages: RunState['messages']): void {
  const checked = validateChatRequest({
    model: 'x',
    messages: [{ role: 'system', content: 's' }, ...messages],
  });
  expect(checked.ok ? 'valid' : JSON.stringify(checked.error.body)).toBe('valid');
}

function callIds(messages: RunState['messages']): string[] {
  return messages.flatMap((m) =>
    m.role === 'assistant' ? (m.tool_calls ?? []).map((c) => (c as { id: string }).id) : [],
  );
}

function toolResults(state: RunState) {
  return state.messages.flatMap((m) =>
    m.role === 'tool'
      ? [{ id: m.tool_call_id, result: JSON.parse(m.content as string) as Record<string, any> }]
      : [],
  );
}

const noop = (value: string, extra: { id?: string | null; type?: string | null } = {}) => ({
  name: 'noop',
  arguments: { value },
  ...extra,
});

describe('malformed model answers never hang or mislead (llm-sim over HTTP, real Redis and executor)', () => {
  let h: Awaited<ReturnType<typeof startLoopHarness>>;
  beforeAll(async () => {
    h = await startLoopHarness();
  });
  afterAll(async () => h.close());

  it('gives every call its own valid id when the model sends missing, empty, reused or platform-shaped ids', async () => {
    const { outcome, state } = await h.run(
      {
        name: 'awkward-ids',
        turns: [
          {
            tool_calls: [
              noop('a', { id: null }),
              noop('b', { id: '' }),
              noop('c', { id: 'dup' }),
              noop('d', { id: 'dup' }),
              noop('e', { id: 'call_t1_1' }),
              noop('f', { id: '__proto__' }),
            ],
          },
          { tool_calls: [noop('g', { id: 'dup' }), noop('h', { id: 'call_t1_0' }), noop('i', { id: null })] },
          { content: 'nine echoes' },
        ],
      },
      { limits: { planning: false } },
    );
    expect(outcome).toMatchObject({ status: 'succeeded', answer: 'nine echoes' });
    const ids = callIds(state.messages);
    expect(ids).toHaveLength(9);
    expect(new Set(ids).size).toBe(9);
    for (const id of ids) expect(id).toMatch(ID);
    expect(ids).not.toContain('__proto__');
    // The model's first use of an id is kept; each call got its own job and its own result.
    expect(ids[2]).toBe('dup');
    expect(ids[4]).toBe('call_t1_1');
    expect(toolResults(state).map((r) => [r.id === r.result.tool_call_id, r.result.content?.echo])).toEqual(
      ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i'].map((v) => [true, v]),
    );
    expect(outcome.steps.map((s) => s.tool_call_id)).toEqual(ids);
    expectValidHistory(state.messages);
    // Every request the provider got was accepted: no tool message without its call id.
    expect(h.turns('awkward-ids').map((r) => r.status)).toEqual([200, 200, 200]);
  });

  it('runs a tool call without a type as a function call and refuses one of an unknown type', async () => {
    const { outcome, state } = await h.run(
      {
        name: 'untyped-calls',
        turns: [
          { tool_calls: [noop('typeless', { type: null }), noop('odd', { type: 'custom' })] },
          { content: 'done' },
        ],
      },
      { limits: { planning: false } },
    );
    expect(outcome).toMatchObject({ status: 'succeeded', reason: 'final_answer' });
    const [typeless, odd] = toolResults(state);
    expect(typeless?.result).toMatchObject({ ok: true, content: { echo: 'typeless' } });
    expect(odd?.result.error).toMatchObject({ kind: 'unknown_tool' });
    expect(odd?.result.error.message).toMatch(/type "custom" are not supported/);
    expectValidHistory(state.messages);
  });

  it('records a tool name outside the name pattern as the model wrote it and answers it with the closest name', async () => {
    const { outcome, state } = await h.run(
      {
        name: 'dotted-name',
        turns: [
          { tool_calls: [{ name: 'functions.query_weather', arguments: { city: '上海' } }] },
          { tool_calls: [{ name: '{{ last.error.did_you_mean }}', arguments: { city: '上海' } }] },
          { content: 'found it' },
        ],
      },
      { limits: { planning: false } },
    );
    expect(outcome).toMatchObject({ status: 'succeeded', answer: 'found it' });
    expect(outcome.steps.map((s) => [s.tool, s.error_kind])).toEqual([
      ['functions.query_weather', 'unknown_tool'],
      ['query_weather', undefined],
    ]);
    expect(toolResults(state)[0]?.result.error).toMatchObject({
      kind: 'unknown_tool',
      did_you_mean: 'query_weather',
      message: expect.stringContaining('"functions.query_weather" is not a tool name'),
    });
    expectValidHistory(state.messages);
  });

  it('fails a run whose model refuses, saying so, instead of succeeding with an empty answer', async () => {
    const { outcome } = await h.run(
      { name: 'refuses', turns: [{ refusal: 'I will not do that.' }] },
      { limits: { planning: false } },
    );
    expect(outcome).toMatchObject({ status: 'failed', reason: 'refused' });
    expect(outcome.report).toMatch(/declined to answer: I will not do that\./);
  });

  it('fails a run whose answer the content filter stopped, running none of its calls', async () => {
    const { outcome, state } = await h.run(
      {
        name: 'filtered',
        turns: [{ content: 'partial', tool_calls: [noop('x')], finish_reason: 'content_filter' }],
      },
      { limits: { planning: false } },
    );
    expect(outcome).toMatchObject({ status: 'failed', reason: 'content_filter' });
    expect(outcome.steps).toHaveLength(0);
    expectValidHistory(state.messages);
  });

  it('fails a run whose model answers with nothing at all', async () => {
    const { outcome } = await h.run(
      { name: 'empty-answer', turns: [{ content: '  ' }] },
      { limits: { planning: false } },
    );
    expect(outcome).toMatchObject({ status: 'failed', reason: 'empty_answer' });
  });

  it('turns a tool call cut off at the output token limit back to the model as truncated, without running it', async () => {
    const { outcome, state } = await h.run(
      {
        name: 'cut-off-call',
        turns: [
          { tool_calls: [{ name: 'noop', arguments: '{"value": "a long tex' }], finish_reason: 'length' },
          { tool_calls: [noop('short')] },
          { content: 'retried smaller' },
        ],
      },
      { limits: { planning: false } },
    );
    expect(outcome).toMatchObject({ status: 'succeeded', answer: 'retried smaller' });
    const [, second] = h.turns('cut-off-call');
    expect(toolMessages(second!.body)[0]?.result.error).toMatchObject({
      kind: 'invalid_arguments',
      constraint: 'truncated',
      message: expect.stringMatching(/output token limit.*retry with smaller arguments/),
    });
    expect(outcome.steps.map((s) => [s.ok, s.attempts])).toEqual([
      [false, 0],
      [true, 1],
    ]);
    expectValidHistory(state.messages);
  });

  it('fails a run in which every tool call was refused and no tool ever ran', async () => {
    const { outcome } = await h.run(
      {
        name: 'nothing-reachable',
        turns: [
          { tool_calls: [{ name: 'send_email', arguments: {} }] },
          { tool_calls: [{ name: 'get_wether', arguments: { city: '上海' } }] },
          { content: 'I could not do it.' },
        ],
      },
      { limits: { planning: false } },
    );
    expect(outcome).toMatchObject({
      status: 'failed',
      reason: 'no_tool_available',
      answer: 'I could not do it.',
    });
    expect(outcome.report).toMatch(/send_email: unknown_tool; get_wether: unknown_tool/);
  });

  it('stops at the deadline while the model hangs, instead of waiting out the client retries', async () => {
    const started = Date.now();
    const { outcome, events } = await h.run(
      { name: 'hanging-model', turns: [{ content: 'never', fault: { type: 'hang', times: 10 } }] },
      { limits: { planning: false }, deadlineMs: 1500 },
    );
    expect(outcome).toMatchObject({ status: 'not_converged', reason: 'deadline' });
    expect(Date.now() - started).toBeLessThan(4000);
    expect(events.find((e) => e.type === 'llm_error')).toMatchObject({
      message: 'aborted at the run deadline',
    });
  });

  it('stops at the deadline while a tool runs, answering the owed call so the history stays valid', async () => {
    const { outcome, state } = await h.run(
      { name: 'slow-tool', turns: [{ tool_calls: [{ name: 'slow', arguments: { ms: 20_000 } }] }] },
      { limits: { planning: false }, deadlineMs: 1500 },
    );
    expect(outcome).toMatchObject({ status: 'not_converged', reason: 'deadline' });
    // Answered either way: \`timeout\` when the call's own window (a share of the run's time) ran out while
    // it ran, \`unavailable\` when the run's deadline came first.
    expect(['timeout', 'unavailable']).toContain(toolResults(state)[0]?.result.error?.kind);
    expectValidHistory(state.messages);
  });

  it('checks the token budget after a model turn, before running its calls', async () => {
    const { outcome, state } = await h.run(
      { name: 'over-budget', turns: [{ tool_calls: [noop('x')] }, { content: 'late' }] },
      { limits: { tokenBudget: 50, planning: false } },
    );
    expect(outcome).toMatchObject({ status: 'not_converged', reason: 'token_budget', iterations: 1 });
    expect(outcome.steps).toHaveLength(0);
    expectValidHistory(state.messages);
  });

  it('refuses oversized arguments and records only a bounded prefix, their length and digest', async () => {
    const huge = JSON.stringify({ value: 'x'.repeat(5 * 1024 * 1024) });
    const { outcome, state, events } = await h.run(
      {
        name: 'huge-arguments',
        turns: [{ tool_calls: [{ name: 'noop', arguments: huge }] }, { content: 'gave up' }],
      },
      { limits: { planning: false, tokenBudget: 10_000_000 } },
    );
    expect(outcome).toMatchObject({ status: 'succeeded', answer: 'gave up' });
    const [, second] = h.turns('huge-arguments');
    expect(toolMessages(second!.body)[0]?.result.error).toMatchObject({
      kind: 'invalid_arguments',
      constraint: 'max_length',
      message: expect.stringContaining(
        `${huge.length} characters long, over the limit of ${constants.MAX_TOOL_ARGUMENTS_CHARS}`,
      ),
    });
    expect(JSON.stringify(state).length).toBeLessThan(20_000);
    expect(JSON.stringify(events).length).toBeLessThan(20_000);
    const llm = events.find((e) => e.type === 'llm_request') as Extract<RunEvent, { type: 'llm_request' }>;
    expect(llm.message.tool_calls?.[0]).toMatchObject({
      arguments: huge.slice(0, constants.TOOL_ARGUMENTS_PREFIX_CHARS),
      arguments_chars: huge.length,
      arguments_sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    expectValidHistory(state.messages);
  });

  it('takes at most the per-turn number of calls from one answer and tells the model about the rest', async () => {
    const many = constants.MAX_TOOL_CALLS_PER_TURN + 8;
    const { outcome, state } = await h.run(
      {
        name: 'too-many-calls',
        turns: [{ tool_calls: Array.from({ length: many }, (_, i) => noop(`v${i}`)) }, { content: 'enough' }],
      },
      { limits: { planning: false } },
    );
    expect(outcome).toMatchObject({ status: 'succeeded', answer: 'enough' });
    expect(outcome.steps).toHaveLength(constants.MAX_TOOL_CALLS_PER_TURN);
    const [, second] = h.turns('too-many-calls');
    const notes = second!.body.messages.filter(
      (m) => m.role === 'system' && String(m.content).startsWith('Guard:'),
    );
    expect(notes.map((m) => m.content)).toEqual([
      expect.stringContaining(
        `made ${many} tool calls; only the first ${constants.MAX_TOOL_CALLS_PER_TURN} were taken`,
      ),
    ]);
    expectValidHistory(state.messages);
  });

  it('drops plan steps naming unreachable tools and ticks a step only by a call of its own tool', async () => {
    const { outcome, events } = await h.run(
      {
        name: 'planned-tools',
        plan: [
          { title: 'look up the weather', tool: 'query_weather' },
          { title: 'mail the result', tool: 'send_email' },
          { title: 'check the order', tool: 'query_order_status' },
        ],
        turns: [
          { tool_calls: [noop('unrelated')] },
          { tool_calls: [{ name: 'query_weather', arguments: { city: '上海' } }] },
          { content: 'weather done, order left' },
        ],
      },
      { input: 'look up the weather, mail me the result, then check my order' },
    );
    expect(outcome.status).toBe('succeeded');
    const plan = events.find((e) => e.type === 'plan') as Extract<RunEvent, { type: 'plan' }>;
    expect(plan.dropped).toEqual([{ title: 'mail the result', tool: 'send_email' }]);
    expect(plan.steps.map((s) => s.title)).toEqual(['look up the weather', 'check the order']);
    const stacks = h.turns('planned-tools').map((r) => {
      const text = systemText(r.body);
      return text.slice(text.indexOf(TASK_STACK_HEADING)).split('\n\n')[0];
    });
    expect(stacks[0]).not.toContain('send_email');
    expect(stacks[1]).not.toContain('[x]'); // the unrelated call ticked nothing
    expect(stacks[2]).toContain('[x] look up the weather');
    expect(stacks[2]).toContain('[ ] check the order');
    expect(events.filter((e) => e.type === 'step_done')).toHaveLength(1);
  });

  it("keeps a session's current input above the summary and makes it the summary's goal", async () => {
    const bigTurns = (n: number) =>
      Array.from({ length: n }, (_, i) => ({
        tool_calls: [{ name: 'big_result', arguments: { items: 40 + i } }],
      }));
    const limits = { compactionThresholdTokens: 1500, compactionKeepRounds: 1, planning: false };
    // One scripted conversation across both runs: the second run's history holds the first's turns.
    const scenario = {
      name: 'session-runs',
      turns: [...bigTurns(3), { content: 'first done' }, ...bigTurns(3), { content: 'second done' }],
    };
    const first = await h.run(scenario, { input: 'first request: fetch the rows', limits });
    expect(first.outcome).toMatchObject({ status: 'succeeded', answer: 'first done' });
    const second = await h.run(scenario, {
      input: 'second request: fetch other rows',
      limits,
      session: {
        messages: first.state.messages,
        ...(first.state.summary ? { summary: first.state.summary } : {}),
        steps: first.state.plan.steps,
      },
    });
    expect(second.outcome).toMatchObject({ status: 'succeeded', answer: 'second done' });
    const requests = h.turns('session-runs').slice(4);
    expect(requests).toHaveLength(4);
    for (const r of requests) {
      const users = r.body.messages.filter((m) => m.role === 'user').map((m) => m.content);
      expect(users).toContain('second request: fetch other rows');
      const text = systemText(r.body);
      if (text.includes('"goal"')) expect(text).toContain('"goal":"second request: fetch other rows"');
    }
    const compactions = second.events.filter((e) => e.type === 'compaction');
    expect(compactions.length).toBeGreaterThan(0);
    for (const c of compactions) {
      if (c.type === 'compaction') {
        expect(c.summary.goal).toBe('second request: fetch other rows');
        expect(c.summary.notes).toContain('earlier request: first request: fetch the rows');
      }
    }
    expectValidHistory(second.state.messages);
  });
});

describe('malformed tool call ids through the API', () => {
  it('answers GET /v1/runs/:id for a run whose model sent calls without ids', async () => {
    const h = await startApiHarness();
    try {
      h.sim.addScenario({
        name: 'id-less',
        turns: [{ tool_calls: [noop('a', { id: null }), noop('b', { id: null })] }, { content: 'two' }],
      });
      const runId = await h.control.start({ agent: 'test_agent', input: 'two echoes', model: 'id-less' });
      await waitFor(async () => (await h.control.get(runId))?.summary.status === 'succeeded', 15_000);
      const res = await h.call('GET', `/v1/runs/${runId}`);
      expect(res.status).toBe(200);
      const ids = (res.json.steps as Array<{ tool_call_id: string }>).map((s) => s.tool_call_id);
      expect(ids).toHaveLength(2);
      expect(new Set(ids).size).toBe(2);
      for (const id of ids) expect(id).toMatch(ID);
    } finally {
      await h.close();
    }
  });
});
