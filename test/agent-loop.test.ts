import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SUMMARY_HEADING, TASK_STACK_HEADING } from '@agent-reach/scheduler/internal';
import { startLoopHarness, systemText, toolMessages } from './helpers/loop.js';

describe('agent loop self-healing and guards (llm-sim over HTTP, real Redis and executor)', () => {
  let h: Awaited<ReturnType<typeof startLoopHarness>>;
  beforeAll(async () => {
    h = await startLoopHarness({ BREAKER_FAILURE_THRESHOLD: '2', BREAKER_RESET_TIMEOUT_MS: '60000' });
  });
  afterAll(async () => h.close());

  it('corrects a hallucinated tool name after the did_you_mean suggestion', async () => {
    const { outcome, state } = await h.run({
      name: 'hallucinated',
      turns: [
        { tool_calls: [{ name: 'get_wether', arguments: { city: '上海' } }] },
        { tool_calls: [{ name: '{{ last.error.did_you_mean }}', arguments: { city: '上海' } }] },
        { content: 'It is {{ results.query_weather.content.forecast.0.condition }} on Saturday.' },
      ],
    });
    expect(outcome).toMatchObject({
      status: 'succeeded',
      reason: 'final_answer',
      answer: 'It is 多云转晴 on Saturday.',
    });
    expect(state.steps.map((s) => [s.tool, s.ok, s.error_kind])).toEqual([
      ['get_wether', false, 'unknown_tool'],
      ['query_weather', true, undefined],
    ]);
    const [, second] = h.turns('hallucinated');
    expect(toolMessages(second!.body)[0]?.result.error).toMatchObject({
      kind: 'unknown_tool',
      did_you_mean: 'query_weather',
    });
  });

  it('corrects a wrongly typed argument after the structured invalid_arguments error', async () => {
    const { outcome, state } = await h.run({
      name: 'wrong-type',
      turns: [
        { tool_calls: [{ name: 'query_order_status', arguments: { order_id: 123456 } }] },
        { tool_calls: [{ name: 'query_order_status', arguments: { order_id: 'ORD-123456' } }] },
        { content: 'Order is {{ last.content.status }}.' },
      ],
    });
    expect(outcome.status).toBe('succeeded');
    expect(outcome.answer).toBe('Order is paid.');
    const [, second] = h.turns('wrong-type');
    expect(toolMessages(second!.body)[0]?.result.error).toMatchObject({
      kind: 'invalid_arguments',
      field: '/order_id',
      expected: 'string',
    });
    expect(state.steps.map((s) => s.ok)).toEqual([false, true]);
  });

  it('corrects broken argument JSON after the structured error', async () => {
    const { outcome } = await h.run({
      name: 'broken-json',
      turns: [
        {
          tool_calls: [{ name: 'query_weather', arguments: { city: '北京' } }],
          fault: { type: 'malformed_arguments' },
        },
        { tool_calls: [{ name: 'query_weather', arguments: { city: '北京' } }] },
        { content: 'ok' },
      ],
    });
    expect(outcome.status).toBe('succeeded');
    const [, second] = h.turns('broken-json');
    expect(toolMessages(second!.body)[0]?.result.error).toMatchObject({
      kind: 'invalid_arguments',
      constraint: 'json',
    });
    expect(toolMessages(second!.body)).toHaveLength(1);
    expect(outcome.steps.map((s) => s.ok)).toEqual([false, true]);
  });

  it('nudges a model that repeats the same call three turns in a row, then stops it', async () => {
    const { outcome, events } = await h.run({
      name: 'endless',
      turns: [{ tool_calls: [{ name: 'counted_effect', arguments: {} }], repeat: true }],
    });
    expect(outcome).toMatchObject({ status: 'not_converged', reason: 'repeat' });
    expect(outcome.iterations).toBe(4);
    expect(events.filter((e) => e.type === 'guard').map((e) => e.type === 'guard' && e.action)).toEqual([
      'nudge',
      'stop',
    ]);
    const requests = h.turns('endless');
    expect(requests).toHaveLength(4);
    const nudge = requests[3]!.body.messages.filter(
      (m) => m.role === 'system' && String(m.content).startsWith('Guard:'),
    );
    expect(nudge).toHaveLength(1);
    // The fourth call was never run: three executions, three results.
    expect(outcome.steps).toHaveLength(3);
  });

  it('shows the plan as a task stack in every request of a five-step task, ticking steps off', async () => {
    const plan = ['weather in 上海', 'weather in 北京', 'order ORD-100001', 'order ORD-100002', 'echo done'];
    const { outcome } = await h.run(
      {
        name: 'five-steps',
        plan,
        turns: [
          { tool_calls: [{ name: 'query_weather', arguments: { city: '上海' } }] },
          { tool_calls: [{ name: 'query_weather', arguments: { city: '北京' } }] },
          { tool_calls: [{ name: 'query_order_status', arguments: { order_id: 'ORD-100001' } }] },
          { tool_calls: [{ name: 'query_order_status', arguments: { order_id: 'ORD-100002' } }] },
          { tool_calls: [{ name: 'noop', arguments: { value: 'done' } }] },
          { content: 'all five done' },
        ],
      },
      { input: '先查上海和北京的天气，再查订单 ORD-100001 和 ORD-100002，最后回一句 done' },
    );
    expect(outcome.status).toBe('succeeded');
    const requests = h.turns('five-steps');
    expect(requests).toHaveLength(6);
    requests.forEach((r, i) => {
      const text = systemText(r.body);
      expect(text).toContain(TASK_STACK_HEADING);
      plan.forEach((step) => expect(text).toContain(step));
      expect(text.match(/\[x\]/g) ?? []).toHaveLength(i);
    });
  });

  it('asks a simple question and a one-tool request without a plan call, with the default iteration limit', async () => {
    for (const [name, input, intent] of [
      ['greeting', '你好', 'simple'],
      ['one-lookup', '上海周末天气怎么样？', 'single_tool'],
    ] as const) {
      const { outcome, state, events } = await h.run(
        { name, plan: ['a plan nobody should ask for'], turns: [{ content: 'answered' }] },
        { input },
      );
      expect(outcome.status).toBe('succeeded');
      expect(state.intent?.intent).toBe(intent);
      expect(events[0]).toMatchObject({ type: 'run_started', intent });
      expect(events.some((e) => e.type === 'plan')).toBe(false);
      expect(h.sim.requests.filter((r) => r.scenario === name)).toHaveLength(1);
      expect(state.plan).toEqual({ requested: false, steps: [] });
    }
  });

  it('gives a multi-step request a plan call and 15 model turns, where a simple one keeps 10', async () => {
    const turns = Array.from({ length: 16 }, (_, i) => ({
      tool_calls: [{ name: 'noop', arguments: { value: `step ${i}` } }],
    }));
    const { outcome, state } = await h.run(
      { name: 'long-multi-step', plan: ['check', 'write'], turns: [...turns, { content: 'never' }] },
      { input: 'check the weather in 上海 and 北京, then write the plan to a file' },
    );
    expect(state.intent?.intent).toBe('multi_step');
    expect(state.plan.requested).toBe(true);
    expect(outcome).toMatchObject({ status: 'not_converged', reason: 'max_iterations', iterations: 15 });
    // A simple request keeps the default of 10.
    const simple = await h.run(
      { name: 'long-simple', turns: [...turns, { content: 'never' }] },
      { input: 'hello' },
    );
    expect(simple.outcome).toMatchObject({ reason: 'max_iterations', iterations: 10 });
  });

  it('compacts the history past the token threshold, keeping the task stack above the summary', async () => {
    const turns = Array.from({ length: 6 }, (_, i) => ({
      tool_calls: [{ name: 'big_result', arguments: { items: 50 + i } }],
    }));
    const { outcome, events, state } = await h.run(
      {
        name: 'compaction',
        plan: ['fetch rows', 'fetch more rows', 'summarize'],
        turns: [...turns, { content: 'compacted fine' }],
      },
      {
        input: 'fetch rows, then fetch more rows, then summarize them',
        limits: { compactionThresholdTokens: 1500, compactionKeepRounds: 1 },
      },
    );
    expect(outcome).toMatchObject({ status: 'succeeded', answer: 'compacted fine' });
    const compactions = events.filter((e) => e.type === 'compaction');
    expect(compactions.length).toBeGreaterThan(0);
    for (const c of compactions) {
      if (c.type !== 'compaction') continue;
      expect(c.after_tokens).toBeLessThan(c.before_tokens);
      expect(c.summary.goal).toBe('fetch rows, then fetch more rows, then summarize them');
      expect(c.summary.done.length).toBeGreaterThan(0);
      expect(c.summary.done[0]).toMatchObject({ tool: 'big_result', ok: true });
      expect(c.folded_digest).toMatch(/^[0-9a-f]{64}$/);
    }
    // Each compaction shows the summary before it (none before the first) and after it.
    const [first, ...later] = compactions.flatMap((c) => (c.type === 'compaction' ? [c] : []));
    expect(first).not.toHaveProperty('summary_before');
    expect(later.length).toBeGreaterThan(0);
    later.forEach((c, i) => {
      const previous = i === 0 ? first! : later[i - 1]!;
      expect(c.summary_before).toEqual(previous.summary);
      expect(c.folded_digest).not.toBe(previous.folded_digest);
    });
    expect(state.compactions).toBe(compactions.length);
    const last = h.turns('compaction').at(-1)!;
    const text = systemText(last.body);
    expect(text.indexOf(TASK_STACK_HEADING)).toBeGreaterThan(-1);
    expect(text.indexOf(SUMMARY_HEADING)).toBeGreaterThan(text.indexOf(TASK_STACK_HEADING));
    // The model's turn count survived the folding: the simulator played every scripted turn in order.
    expect(h.turns('compaction').map((r) => r.turn)).toEqual([0, 1, 2, 3, 4, 5, 6]);
  });

  it('retries 429 (honouring retry-after) and 500 answers of the model endpoint', async () => {
    const { outcome } = await h.run({
      name: 'flaky-llm',
      turns: [
        { tool_calls: [{ name: 'noop', arguments: {} }], fault: { type: 'rate_limit', retry_after_s: 1 } },
        { content: 'fine', fault: { type: 'server_error' } },
      ],
    });
    expect(outcome).toMatchObject({ status: 'succeeded', answer: 'fine' });
    const statuses = h.turns('flaky-llm').map((r) => [r.turn, r.status]);
    expect(statuses).toEqual([
      [0, 429],
      [0, 200],
      [1, 500],
      [1, 200],
    ]);
  });

  it('hides a tool from the next request once its breaker opens', async () => {
    const { outcome } = await h.run(
      {
        name: 'breaker',
        turns: [
          { tool_calls: [{ name: 'always_failing', arguments: {} }] },
          { tool_calls: [{ name: 'always_failing', arguments: {} }] },
          { tool_calls: [{ name: 'noop', arguments: {} }] },
          { content: 'worked around it' },
        ],
      },
      { limits: { maxFailedRounds: 5 } },
    );
    expect(outcome.status).toBe('succeeded');
    const offered = h
      .turns('breaker')
      .map((r) => (r.body.tools ?? []).map((t) => (t.type === 'function' ? t.function.name : '')));
    expect(offered[0]).toContain('always_failing');
    expect(offered[1]).toContain('always_failing');
    expect(offered[2]).not.toContain('always_failing');
    expect(offered[2]).toContain('noop');
  });

  it('answers parallel calls of one turn by tool_call_id, in order', async () => {
    const { outcome } = await h.run({
      name: 'parallel',
      turns: [
        {
          tool_calls: [
            { name: 'query_weather', arguments: { city: '上海' } },
            { name: 'query_order_status', arguments: { order_id: 'ORD-100003' } },
            { name: 'query_weather', arguments: { city: '成都' } },
          ],
        },
        { content: 'three answers' },
      ],
    });
    expect(outcome.status).toBe('succeeded');
    const [first, second] = h.turns('parallel');
    const calls = (first!.response as { choices: Array<{ message: { tool_calls: Array<{ id: string }> } }> })
      .choices[0]!.message.tool_calls;
    const answers = toolMessages(second!.body);
    expect(answers.map((a) => a.id)).toEqual(calls.map((c) => c.id));
    expect(answers.map((a) => a.result.tool_call_id)).toEqual(calls.map((c) => c.id));
    expect(answers.map((a) => a.result.content.city ?? a.result.content.order_id)).toEqual([
      '上海',
      'ORD-100003',
      '成都',
    ]);
  });

  it('stops at max iterations as not_converged with advice to split the task', async () => {
    const { outcome } = await h.run(
      {
        name: 'long',
        turns: Array.from({ length: 5 }, (_, i) => ({
          tool_calls: [{ name: 'noop', arguments: { value: `v${i}` } }],
        })),
      },
      { limits: { maxIterations: 3 } },
    );
    expect(outcome).toMatchObject({ status: 'not_converged', reason: 'max_iterations', iterations: 3 });
    expect(outcome.report).toMatch(/split the task/);
  });

  it('stops after consecutive failed tool rounds with a report of the failures', async () => {
    const { outcome } = await h.run({
      name: 'all-fail',
      turns: [
        { tool_calls: [{ name: 'throws_plain', arguments: {} }] },
        { tool_calls: [{ name: 'throws_plain', arguments: {} }] },
        { tool_calls: [{ name: 'throws_plain', arguments: {} }] },
        { content: 'never reached' },
      ],
    });
    expect(outcome).toMatchObject({ status: 'failed', reason: 'failed_rounds' });
    // Two execution errors open the tool's breaker (threshold 2 here), so the third round is refused.
    expect(outcome.steps.map((s) => s.error_kind)).toEqual([
      'execution_error',
      'execution_error',
      'circuit_open',
    ]);
    expect(outcome.report).toMatch(/^3 tool rounds in a row failed; last round: throws_plain: circuit_open/);
  });

  it('stops when the run exceeds its token budget', async () => {
    const { outcome } = await h.run(
      { name: 'budget', turns: [{ tool_calls: [{ name: 'noop', arguments: {} }] }, { content: 'late' }] },
      { limits: { tokenBudget: 50, planning: false } },
    );
    expect(outcome).toMatchObject({ status: 'not_converged', reason: 'token_budget' });
    expect(outcome.usage.total_tokens).toBeGreaterThanOrEqual(50);
  });

  it('stops at the wall-clock deadline as not_converged', async () => {
    const { outcome } = await h.run(
      {
        name: 'slow-model',
        turns: [
          { tool_calls: [{ name: 'noop', arguments: {} }], fault: { type: 'latency', ms: 300 } },
          { content: 'late' },
        ],
      },
      { limits: { planning: false }, deadlineMs: 200 },
    );
    expect(outcome).toMatchObject({ status: 'not_converged', reason: 'deadline' });
  });

  it('cancels a run: nothing more is dispatched once its signal fires', async () => {
    const controller = new AbortController();
    const pending = h.run(
      {
        name: 'cancel-me',
        turns: [
          { tool_calls: [{ name: 'counted_effect', arguments: {} }], fault: { type: 'latency', ms: 200 } },
          { tool_calls: [{ name: 'counted_effect', arguments: { ms: 1 } }] },
          { content: 'never' },
        ],
      },
      { limits: { planning: false }, signal: controller.signal },
    );
    setTimeout(() => controller.abort(), 50);
    const { outcome } = await pending;
    expect(outcome).toMatchObject({ status: 'cancelled', reason: 'cancelled', iterations: 0 });
    expect(outcome.steps).toHaveLength(0);
  });
});

