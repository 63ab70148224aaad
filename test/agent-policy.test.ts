import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SUMMARY_HEADING, TASK_STACK_HEADING } from '@agent-reach/scheduler/internal';
import { startLoopHarness, systemText } from './helpers/loop.js';
import { writeAgentsFile } from './helpers/mcp.js';

const ORDERS_DESK = {
  tools: ['query_order_status', 'noop'],
  allowed_topic: ['order_status', 'shipping'],
  examples: { shipping: ['Where is my parcel, has it shipped yet?', '我的包裹发货了吗'] },
};

/** Agents with a policy: topics, their own loop settings, context providers. */
const AGENTS = {
  agents: [
    { name: 'orders_desk', ...ORDERS_DESK, topic_policy: 'refuse' },
    { name: 'orders_desk_lenient', ...ORDERS_DESK, topic_policy: 'warn' },
    {
      name: 'tuned',
      tools: ['query_order_status', 'noop', 'always_failing'],
      loop: { repeat_limit: 2, max_failed_rounds: 2, max_argument_fix_rounds: 4, max_output_tokens: 321 },
    },
    {
      name: 'briefed',
      tools: ['isolated_echo', 'noop', 'always_failing'],
      context_providers: [
        { tool: 'isolated_echo', arguments: { value: 'knowledge base hit for: {{input}}' } },
        { tool: 'always_failing', arguments: {} },
      ],
    },
    {
      name: 'briefed_strictly',
      tools: ['noop', 'always_failing'],
      context_providers: [{ tool: 'always_failing', arguments: {}, required: true }],
    },
    { name: 'planner', tools: ['query_order_status', 'noop'] },
    { name: 'noop_only', tools: ['noop'] },
    {
      // The provider's tool fails once per request, so the executor's record of it holds two attempts.
      name: 'briefed_by_retries',
      tools: ['flaky', 'big_result', 'noop'],
      context_providers: [{ tool: 'flaky', arguments: { key: 'context {{input}}', failures: 1 } }],
    },
  ],
};

/** Any trace of the executor's attempts in what a model request carries. */
const EXECUTOR_FIELDS = /"attempts"|"attempt_log"|"executor_id"|attempt_log/;

