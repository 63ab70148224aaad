import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import type { Scenario } from '@agent-reach/llm-sim';
import { FULL_KEY, LIMITED_KEY, startApiHarness, type ApiHarness } from './helpers/api.js';
import { waitFor } from './helpers/redis.js';

/** What every run of this file's agents plays: it sleeps as many ms as the input says, then says so at length. */
const SLEEPER: Scenario = {
  name: 'openai-door-sleeper',
  turns: [
    { tool_calls: [{ name: 'slow', arguments: '{"ms": {{ user }}}' }] },
    {
      content:
        'slept {{ last.content.slept_ms }} ms, and says so in a sentence long enough to be streamed in more than one piece.',
    },
  ],
};

const RUN_ID_HEADER = 'x-agent-reach-run-id';

describe('agents as OpenAI models at /v1/chat/completions and /v1/responses', () => {
  let h: ApiHarness;

  beforeAll(async () => {
    h = await startApiHarness({}, { OPENAI_MODEL: SLEEPER.name });
    h.sim.addScenario(SLEEPER);
  });
  afterAll(async () => h?.close());

  /** The official OpenAI client, pointed at the door with `key`, without retries. */
  const openai = (key = FULL_KEY) => new OpenAI({ baseURL: `${h.url}/v1`, apiKey: key, maxRetries: 0 });
  const runOf = async (runId: string) => (await h.call('GET', `/v1/runs/${runId}`)).json;
  const rejection = (promise: Promise<unknown>) =>
    promise.then(
      () => undefined,
      (err: unknown) => err as InstanceType<typeof OpenAI.APIError>,
    );

  it("answers a chat completion with the run's answer and usage, and names the run, recorded with door openai, in a header", async () => {
    const { data, response } = await openai()
      .chat.completions.create({
        model: 'test_agent',
        messages: [
          { role: 'system', content: 'You are terse.' },
          { role: 'user', content: '20' },
        ],
        temperature: 0.2,
        max_tokens: 500,
        metadata: { case: 'plain' },
      })
      .withResponse();
    const runId = response.headers.get(RUN_ID_HEADER)!;
    expect(runId).toMatch(/^run_/);
    const run = await runOf(runId);
    expect(run).toMatchObject({ status: 'succeeded', agent: 'test_agent', input: '20' });
    expect(run.metadata).toEqual({ case: 'plain', door: 'openai' });
    expect(data.object).toBe('chat.completion');
    expect(data.model).toBe('test_agent');
    expect(data.id).toBe(`chatcmpl-${runId}`);
    expect(data.choices).toHaveLength(1);
    expect(data.choices[0]!.message.content).toBe(run.answer);
    expect(run.answer).toMatch(/^slept 20 ms, and says so/);
    expect(data.choices[0]!.finish_reason).toBe('stop');
    expect(data.usage).toEqual(run.usage);
    expect(data.usage!.total_tokens).toBeGreaterThan(0);
  });

  it('streams the answer as chat.completion.chunk deltas that add up to it, then a usage chunk, then [DONE]', async () => {
    const { data: stream, response } = await openai()
      .chat.completions.create({
        model: 'test_agent',
        messages: [{ role: 'user', content: '10' }],
        stream: true,
        stream_options: { include_usage: true },
      })
      .withResponse();
    const runId = response.headers.get(RUN_ID_HEADER)!;
    const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    const run = await runOf(runId);
    expect(run.status).toBe('succeeded');
    const content = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
    expect(content).toBe(run.answer);
    expect(chunks.filter((c) => c.choices[0]?.delta.content).length).toBeGreaterThan(1);
    for (const c of chunks) expect(c).toMatchObject({ object: 'chat.completion.chunk', model: 'test_agent' });
    expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe('stop');
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.usage).toEqual(run.usage);
  });

  it('ends the event stream with data: [DONE] on the wire', async () => {
    const res = await fetch(`${h.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${FULL_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'test_agent', messages: [{ role: 'user', content: '5' }], stream: true }),
    });
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const text = await res.text();
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
    expect(text.match(/\[DONE\]/g)).toHaveLength(1);
    expect(text).not.toContain('"usage"');
  });

  it("refuses a key limited to some agents another agent's model with the 404 model_not_found of an unknown model", async () => {
    const ask = (model: string) =>
      rejection(
        openai(LIMITED_KEY).chat.completions.create({ model, messages: [{ role: 'user', content: '1' }] }),
      );
    const forbidden = await ask('test_agent');
    const unknown = await ask('no_such_agent');
    for (const err of [forbidden, unknown]) {
      expect(err).toBeInstanceOf(OpenAI.NotFoundError);
      expect(err!.code).toBe('model_not_found');
      expect(err!.param).toBe('model');
      expect(err!.type).toBe('invalid_request_error');
    }
    expect(forbidden!.message).toBe(unknown!.message.replace('no_such_agent', 'test_agent'));
  });

  it('refuses each unsupported field with a 400 that names it, and earlier turns without a session', async () => {
    const user = { role: 'user' as const, content: '1' };
    const cases: Array<[string, Record<string, unknown>]> = [
      ['tools', { tools: [{ type: 'function', function: { name: 'f', parameters: {} } }] }],
      ['tool_choice', { tool_choice: 'auto' }],
      ['n', { n: 2 }],
      ['logprobs', { logprobs: true }],
      ['audio', { audio: { voice: 'alloy', format: 'mp3' } }],
      ['response_format', { response_format: { type: 'json_object' } }],
      [
        'response_format.json_schema.schema',
        { response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'objekt' } } } },
      ],
      ['colour', { colour: 'red' }],
      ['messages[0]', { messages: [user, { role: 'assistant', content: 'hi' }, user] }],
      [
        'messages[1].role',
        { messages: [user, { role: 'assistant', content: 'hi' }], metadata: { session_id: 's' } },
      ],
      [
        'messages[0].content[0].type',
        { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }] },
      ],
      ['metadata.door', { metadata: { door: 'mine' } }],
    ];
    for (const [param, extra] of cases) {
      const body = { model: 'test_agent', messages: [user], ...extra } as never;
      const err = await rejection(openai().chat.completions.create(body));
      expect(err, param).toBeInstanceOf(OpenAI.BadRequestError);
      expect(err!.param, JSON.stringify(extra)).toBe(param);
      expect(err!.type).toBe('invalid_request_error');
      expect(err!.message).toContain(param.split('[')[0]!);
    }
  });

  it('answers a run that ended without an answer with a 502 naming the run and its reason, whole or streamed', async () => {
    const pending = rejection(
      openai().chat.completions.create({
        model: 'test_agent',
        messages: [{ role: 'user', content: '1500' }],
        metadata: { case: 'cancelled-whole' },
      }),
    );
    const runId = await waitFor(
      async () =>
        (await h.call('GET', '/v1/runs?metadata=case=cancelled-whole')).json?.runs?.[0]?.run_id as string,
      15_000,
      'the run of the request',
    );
    expect((await h.call('POST', `/v1/runs/${runId}/cancel`)).status).toBe(202);
    const err = await pending;
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(err!.status).toBe(502);
    expect(err!.code).toBe('run_cancelled');
    expect(err!.message).toContain(`run ${runId} cancelled (cancelled)`);

    const { data: stream, response } = await openai()
      .chat.completions.create({
        model: 'test_agent',
        messages: [{ role: 'user', content: '1500' }],
        stream: true,
      })
      .withResponse();
    const streamed = response.headers.get(RUN_ID_HEADER)!;
    expect((await h.call('POST', `/v1/runs/${streamed}/cancel`)).status).toBe(202);
    const chunks: string[] = [];
    const failure = await (async () => {
      for await (const chunk of stream) chunks.push(chunk.choices[0]?.delta.content ?? '');
    })().then(
      () => undefined,
      (e: unknown) => e as InstanceType<typeof OpenAI.APIError>,
    );
    expect(chunks.join('')).toBe('');
    expect(failure).toBeInstanceOf(OpenAI.APIError);
    expect(failure!.message).toContain(`run ${streamed} cancelled (cancelled)`);
  });

  it('keeps the run going and records it when the client aborts mid-stream', async () => {
    const abort = new AbortController();
    const { data: stream, response } = await openai()
      .chat.completions.create(
        { model: 'test_agent', messages: [{ role: 'user', content: '1500' }], stream: true },
        { signal: abort.signal },
      )
      .withResponse();
    const runId = response.headers.get(RUN_ID_HEADER)!;
    const seen: string[] = [];
    // The client ends its iteration quietly on an abort.
    for await (const chunk of stream) {
      seen.push(chunk.choices[0]?.delta.role ?? '');
      abort.abort();
    }
    expect(seen).toEqual(['assistant']);
    expect((await runOf(runId)).status).not.toBe('succeeded');
    await h.control.wait(runId, 30_000, 100);
    const run = await runOf(runId);
    expect(run.status).toBe('succeeded');
    expect(run.answer).toMatch(/^slept 1500 ms/);
    expect(run.metadata).toEqual({ door: 'openai' });
  });

  it("answers a response whose output_text is the run's answer, from an input string or a list of messages", async () => {
    const { data, response } = await openai()
      .responses.create({ model: 'test_agent', input: '15', instructions: 'Be brief.' })
      .withResponse();
    const runId = response.headers.get(RUN_ID_HEADER)!;
    const run = await runOf(runId);
    expect(run.metadata).toEqual({ door: 'openai' });
    expect(data).toMatchObject({
      object: 'response',
      status: 'completed',
      model: 'test_agent',
      id: `resp_${runId}`,
    });
    expect(data.output_text).toBe(run.answer);
    expect(run.answer).toMatch(/^slept 15 ms/);
    expect(data.usage!.total_tokens).toBe(run.usage.total_tokens);
    const listed = await openai().responses.create({
      model: 'test_agent',
      input: [
        { role: 'developer', content: 'Be brief.' },
        { role: 'user', content: [{ type: 'input_text', text: '7' }] },
      ],
    });
    expect(listed.output_text).toMatch(/^slept 7 ms/);
  });

  it('streams a response as output_text deltas that add up to the answer, ending with response.completed', async () => {
    const { data: stream, response } = await openai()
      .responses.create({ model: 'test_agent', input: '10', stream: true })
      .withResponse();
    const runId = response.headers.get(RUN_ID_HEADER)!;
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const event of stream) events.push(event);
    const run = await runOf(runId);
    const deltas = events.flatMap((e) => (e.type === 'response.output_text.delta' ? [e.delta] : []));
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join('')).toBe(run.answer);
    expect(events[0]!.type).toBe('response.created');
    const last = events.at(-1)!;
    expect(last.type).toBe('response.completed');
    if (last.type === 'response.completed') expect(last.response.output_text).toBe(run.answer);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
  });

  it("refuses each Responses API field the door does not take with a 400 naming it, and another agent's model with model_not_found", async () => {
    const cases: Array<[string, Record<string, unknown>]> = [
      ['tools', { tools: [{ type: 'web_search' }] }],
      ['previous_response_id', { previous_response_id: 'resp_x' }],
      ['text.format', { text: { format: { type: 'json_object' } } }],
      [
        'input[0]',
        {
          input: [
            { role: 'assistant', content: 'hi' },
            { role: 'user', content: '1' },
          ],
        },
      ],
      ['input[0].type', { input: [{ type: 'function_call_output', call_id: 'c', output: 'x' }] }],
    ];
    for (const [param, extra] of cases) {
      const body = { model: 'test_agent', input: '1', ...extra } as never;
      const err = await rejection(openai().responses.create(body));
      expect(err, param).toBeInstanceOf(OpenAI.BadRequestError);
      expect(err!.param, param).toBe(param);
    }
    const forbidden = await rejection(
      openai(LIMITED_KEY).responses.create({ model: 'test_agent', input: '1' }),
    );
    expect(forbidden).toBeInstanceOf(OpenAI.NotFoundError);
    expect(forbidden!.code).toBe('model_not_found');
  });

  it('lists the agents a key may use as models through openai.models.list(), and retrieves each, as OpenAI does', async () => {
    const listed = [];
    for await (const model of openai().models.list()) listed.push(model);
    expect(listed.map((m) => m.id)).toEqual(['test_agent', 'weather_only']);
    for (const m of listed) {
      expect(m).toMatchObject({ object: 'model', owned_by: 'agent-reach' });
      expect(Number.isInteger(m.created) && m.created > 1_600_000_000).toBe(true);
    }
    const limited = [];
    for await (const model of openai(LIMITED_KEY).models.list()) limited.push(model.id);
    expect(limited).toEqual(['weather_only']);
    expect(await openai().models.retrieve('test_agent')).toMatchObject({ id: 'test_agent', object: 'model' });
    // A listed model is one the door runs.
    const done = await openai().chat.completions.create({
      model: listed[0]!.id,
      messages: [{ role: 'user', content: '1' }],
    });
    expect(done.choices[0]!.message.content).toMatch(/^slept 1 ms/);
    for (const [key, id] of [
      [LIMITED_KEY, 'test_agent'],
      [FULL_KEY, 'no_such_agent'],
    ] as const) {
      const missing = await rejection(openai(key).models.retrieve(id));
      expect(missing).toBeInstanceOf(OpenAI.NotFoundError);
      expect(missing!.code).toBe('model_not_found');
    }
  });
});
