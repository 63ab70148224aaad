import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type AgentReachClient } from '@agent-reach/client';
import { startLlmSim, type LlmSim, type Scenario } from '@agent-reach/llm-sim';
import type { AnswerDeltaEvent, RunEvent } from '@agent-reach/protocol';
import {
  FULL_KEY,
  openEventStream,
  startParkedRun,
  sseMessages,
  startApiHarness,
  type ApiHarness,
} from './helpers/api.js';
import { startExecutorWith, startSchedulerChild, type Child } from './helpers/processes.js';
import { testRedis, waitFor } from './helpers/redis.js';
import { addCommonScenarios } from './helpers/scenarios.js';
import { gatedEventReads } from './helpers/gate.js';
import { AnswerPrinter, followRun as followCli } from '../packages/cli/src/follow.js';
import { apiEnv, testEnv } from './helpers/runs.js';

const API_KEY = 'streaming-key-0123456789abcdef';
const ANSWER =
  '上海这个周末晴，最高 24 度。建议周六上午去外滩和南京路，下午去豫园；周日去西岸美术馆，傍晚沿江散步。Enjoy the trip!';
const approveFirst = { tool_calls: [{ name: 'needs_approval', arguments: {} }] };

/** The run parks on `needs_approval` first, so a subscriber is listening before the answer streams. */
const scenarios: Scenario[] = [
  { name: 'stream-answer', turns: [approveFirst, { content: ANSWER, reasoning: 'Weekend, fine weather.' }] },
  {
    name: 'stream-cut',
    turns: [approveFirst, { content: ANSWER, fault: { type: 'stream_cut', after_chunks: 6 } }],
  },
  {
    name: 'stream-malformed',
    turns: [approveFirst, { content: ANSWER, fault: { type: 'stream_malformed', after_chunks: 5 } }],
  },
  {
    name: 'stream-tools',
    turns: [
      {
        tool_calls: [
          { name: 'query_weather', arguments: { city: '上海' } },
          { name: 'query_weather', arguments: { city: '北京' } },
          { name: 'query_order_status', arguments: { order_id: 'ORD-100001', include_history: true } },
        ],
      },
      { tool_calls: [{ name: 'noop', arguments: { value: 'x' } }] },
      { content: 'Both cities checked, the order too.' },
    ],
  },
];

let sim: LlmSim;
let t: ReturnType<typeof testRedis>;
let executor: Child;
let scheduler: Child;
let apiUrl: string;
let client: AgentReachClient;

beforeAll(async () => {
  t = testRedis();
  sim = await startLlmSim({ scenarios });
  const env = testEnv(t.prefix, sim, {
    ...apiEnv(API_KEY),
    OPENAI_MODEL: 'stream-answer',
    ALLOWED_MODELS: scenarios.map((s) => s.name).join(','),
    LLM_STREAM: 'true',
  });
  executor = startExecutorWith(env);
  await executor.ready;
  scheduler = startSchedulerChild(env);
  apiUrl = String((await scheduler.ready).apiUrl).replace('://0.0.0.0:', '://127.0.0.1:');
  client = createClient({ baseUrl: apiUrl, apiKey: API_KEY });
}, 60_000);

afterAll(async () => {
  for (const c of [executor, scheduler]) c?.kill('SIGKILL');
  await Promise.all([executor?.exited, scheduler?.exited]);
  await sim?.close();
  await t?.cleanup();
});

/** Runs a scenario through the API, approving its parked call, and collects what the client yields. */
async function followRun(model: string) {
  const run = await client.createRun({ agent: 'test_agent', input: `stream please (${model})`, model });
  const events: Array<RunEvent | AnswerDeltaEvent> = [];
  for await (const e of client.streamEvents(run.run_id, { answerDeltas: true })) {
    events.push(e.data);
    if (e.type === 'approval_requested') {
      await client.approve(run.run_id, e.data.tool_call_id);
    }
  }
  const done = await client.getRun(run.run_id);
  const deltas = events.filter((e): e is AnswerDeltaEvent => e.type === 'answer_delta');
  return { runId: run.run_id, done, events, deltas };
}

/** The text of a turn's last try: a new try's deltas replace the broken one's. */
function streamedText(deltas: AnswerDeltaEvent[], turn: number): string {
  const ofTurn = deltas.filter((d) => d.turn === turn);
  const last = Math.max(...ofTurn.map((d) => d.attempt));
  return ofTurn
    .filter((d) => d.attempt === last)
    .map((d) => d.content ?? '')
    .join('');
}

const llmRequests = (events: Array<RunEvent | AnswerDeltaEvent>) =>
  events.filter((e): e is Extract<RunEvent, { type: 'llm_request' }> => e.type === 'llm_request');