describe('agent policy: topics, per-agent loop settings, context providers (llm-sim, real Redis and executor)', () => {
  let h: Awaited<ReturnType<typeof startLoopHarness>>;
  beforeAll(async () => {
    h = await startLoopHarness({ AGENTS_FILE: writeAgentsFile(AGENTS) });
  });
  afterAll(async () => h.close());

  it('answers an off-topic request with a refusal naming the topics, without any model call', async () => {
    const { outcome, events } = await h.run(
      { name: 'off-topic', turns: [{ content: 'a poem, since you asked' }] },
      { agent: 'orders_desk', input: 'Write me a poem about the sea' },
    );
    expect(outcome).toMatchObject({ status: 'succeeded', reason: 'off_topic', iterations: 0 });
    expect(outcome.answer).toContain('order_status, shipping');
    expect(outcome.report).toMatch(/refused without a model call/);
    expect(h.sim.requests.filter((r) => r.scenario === 'off-topic')).toHaveLength(0);
    expect(events.find((e) => e.type === 'topic')).toMatchObject({
      verdict: 'off_topic',
      action: 'refuse',
      topics: ['order_status', 'shipping'],
    });
  });

  it('lets an on-topic request of the same agent through to the model, in English and Chinese', async () => {
    for (const [name, input] of [
      ['on-topic-en', 'Has my parcel for ORD-100001 shipped?'],
      ['on-topic-zh', '我的订单 ORD-100001 发货了吗？'],
    ] as const) {
      const { outcome, events } = await h.run(
        { name, turns: [{ content: 'it is on its way' }] },
        { agent: 'orders_desk', input },
      );
      expect(outcome).toMatchObject({ status: 'succeeded', reason: 'final_answer' });
      expect(events.some((e) => e.type === 'topic')).toBe(false);
      expect(h.turns(name)).toHaveLength(1);
    }
  });

  it('warns and goes on with an off-topic request when the agent says warn, recording the warning', async () => {
    const { outcome, events } = await h.run(
      { name: 'off-topic-warned', turns: [{ content: 'a poem anyway' }] },
      { agent: 'orders_desk_lenient', input: 'Write me a poem about the sea' },
    );
    expect(outcome).toMatchObject({ status: 'succeeded', reason: 'final_answer', answer: 'a poem anyway' });
    expect(events.find((e) => e.type === 'topic')).toMatchObject({ verdict: 'off_topic', action: 'warn' });
    expect(h.turns('off-topic-warned')).toHaveLength(1);
  });

  it("attaches a context provider's result to the model's input and records an optional provider's failure", async () => {
    const { outcome, events, state } = await h.run(
      { name: 'briefed', turns: [{ content: 'answered with context' }] },
      { agent: 'briefed', input: 'how do refunds work' },
    );
    expect(outcome).toMatchObject({ status: 'succeeded', answer: 'answered with context' });
    const [first] = h.turns('briefed');
    const context = first!.body.messages.flatMap((m) =>
      m.role === 'system' && String(m.content).startsWith('Context from') ? [String(m.content)] : [],
    );
    expect(context).toHaveLength(2);
    expect(context[0]).toMatch(/^Context from isolated_echo: .*knowledge base hit for: how do refunds work/);
    expect(context[1]).toMatch(/^Context from always_failing: .*"ok":false/);
    // The providers' calls are not shown to the model as a turn of its own.
    expect(first!.body.messages.filter((m) => m.role === 'assistant')).toHaveLength(0);
    expect(events.find((e) => e.type === 'context')).toMatchObject({
      providers: [
        { tool: 'isolated_echo', ok: true, required: false },
        { tool: 'always_failing', ok: false, required: false, chars: 0 },
      ],
    });
    expect(state.steps.map((s) => [s.turn, s.tool, s.ok])).toEqual([
      [0, 'isolated_echo', true],
      [0, 'always_failing', false],
    ]);
  });

  it('fails the run context_failed, without a model call, when a required provider fails', async () => {
    const { outcome } = await h.run(
      { name: 'briefed-strictly', turns: [{ content: 'never asked' }] },
      { agent: 'briefed_strictly', input: 'anything' },
    );
    expect(outcome).toMatchObject({ status: 'failed', reason: 'context_failed', iterations: 0 });
    expect(outcome.report).toMatch(/always_failing/);
    expect(h.sim.requests.filter((r) => r.scenario === 'briefed-strictly')).toHaveLength(0);
  });

  it("honours the agent's own repeat limit and output-token cap over the fleet defaults", async () => {
    const same = { tool_calls: [{ name: 'noop', arguments: { value: 'again' } }] };
    const { outcome, events } = await h.run(
      { name: 'tuned-repeat', turns: [same, same, same, same, { content: 'never' }] },
      { agent: 'tuned', input: 'echo again' },
    );
    // Limit 2: a nudge after the second identical turn, a stop at the third (the default 3 allows four).
    expect(outcome).toMatchObject({ status: 'not_converged', reason: 'repeat', iterations: 3 });
    expect(events.filter((e) => e.type === 'guard').map((e) => e.type === 'guard' && e.action)).toEqual([
      'nudge',
      'stop',
    ]);
    expect(h.turns('tuned-repeat').map((r) => r.body.max_tokens)).toEqual([321, 321, 321]);
  });

  it('does not count rounds spent fixing invalid arguments as failed rounds, but stops at their own limit', async () => {
    const bad = (order_id: unknown) => ({
      tool_calls: [{ name: 'query_order_status', arguments: { order_id } }],
    });
    const fixed = await h.run(
      {
        name: 'argument-fixes',
        turns: [bad(1), bad('ORD-1'), bad(100001), { ...bad('ORD-100001') }, { content: 'it is paid' }],
      },
      { agent: 'tuned', input: 'status of my order 100001' },
    );
    // max_failed_rounds is 2: three rounds of invalid arguments would have stopped the run.
    expect(fixed.outcome).toMatchObject({ status: 'succeeded', reason: 'final_answer' });
    expect(fixed.outcome.steps.map((s) => s.error_kind ?? 'ok')).toEqual([
      'invalid_arguments',
      'invalid_arguments',
      'invalid_arguments',
      'ok',
    ]);

    const stuck = await h.run(
      {
        name: 'argument-fixes-stuck',
        turns: [bad(1), bad(2), bad(3), bad(4), bad(5), { content: 'never' }],
      },
      { agent: 'tuned', input: 'status of my order 100001' },
    );
    expect(stuck.outcome).toMatchObject({ status: 'failed', reason: 'argument_fix_rounds', iterations: 4 });
  });

  it('still stops on failed rounds that are not argument fixes, at the agent limit', async () => {
    const failing = { tool_calls: [{ name: 'always_failing', arguments: {} }] };
    const other = { tool_calls: [{ name: 'always_failing', arguments: {}, id: null }] };
    const { outcome } = await h.run(
      { name: 'tuned-failures', turns: [failing, other, failing, { content: 'never' }] },
      { agent: 'tuned', input: 'keep trying' },
    );
    expect(outcome).toMatchObject({ status: 'failed', reason: 'failed_rounds', iterations: 2 });
  });

  it('leaves a plan step open when its call failed and a later call of another tool succeeded', async () => {
    const { outcome, state, events } = await h.run(
      {
        name: 'plan-failed-step',
        plan: ['look up the order', 'echo a note'],
        turns: [
          { tool_calls: [{ name: 'query_order_status', arguments: { order_id: 'not an id' } }] },
          { tool_calls: [{ name: 'noop', arguments: { value: 'note' } }] },
          { content: 'could not find the order' },
        ],
      },
      { agent: 'planner', input: 'First look up order ORD-100001, then echo a note' },
    );
    expect(outcome.status).toBe('succeeded');
    expect(state.plan.steps[0]).toMatchObject({ title: 'look up the order', done: false });
    const ticked = events.flatMap((e) => (e.type === 'step_done' ? [e.step.title] : []));
    expect(ticked).not.toContain('look up the order');
    const last = h.turns('plan-failed-step').at(-1)!;
    expect(systemText(last.body)).toContain(TASK_STACK_HEADING);
    expect(systemText(last.body)).toContain('1. [ ] look up the order (tool: query_order_status)');
  });

  describe("the executor's attempts never reach the model", () => {
    const requestsOf = (scenario: string) => h.sim.requests.filter((r) => r.scenario === scenario);
    const seenByModel = (scenario: string) => requestsOf(scenario).map((r) => JSON.stringify(r.body));

    it("leaves attempts and attempt_log out of a context provider's result, as tool messages leave them out", async () => {
      const { outcome, state } = await h.run(
        {
          name: 'context-retried',
          turns: [
            { tool_calls: [{ name: 'flaky', arguments: { key: 'tool context-retried', failures: 1 } }] },
            { content: 'answered' },
          ],
        },
        { agent: 'briefed_by_retries', input: 'context-retried' },
      );
      expect(outcome).toMatchObject({ status: 'succeeded', answer: 'answered' });
      // The record keeps both calls' retries; the model read neither.
      expect(state.steps.map((s) => [s.tool, s.ok, s.attempts, s.attempt_log?.length])).toEqual([
        ['flaky', true, 2, 2],
        ['flaky', true, 2, 2],
      ]);
      const requests = seenByModel('context-retried');
      expect(requests).toHaveLength(2);
      const [first] = h.turns('context-retried');
      const context = first!.body.messages.find(
        (m) => m.role === 'system' && String(m.content).startsWith('Context from flaky'),
      );
      expect(String(context?.content)).toContain('"attempts_seen":2');
      for (const body of requests) expect(body).not.toMatch(EXECUTOR_FIELDS);
    });

    it('leaves them out of the compacted summary and of every request after a compaction', async () => {
      const turns = Array.from({ length: 4 }, (_, i) => ({
        tool_calls: [{ name: 'flaky', arguments: { key: `compacted ${i}`, failures: 1 } }],
      }));
      const { outcome, events } = await h.run(
        { name: 'compacted-retries', turns: [...turns, { content: 'compacted fine' }] },
        {
          agent: 'briefed_by_retries',
          input: 'compacted-retries',
          limits: { compactionThresholdTokens: 700, compactionKeepRounds: 1 },
        },
      );
      expect(outcome).toMatchObject({ status: 'succeeded', answer: 'compacted fine' });
      const compactions = events.filter((e) => e.type === 'compaction');
      expect(compactions.length).toBeGreaterThan(0);
      const last = h.turns('compacted-retries').at(-1)!;
      expect(systemText(last.body)).toContain(SUMMARY_HEADING);
      for (const body of seenByModel('compacted-retries')) expect(body).not.toMatch(EXECUTOR_FIELDS);
      // The providers' calls are no model turn: folding them leaves the simulator's turn count whole.
      expect(h.turns('compacted-retries').map((r) => r.turn)).toEqual([0, 1, 2, 3, 4]);
    });

    it("leaves them out of a session's earlier results that were stored with them", async () => {
      // A history checkpointed before every path shaped results: a provider's result with its retries.
      const stored = JSON.stringify({
        tool_call_id: 'ctx_1',
        name: 'flaky',
        ok: true,
        status: 'ok',
        content: { attempts_seen: 2 },
        duration_ms: 120,
        attempts: 2,
        attempt_log: [
          { attempt: 1, offset_ms: 0, duration_ms: 10, outcome: 'transient' },
          { attempt: 2, offset_ms: 110, duration_ms: 10, outcome: 'ok' },
        ],
        executor_id: 'exec-1',
      });
      const { outcome } = await h.run(
        {
          name: 'session-retries',
          turns: [{ content: 'unused' }, { content: 'unused' }, { content: 'still answered' }],
        },
        {
          agent: 'noop_only',
          input: 'and now?',
          session: {
            messages: [
              { role: 'user', content: 'earlier question' },
              {
                role: 'assistant',
                content: null,
                tool_calls: [{ id: 'ctx_1', type: 'function', function: { name: 'flaky', arguments: '{}' } }],
              },
              { role: 'tool', tool_call_id: 'ctx_1', content: stored },
              {
                role: 'assistant',
                content: null,
                tool_calls: [
                  { id: 'call_t1_0', type: 'function', function: { name: 'noop', arguments: '{}' } },
                ],
              },
              { role: 'tool', tool_call_id: 'call_t1_0', content: stored.replaceAll('ctx_1', 'call_t1_0') },
              { role: 'assistant', content: 'earlier answer' },
            ],
          },
        },
      );
      // The simulator counts the session's two answers as turns played: its third turn answers.
      expect(outcome).toMatchObject({ status: 'succeeded', answer: 'still answered' });
      const [request] = h.turns('session-retries');
      const body = JSON.stringify(request!.body);
      expect(body).toContain('Context from flaky: ');
      expect(body).toContain('attempts_seen');
      expect(body).not.toMatch(EXECUTOR_FIELDS);
    });
  });
});