describe('tool call ids from providers that reuse them', () => {
  it('rewrites a reused tool call id so every call of the run gets its own result', async () => {
    const { startPlatform } = await import('./helpers/platform.js');
    const { AgentRunner } = await import('@agent-reach/scheduler/internal');
    const { createLogger, loadAgents } = await import('@agent-reach/shared');
    const { TEST_AGENTS } = await import('./helpers/processes.js');
    const p = await startPlatform();
    // A model stand-in that names every call "call_0", as some OpenAI-compatible servers do.
    let turn = 0;
    const answer = (content: string | null, call?: { name: string; arguments: string }) => ({
      id: `x${turn}`,
      object: 'chat.completion' as const,
      created: 0,
      model: 'reuser',
      choices: [
        {
          index: 0,
          logprobs: null,
          finish_reason: call ? ('tool_calls' as const) : ('stop' as const),
          message: {
            role: 'assistant' as const,
            content,
            refusal: null,
            ...(call ? { tool_calls: [{ id: 'call_0', type: 'function' as const, function: call }] } : {}),
          },
        },
      ],
    });
    const llm = {
      model: 'reuser',
      complete: async () => {
        turn += 1;
        if (turn === 1) return answer(null, { name: 'query_weather', arguments: '{"city":"上海"}' });
        if (turn === 2) return answer(null, { name: 'query_weather', arguments: '{"city":"北京"}' });
        return answer('two cities');
      },
      completeJson: async () => answer('{"steps":[]}'),
    };
    try {
      const runner = await AgentRunner.start({
        connection: p.producer,
        keys: p.keys,
        agents: loadAgents(TEST_AGENTS),
        llm,
        logger: createLogger('test', { level: 'silent' }),
      });
      const { recordingCheckpoint } = await import('./helpers/ledger.js');
      const { outcome, state } = await runner.run({
        agent: 'test_agent',
        input: 'two cities',
        checkpoint: recordingCheckpoint(p.producer, p.keys),
      });
      await runner.close();
      expect(outcome).toMatchObject({ status: 'succeeded' });
      expect(state.steps.map((s) => s.tool_call_id)).toEqual(['call_0', 'call_t2_0']);
      const cities = state.messages.flatMap((m) =>
        m.role === 'tool'
          ? [(JSON.parse(m.content as string) as { content: { city: string } }).content.city]
          : [],
      );
      expect(cities).toEqual(['上海', '北京']);
    } finally {
      await p.close();
    }
  });
});

describe('agent runner start-up', () => {
  it('refuses to start when an agent names a tool no executor registers, naming agent and tool', async () => {
    const { AgentRunner, createLlmClient } = await import('@agent-reach/scheduler/internal');
    const { createLogger, parseAgents } = await import('@agent-reach/shared');
    const { startPlatform } = await import('./helpers/platform.js');
    const p = await startPlatform();
    try {
      const agents = parseAgents(
        'agents:\n  - name: a\n    tools: [query_weather, query_wether_v2]\n',
        'agents.yaml',
      );
      await expect(
        AgentRunner.start({
          connection: p.producer,
          keys: p.keys,
          agents,
          llm: createLlmClient({ apiKey: 'x', model: 'm', baseURL: 'http://127.0.0.1:9/v1' }),
          logger: createLogger('test', { level: 'silent' }),
          catalogWaitMs: 200,
        }),
      ).rejects.toMatchObject({
        code: 'AGENTS_INVALID',
        message: expect.stringMatching(
          /agent "a": tools\[1\] "query_wether_v2" is not a registered tool \(did you mean "query_weather"\?\)/,
        ),
      });
    } finally {
      await p.close();
    }
  });
});
