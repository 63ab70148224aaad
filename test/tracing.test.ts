import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startExecutorWith, startSchedulerChild, type Child } from './helpers/processes.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from './helpers/otlp-receiver.js';
import { REDIS_URL, waitFor } from './helpers/redis.js';
import { freePort } from './helpers/redis-server.js';
import { startRunsHarness, testEnv } from './helpers/runs.js';

/** Stops the processes, then the harness and the receiver. */
async function stopAll(
  children: Child[],
  h: { close(): Promise<void> } | undefined,
  receiver: OtlpReceiver | undefined,
): Promise<void> {
  for (const c of children) c.kill('SIGTERM');
  await Promise.all(children.map((c) => c.exited));
  await h?.close();
  await receiver?.close();
}

/** OTLP span kinds. */
const KIND = { internal: 1, client: 3, producer: 4, consumer: 5 } as const;

describe('OpenTelemetry traces of a run across scheduler and executor processes (real OTLP/HTTP receiver)', () => {
  let h: Awaited<ReturnType<typeof startRunsHarness>>;
  let receiver: OtlpReceiver;
  let children: Child[] = [];
  let runId: string;
  let traceId: string;
  let toolCallId: string;
  let spans: ReceivedSpan[];

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    h = await startRunsHarness({}, { executor: false, scheduler: false });
    // A turn of three calls: one that fails once (transient) and succeeds on its retry, and two to a tool
    // that always fails, whose second failure in a row opens its breaker; then the answer.
    h.sim.addScenario({
      name: 'traced',
      turns: [
        {
          tool_calls: [
            { name: 'flaky', arguments: { key: randomUUID(), failures: 1 } },
            { name: 'always_failing', arguments: {} },
            { name: 'always_failing', arguments: {} },
          ],
        },
        { content: 'done' },
      ],
    });
    const env = testEnv(h.prefix, h.sim, {
      BREAKER_FAILURE_THRESHOLD: '2',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '100',
    });
    children = [startExecutorWith(env), startSchedulerChild(env)];
    await Promise.all(children.map((c) => c.ready));
    runId = await h.control.start({ agent: 'test_agent', input: 'trace me', model: 'traced' });
    expect(await h.control.wait(runId, 30_000)).toMatchObject({ status: 'succeeded', answer: 'done' });
    const run = await h.control.get(runId);
    traceId = run?.summary.traceId ?? '';
    toolCallId = run?.state?.steps.find((step) => step.tool === 'flaky')?.tool_call_id ?? '';
    const runSpans = () => receiver.spans.filter((s) => s.traceId === traceId);
    // The root span is emitted when the run ends; the executor's span may be exported a batch later.
    spans = await waitFor(
      () => {
        const mine = runSpans();
        const executions = mine.filter((s) => s.name.startsWith('execute_tool '));
        return mine.some((s) => s.name === 'invoke_agent test_agent') && executions.length === 3
          ? mine
          : undefined;
      },
      20_000,
      "the run's root span and the executor's three spans at the receiver",
    );
  }, 60_000);

  afterAll(() => stopAll(children, h, receiver));

  const one = (name: string) => {
    const found = spans.filter((s) => s.name === name);
    expect(found, `spans named ${name}`).toHaveLength(1);
    return found[0] as ReceivedSpan;
  };

  it("puts every span of the run in one trace whose id is the run's trace_id", () => {
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(receiver.rejected).toEqual([]);
    const ofRun = receiver.spans.filter((s) => s.attributes['agent_reach.run.id'] === runId);
    expect(ofRun.length).toBeGreaterThanOrEqual(3);
    expect(new Set(ofRun.map((s) => s.traceId))).toEqual(new Set([traceId]));
    expect(new Set(spans.map((s) => s.service))).toEqual(
      new Set(['agent-reach-scheduler', 'agent-reach-executor']),
    );
  });

  it('emits the run as the root span once, with its outcome, from the scheduler', () => {
    const root = one('invoke_agent test_agent');
    expect(root).toMatchObject({ parentSpanId: '', kind: KIND.internal, service: 'agent-reach-scheduler' });
    expect(root.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': 'test_agent',
      'agent_reach.run.id': runId,
      'agent_reach.run.status': 'succeeded',
      'agent_reach.run.reason': 'final_answer',
      'agent_reach.run.tool_calls': 3,
    });
    expect(spans.filter((s) => s.parentSpanId === '')).toEqual([root]);
  });

  it('records each model call as a chat span under the root, with the GenAI attributes', () => {
    const root = one('invoke_agent test_agent');
    const chats = spans.filter((s) => s.name === 'chat traced');
    expect(chats.length).toBeGreaterThanOrEqual(2);
    for (const chat of chats) {
      expect(chat).toMatchObject({ parentSpanId: root.spanId, kind: KIND.client });
      expect(chat.attributes).toMatchObject({
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'openai',
        'gen_ai.request.model': 'traced',
      });
      expect(chat.attributes['gen_ai.usage.input_tokens']).toEqual(expect.any(Number));
      expect(chat.attributes['gen_ai.usage.output_tokens']).toEqual(expect.any(Number));
    }
    const reasons = chats.map((c) => c.attributes['gen_ai.response.finish_reasons']);
    expect(reasons).toEqual(expect.arrayContaining([['tool_calls'], ['stop']]));
  });

  it('records the published tool call as a producer span under the root', () => {
    const root = one('invoke_agent test_agent');
    const publish = one('publish flaky');
    expect(publish).toMatchObject({
      parentSpanId: root.spanId,
      kind: KIND.producer,
      service: 'agent-reach-scheduler',
    });
    expect(publish.attributes).toMatchObject({
      'messaging.system': 'bullmq',
      'gen_ai.tool.name': 'flaky',
      'gen_ai.tool.call.id': toolCallId,
    });
  });

  it("continues the trace in the executor's consumer span, with its retry as a span event", () => {
    const publish = one('publish flaky');
    const execution = one('execute_tool flaky');
    expect(execution).toMatchObject({
      parentSpanId: publish.spanId,
      kind: KIND.consumer,
      service: 'agent-reach-executor',
    });
    expect(execution.attributes).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.call.id': toolCallId,
      'agent_reach.tool.status': 'ok',
      'agent_reach.tool.attempts': 2,
    });
    expect(execution.events).toEqual([
      {
        name: 'retry',
        attributes: {
          'agent_reach.tool.attempt': 2,
          'agent_reach.tool.backoff_ms': 100,
          'error.type': 'transient',
        },
      },
    ]);
  });

  it('marks failed executions as errors, and the breaker opening as an event on the call that opened it', () => {
    const root = one('invoke_agent test_agent');
    const publishes = spans.filter((s) => s.name === 'publish always_failing');
    const executions = spans.filter((s) => s.name === 'execute_tool always_failing');
    expect(publishes).toHaveLength(2);
    expect(publishes.every((p) => p.parentSpanId === root.spanId)).toBe(true);
    expect(executions).toHaveLength(2);
    expect(executions.map((e) => e.parentSpanId).sort()).toEqual(publishes.map((p) => p.spanId).sort());
    for (const execution of executions) {
      expect(execution.status).toBe(2);
      expect(execution.attributes).toMatchObject({
        'error.type': 'transient',
        'agent_reach.tool.status': 'error',
      });
    }
    expect(executions.flatMap((e) => e.events)).toEqual([
      {
        name: 'breaker_transition',
        attributes: { 'gen_ai.tool.name': 'always_failing', 'agent_reach.breaker.state': 'open' },
      },
    ]);
  });
});

