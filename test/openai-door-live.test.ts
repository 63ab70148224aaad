import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import type { Scenario } from '@agent-reach/llm-sim';
import { FULL_KEY, openEventStream, sseMessages, startApiHarness, type ApiHarness } from './helpers/api.js';
import { gatedEventReads } from './helpers/gate.js';

/** An answer whose first try stalls after two chunks until the scheduler gives up on it and asks again. */
const STALLING: Scenario = {
  name: 'openai-door-live',
  turns: [
    {
      content: 'a streamed answer, long enough to leave the model in several chunks of text',
      fault: { type: 'stream_stall', after_chunks: 2, times: 1 },
    },
  ],
};

const RUN_ID_HEADER = 'x-agent-reach-run-id';

describe('the OpenAI door streams the answer live', () => {
  let h: ApiHarness;

  beforeAll(async () => {
    h = await startApiHarness({}, { OPENAI_MODEL: STALLING.name, LLM_TIMEOUT_MS: '2000' });
    h.sim.addScenario(STALLING);
  });
  afterAll(async () => h?.close());

  it("sends the model's text while the run is still running, and ends with the recorded answer", async () => {
    const openai = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: FULL_KEY, maxRetries: 0 });
    const { data: stream, response } = await openai.chat.completions
      .create({ model: 'test_agent', messages: [{ role: 'user', content: 'go' }], stream: true })
      .withResponse();
    const runId = response.headers.get(RUN_ID_HEADER)!;
    let content = '';
    let statusAtFirstText: string | undefined;
    for await (const chunk of stream) {
      const text = chunk.choices[0]?.delta.content ?? '';
      if (text !== '' && statusAtFirstText === undefined)
        statusAtFirstText = (await h.call('GET', `/v1/runs/${runId}`)).json.status;
      content += text;
    }
    const run = (await h.call('GET', `/v1/runs/${runId}`)).json;
    expect(run.status).toBe('succeeded');
    // The first try's text arrived while its stream stalled: the run had not ended (its first
    // checkpoint comes after its first model turn, so it may still read as queued).
    expect(['queued', 'running']).toContain(statusAtFirstText);
    // The broken try's text was sent already; the second try's text is the recorded answer.
    expect(content.endsWith(run.answer)).toBe(true);
    expect(content.length).toBeGreaterThan(run.answer.length);
  });

  it('sends the live text after the comments of the events stored before it, when its reads of stored events start late', async () => {
    const g = gatedEventReads(h.control);
    const server = await h.extraServer({}, { control: g.control });
    try {
      const res = await fetch(`${server.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${FULL_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'test_agent',
          messages: [{ role: 'user', content: 'go' }],
          stream: true,
        }),
      });
      expect(res.status).toBe(200);
      const runId = res.headers.get(RUN_ID_HEADER)!;
      let text = '';
      const read = (async () => {
        const decoder = new TextDecoder();
        for await (const chunk of res.body!) text += decoder.decode(chunk as Uint8Array, { stream: true });
      })();
      await g.waiting;
      // The run streams its text and is recorded while the door cannot read a stored event.
      const done = await h.control.wait(runId, 30_000);
      expect(done.status).toBe('succeeded');
      g.open();
      await read;
      const firstText = text.indexOf('"content":"a streamed');
      expect(firstText).toBeGreaterThan(text.indexOf(': run_started'));
      expect(firstText).toBeLessThan(text.indexOf(': llm_request'));
      expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
      // The recorded answer is not sent twice: the text of the answering try carried it.
      const content = text
        .split('\n\n')
        .filter((b) => b.startsWith('data: {'))
        .map((b) => JSON.parse(b.slice(6)) as { choices: Array<{ delta: { content?: string } }> })
        .map((c) => c.choices[0]?.delta.content ?? '')
        .join('');
      expect(content.endsWith(done.answer!)).toBe(true);
      expect(content.slice(0, -done.answer!.length).endsWith(done.answer!)).toBe(false);
    } finally {
      await server.close();
    }
  });
});

describe("a run's event stream, followed from its acceptance", () => {
  /** A first turn whose stream stalls after two chunks: the run is mid-turn, its text already live. */
  const FIRST_TURN: Scenario = {
    name: 'first-turn-order',
    turns: [
      {
        content: 'the first turn streams this text before the turn is recorded',
        fault: { type: 'stream_stall', after_chunks: 2, times: 1 },
      },
    ],
  };
  let h: ApiHarness;

  beforeAll(async () => {
    h = await startApiHarness({}, { OPENAI_MODEL: FIRST_TURN.name, LLM_TIMEOUT_MS: '2000' });
    h.sim.addScenario(FIRST_TURN);
  });
  afterAll(async () => h?.close());

  it('sends run_started before any text of the first turn, since a run is stored as started before its first model request', async () => {
    const created = await h.call('POST', '/v1/runs', { body: { agent: 'test_agent', input: 'go' } });
    expect(created.status).toBe(201);
    const runId = created.json.run_id as string;
    const sse = await openEventStream(h.url, runId);
    try {
      await sse.ended;
      const types = sseMessages(sse.stream.text)
        .filter((m) => m.event !== undefined)
        .map((m) => m.event);
      expect(types).toContain('answer_delta');
      expect(types.indexOf('run_started')).toBeGreaterThanOrEqual(0);
      expect(types.indexOf('run_started')).toBeLessThan(types.indexOf('answer_delta'));
      expect(types.at(-1)).toBe('run_finished');
    } finally {
      sse.close();
    }
  }, 60_000);
});