describe('streamed model answers', () => {
  it("sends the answer's text to event subscribers before run_finished, adding up to the recorded answer", async () => {
    const { done, events, deltas } = await followRun('stream-answer');
    expect(done.status).toBe('succeeded');
    expect(done.answer).toBe(ANSWER);
    expect(deltas.length).toBeGreaterThan(0);
    const finishedAt = events.findIndex((e) => e.type === 'run_finished');
    expect(events.findIndex((e) => e.type === 'answer_delta')).toBeLessThan(finishedAt);
    const final = llmRequests(events).at(-1)!;
    expect(streamedText(deltas, final.turn)).toBe(done.answer);
    // In the run's order: the text after what was recorded before its turn, and before the turn's record.
    const types = events.map((e) => e.type);
    expect(types.indexOf('answer_delta')).toBeGreaterThan(types.indexOf('approval_decided'));
    expect(types.lastIndexOf('answer_delta')).toBeLessThan(events.indexOf(final));
    expect(final.message.content).toBe(ANSWER);
    expect(final.reasoning).toBe('Weekend, fine weather.');
    expect(deltas.map((d) => d.reasoning ?? '').join('')).toBe('Weekend, fine weather.');
    const asked = sim.requests.filter((r) => r.scenario === 'stream-answer' && r.turn !== null);
    expect(asked.every((r) => (r.body as { stream?: boolean }).stream === true)).toBe(true);
  }, 60_000);

  it('shows the deltas on the SSE route without ids, so Last-Event-ID still resumes after recorded events', async () => {
    const run = await client.createRun({ agent: 'test_agent', input: 'raw sse', model: 'stream-answer' });
    const sse = await openEventStream(apiUrl, run.run_id, { key: API_KEY });
    const approval = await (async () => {
      for (;;) {
        const m = sse.messages().find((x) => x.event === 'approval_requested');
        if (m) return JSON.parse(m.data!) as { tool_call_id: string };
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    await client.approve(run.run_id, approval.tool_call_id);
    await sse.ended;
    const blocks = sse.stream.text.split('\n\n').filter((b) => b.includes('event: answer_delta'));
    expect(blocks.length).toBeGreaterThan(0);
    expect(blocks.every((b) => !b.split('\n').some((l) => l.startsWith('id:')))).toBe(true);
    const text = blocks.map((b) => (JSON.parse(b.split('data: ')[1]!) as AnswerDeltaEvent).content ?? '');
    expect(text.join('')).toBe(ANSWER);
    const stored = sse.messages();
    const resumeFrom = stored.find((m) => m.event === 'approval_requested')!.id!;
    const resumed = await openEventStream(apiUrl, run.run_id, { key: API_KEY, lastEventId: resumeFrom });
    await resumed.ended;
    expect(resumed.messages().map((m) => m.id)).toEqual(
      stored.slice(stored.findIndex((m) => m.id === resumeFrom) + 1).map((m) => m.id),
    );
  }, 60_000);

  it('asks a turn again when its stream is cut mid-answer, and records one answer', async () => {
    const { done, events, deltas } = await followRun('stream-cut');
    expect(done.status).toBe('succeeded');
    expect(done.answer).toBe(ANSWER);
    const final = llmRequests(events).at(-1)!;
    expect(llmRequests(events).filter((e) => e.turn === final.turn)).toHaveLength(1);
    expect(events.some((e) => e.type === 'llm_error')).toBe(false);
    const asked = sim.requests.filter((r) => r.scenario === 'stream-cut' && r.turn === 1);
    expect(asked.map((r) => r.faults?.[0]?.type)).toEqual(['stream_cut', undefined]);
    expect(new Set(deltas.filter((d) => d.turn === final.turn).map((d) => d.attempt))).toContain(2);
    expect(streamedText(deltas, final.turn)).toBe(ANSWER);
  }, 60_000);

  it('asks a turn again when its stream sends a malformed chunk, and records one answer', async () => {
    const { done, events, deltas } = await followRun('stream-malformed');
    expect(done.status).toBe('succeeded');
    expect(done.answer).toBe(ANSWER);
    const final = llmRequests(events).at(-1)!;
    expect(llmRequests(events).filter((e) => e.turn === final.turn)).toHaveLength(1);
    const asked = sim.requests.filter((r) => r.scenario === 'stream-malformed' && r.turn === 1);
    expect(asked.map((r) => r.faults?.[0]?.type)).toEqual(['stream_malformed', undefined]);
    expect(streamedText(deltas, final.turn)).toBe(ANSWER);
  }, 60_000);

  it('runs streamed tool calls with exactly the ids, names and arguments the model sent', async () => {
    const run = await client.createRun({ agent: 'test_agent', input: 'three calls', model: 'stream-tools' });
    const done = await client.waitForRun(run.run_id, { timeoutMs: 60_000 });
    expect(done.status).toBe('succeeded');
    expect(done.answer).toBe('Both cities checked, the order too.');
    const events: RunEvent[] = [];
    for await (const e of client.streamEvents(run.run_id)) events.push(e.data);
    const recorded = llmRequests(events).flatMap((e) => e.message.tool_calls ?? []);
    const sent = sim.requests
      .filter((r) => r.scenario === 'stream-tools' && r.turn !== null)
      .flatMap((r) => {
        const body = r.response as {
          choices: Array<{
            message: { tool_calls?: Array<{ id: string; function: { name: string; arguments: string } }> };
          }>;
        };
        return body.choices[0]!.message.tool_calls ?? [];
      });
    expect(recorded.map((c) => [c.id, c.name, c.arguments])).toEqual(
      sent.map((c) => [c.id, c.function.name, c.function.arguments]),
    );
    expect(recorded).toHaveLength(4);
    const results = events.filter((e) => e.type === 'tool_result');
    expect(results).toHaveLength(4);
  }, 60_000);
});

describe('a followed run in its order', () => {
  let h: ApiHarness;

  beforeAll(async () => {
    h = await startApiHarness({}, { LLM_STREAM: 'true' });
    addCommonScenarios(h.sim);
  }, 60_000);
  afterAll(async () => h?.close());

  const parkedRun = (input: string) =>
    startParkedRun(h, FULL_KEY, '/v1/runs', { agent: 'test_agent', input });

  it('sends stored events first and a turn’s live text after the events before the turn, when the replay starts after the text came', async () => {
    const parked = await parkedRun('in order');
    const g = gatedEventReads(h.control);
    const server = await h.extraServer({}, { control: g.control });
    try {
      const sse = await openEventStream(server.url, parked.runId);
      // The stream has subscribed to the live text and waits on its replay.
      await g.waiting;
      const approved = await h.call('POST', `/v1/runs/${parked.runId}/approvals`, {
        body: { tool_call_id: parked.toolCallId, decision: 'approve' },
      });
      expect(approved.status).toBe(200);
      // The whole run streams and is recorded while the follower cannot read a stored event.
      const done = await h.control.wait(parked.runId, 30_000);
      expect(done.status).toBe('succeeded');
      g.open();
      await sse.ended;
      const all = sseMessages(sse.stream.text).filter((m) => m.event !== undefined);
      const types = all.map((m) => m.event);
      const deltaAt = types.indexOf('answer_delta');
      expect(deltaAt).toBeGreaterThan(types.indexOf('approval_decided'));
      expect(types.lastIndexOf('answer_delta')).toBeLessThan(types.lastIndexOf('llm_request'));
      expect(types[0]).toBe('run_started');
      // Every stored event once, in the stream's order: no gap and no repeat where the replay met the text.
      const stored = all.filter((m) => m.id !== undefined).map((m) => m.id);
      expect(stored).toEqual((await h.control.events(parked.runId)).map((e) => e.id));
      const text = all
        .filter((m) => m.event === 'answer_delta')
        .map((m) => (JSON.parse(m.data!) as AnswerDeltaEvent).content ?? '');
      expect(text.join('')).toBe(done.answer);
    } finally {
      await server.close();
    }
  }, 60_000);

  it('prints a streamed turn’s text after the lines recorded before the turn and before the turn’s own line (run --follow)', async () => {
    const parked = await parkedRun('follow in order');
    const out: string[] = [];
    const answers = new AnswerPrinter((text) => out.push(text));
    const published: string[] = [];
    let answer = '';
    const sub = h.producer.duplicate({ enableOfflineQueue: true });
    try {
      sub.on('message', (_channel: string, text: string) => {
        published.push((JSON.parse(text) as AnswerDeltaEvent).content ?? '');
        answers.delta(text);
      });
      await sub.subscribe(h.keys.runDeltas(parked.runId));
      await h.call('POST', `/v1/runs/${parked.runId}/approvals`, {
        body: { tool_call_id: parked.toolCallId, decision: 'approve' },
      });
      answer = (await h.control.wait(parked.runId, 30_000)).answer ?? '';
      // The follower comes to the stored events after all of the text did.
      await waitFor(async () => published.join('') === answer, 10_000, 'the text to arrive');
      const last = await followCli(h.control, parked.runId, (line) => out.push(`${line}\n`), 20, answers);
      expect(last.type).toBe('run_finished');
    } finally {
      sub.disconnect();
    }
    const printed = out.join('');
    const streamedAt = printed.indexOf('answer (streaming): ');
    expect(streamedAt).toBeGreaterThan(printed.indexOf('approved needs_approval'));
    expect(streamedAt).toBeGreaterThan(printed.indexOf('model turn 1'));
    expect(streamedAt).toBeLessThan(printed.indexOf('model turn 2'));
    expect(answer).toMatch(/^after the decision: true/);
    expect(printed.slice(streamedAt).split('\n')[0]).toBe(`answer (streaming): ${answer}`);
  }, 60_000);
});