describe("a run started over HTTP with the caller's traceparent (real scheduler process, OTLP receiver)", () => {
  let h: Awaited<ReturnType<typeof startRunsHarness>>;
  let receiver: OtlpReceiver;
  let children: Child[] = [];
  let apiUrl: string;
  const apiKey = 'trace-key-0123456789abcdef';

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    h = await startRunsHarness({}, { executor: false, scheduler: false });
    h.sim.addScenario({ name: 'hello', turns: [{ content: 'hello' }] });
    const port = await freePort();
    apiUrl = `http://127.0.0.1:${port}`;
    const env = testEnv(h.prefix, h.sim, {
      OPENAI_MODEL: 'hello',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '100',
      API_KEYS: `tracer:${apiKey}`,
      API_PORT: String(port),
      API_HOST: '127.0.0.1',
    });
    children = [startExecutorWith(env), startSchedulerChild(env)];
    await Promise.all(children.map((c) => c.ready));
  }, 60_000);

  afterAll(() => stopAll(children, h, receiver));

  const startRun = async (traceparent: string) => {
    const res = await fetch(`${apiUrl}/v1/runs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', traceparent },
      body: JSON.stringify({ agent: 'test_agent', input: 'hi' }),
    });
    expect(res.status, await res.clone().text()).toBe(201);
    const run = (await res.json()) as { run_id: string; trace_id: string };
    expect(await h.control.wait(run.run_id, 30_000)).toMatchObject({ status: 'succeeded' });
    const root = await waitFor(
      () =>
        receiver.spans.find(
          (s) => s.name === 'invoke_agent test_agent' && s.attributes['agent_reach.run.id'] === run.run_id,
        ),
      20_000,
      "the run's root span at the receiver",
    );
    return { run, root };
  };

  it("joins the caller's trace: the run's trace id is the caller's and its root span a child of the caller's span", async () => {
    const callerTrace = randomUUID().replace(/-/g, '');
    const callerSpan = randomUUID().replace(/-/g, '').slice(0, 16);
    const { run, root } = await startRun(`00-${callerTrace}-${callerSpan}-01`);
    expect(run.trace_id).toBe(callerTrace);
    expect(root).toMatchObject({ traceId: callerTrace, parentSpanId: callerSpan });
    const chat = receiver.spans.filter(
      (s) => s.traceId === callerTrace && s.name.startsWith('chat ') && s.parentSpanId === root.spanId,
    );
    expect(chat.length, "the run's model call under its root span").toBeGreaterThanOrEqual(1);
  });

  it('emits the root span, failed, of a run job the scheduler refused, with the trace its job named', async () => {
    const queue = new Queue('agent-runs', {
      connection: { host: '127.0.0.1', port: Number(new URL(REDIS_URL).port || 6379) },
      prefix: h.keys.queuePrefix(h.keys.runsQueue),
    });
    try {
      const runId = `refused-${randomUUID()}`;
      const traceId = randomUUID().replace(/-/g, '');
      await queue.add(
        'run',
        { v: 2, run_id: runId, agent: 'nobody', input: 'hi', trace_id: traceId },
        { jobId: runId },
      );
      const root = await waitFor(
        () => receiver.spans.find((s) => s.attributes['agent_reach.run.id'] === runId),
        20_000,
        "the refused run's root span at the receiver",
      );
      expect(root).toMatchObject({ name: 'invoke_agent nobody', traceId, parentSpanId: '' });
      expect(root.attributes).toMatchObject({
        'agent_reach.run.status': 'failed',
        'agent_reach.run.reason': 'invalid_job',
      });
    } finally {
      await queue.close();
    }
  });

  it('ignores a malformed traceparent, as W3C Trace Context asks: the run starts a trace of its own', async () => {
    const { run, root } = await startRun(`00-${'0'.repeat(32)}-${'a'.repeat(16)}-01`);
    // However long: the header is ignored, not refused.
    await startRun(`00-${'a'.repeat(2000)}`);
    expect(run.trace_id).toMatch(/^[0-9a-f]{32}$/);
    expect(run.trace_id).not.toBe('0'.repeat(32));
    expect(root).toMatchObject({ traceId: run.trace_id, parentSpanId: '' });
  });
});
