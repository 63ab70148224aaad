import type { ChatCompletion, ChatCompletionChunk } from 'openai/resources/chat/completions';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startLlmSim, type LlmSim, type Scenario } from '../src/index.js';
import { client, waitFor } from './helpers.js';

const calls = [
  { name: 'query_weather', arguments: { city: '上海', days: 2 } },
  { name: 'write_markdown_file', arguments: { path: 'plan.md', content: '# 周末\n晴，适合出行。' } },
];
const answer = '上海周末晴朗，建议周六去外滩，周日去豫园。Have fun!';
const scenarios: Scenario[] = [
  { name: 'calls', turns: [{ tool_calls: calls }] },
  { name: 'answer', turns: [{ content: answer, reasoning: 'The user wants a plan; the weather is fine.' }] },
  { name: 'cut', turns: [{ content: answer, fault: { type: 'stream_cut', after_chunks: 3 } }] },
  { name: 'malformed', turns: [{ content: answer, fault: { type: 'stream_malformed', after_chunks: 2 } }] },
  { name: 'stall', turns: [{ content: answer, fault: { type: 'stream_stall', after_chunks: 2 } }] },
];

let sim: LlmSim;
beforeAll(async () => {
  sim = await startLlmSim({ scenarios });
});
afterAll(async () => {
  await sim.close();
});
beforeEach(() => sim.clearRequests());

const ask = (model: string, content = 'plan my weekend') => ({
  model,
  messages: [{ role: 'user' as const, content }],
  tools: [
    { type: 'function' as const, function: { name: 'query_weather', parameters: { type: 'object' } } },
    { type: 'function' as const, function: { name: 'write_markdown_file', parameters: { type: 'object' } } },
  ],
});

interface Assembled {
  chunks: ChatCompletionChunk[];
  content: string | null;
  reasoning: string | null;
  toolCalls: Array<{ id: string; type: string; function: { name: string; arguments: string } }>;
  finishReason: string | null;
}

/** Assembles streamed chunks into the message the non-streamed answer carries. */
async function assemble(stream: AsyncIterable<ChatCompletionChunk>): Promise<Assembled> {
  const out: Assembled = { chunks: [], content: null, reasoning: null, toolCalls: [], finishReason: null };
  for await (const chunk of stream) {
    out.chunks.push(chunk);
    const choice = chunk.choices[0];
    if (choice === undefined) continue;
    const delta = choice.delta as ChatCompletionChunk.Choice.Delta & { reasoning_content?: string };
    if (typeof delta.content === 'string' && delta.content !== '')
      out.content = (out.content ?? '') + delta.content;
    if (delta.reasoning_content !== undefined)
      out.reasoning = (out.reasoning ?? '') + delta.reasoning_content;
    for (const d of delta.tool_calls ?? []) {
      const call = (out.toolCalls[d.index] ??= { id: '', type: '', function: { name: '', arguments: '' } });
      if (d.id !== undefined) call.id = d.id;
      if (d.type !== undefined) call.type = d.type;
      if (d.function?.name !== undefined) call.function.name = d.function.name;
      call.function.arguments += d.function?.arguments ?? '';
    }
    if (choice.finish_reason !== null) out.finishReason = choice.finish_reason;
  }
  return out;
}

describe('streamed answers', () => {
  it('streams tool calls that assemble into the same calls the non-streamed answer has', async () => {
    const plain = await client(sim).chat.completions.create(ask('calls'));
    const streamed = await assemble(
      await client(sim).chat.completions.create({ ...ask('calls'), stream: true }),
    );
    expect(streamed.toolCalls).toEqual(plain.choices[0]!.message.tool_calls);
    expect(streamed.finishReason).toBe('tool_calls');
    const heads = streamed.chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []).filter((d) => d.id);
    expect(heads.map((d) => [d.index, d.type, d.function?.name])).toEqual([
      [0, 'function', 'query_weather'],
      [1, 'function', 'write_markdown_file'],
    ]);
    const argPieces = streamed.chunks
      .flatMap((c) => c.choices[0]?.delta.tool_calls ?? [])
      .filter((d) => !d.id);
    expect(argPieces.length).toBeGreaterThan(4);
  });

  it('streams content in several chunks after a first chunk with the assistant role', async () => {
    const plain = (await client(sim).chat.completions.create(ask('answer'))) as ChatCompletion;
    const streamed = await assemble(
      await client(sim).chat.completions.create({ ...ask('answer'), stream: true }),
    );
    expect(streamed.chunks[0]!.choices[0]!.delta.role).toBe('assistant');
    expect(streamed.chunks.every((c) => c.object === 'chat.completion.chunk')).toBe(true);
    expect(new Set(streamed.chunks.map((c) => c.id)).size).toBe(1);
    expect(streamed.chunks.filter((c) => c.choices[0]?.delta.content).length).toBeGreaterThan(3);
    expect(streamed.content).toBe(plain.choices[0]!.message.content);
    expect(streamed.content).toBe(answer);
    expect(streamed.reasoning).toBe('The user wants a plan; the weather is fine.');
    expect(streamed.finishReason).toBe('stop');
    expect(streamed.chunks.at(-1)!.usage).toBeUndefined();
  });

  it('sends the usage in a last chunk without choices when stream_options.include_usage is set', async () => {
    const streamed = await assemble(
      await client(sim).chat.completions.create({
        ...ask('answer'),
        stream: true,
        stream_options: { include_usage: true },
      }),
    );
    const last = streamed.chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.usage?.total_tokens).toBeGreaterThan(0);
    expect(last.usage?.total_tokens).toBe(last.usage!.prompt_tokens + last.usage!.completion_tokens);
    expect(streamed.chunks.slice(0, -1).every((c) => c.usage === null)).toBe(true);
    expect(streamed.content).toBe(answer);
  });

  it('ends the event stream with data: [DONE]', async () => {
    const res = await fetch(`${sim.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...ask('answer'), stream: true }),
    });
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const text = await res.text();
    expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
    expect(text.split('\n\n').filter((e) => e.startsWith('data: {')).length).toBeGreaterThan(5);
  });

  it('refuses stream_options without stream: true, as the API does', async () => {
    const err = await client(sim)
      .chat.completions.create({ ...ask('answer'), stream_options: { include_usage: true } })
      .catch((e: unknown) => e as { status: number; param: string });
    expect(err).toMatchObject({ status: 400, param: 'stream_options' });
  });
});

describe('mid-stream faults', () => {
  it('cuts the connection after the scripted number of chunks, then streams the retry whole', async () => {
    const seen: ChatCompletionChunk[] = [];
    const err = await (async () => {
      for await (const chunk of await client(sim).chat.completions.create({ ...ask('cut'), stream: true }))
        seen.push(chunk);
    })().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(seen).toHaveLength(3);
    expect(sim.requests[0]!.faults).toEqual([{ type: 'stream_cut', source: 'script' }]);
    const again = await assemble(await client(sim).chat.completions.create({ ...ask('cut'), stream: true }));
    expect(again.content).toBe(answer);
  });

  it('sends a chunk that is not JSON, which the SDK reports as an error', async () => {
    const seen: ChatCompletionChunk[] = [];
    const err = await (async () => {
      for await (const chunk of await client(sim).chat.completions.create({
        ...ask('malformed'),
        stream: true,
      }))
        seen.push(chunk);
    })().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SyntaxError);
    expect(seen).toHaveLength(2);
    expect(sim.requests[0]!.faults).toEqual([{ type: 'stream_malformed', source: 'script' }]);
  });

  it('stalls mid-stream until the client gives up', async () => {
    const seen: ChatCompletionChunk[] = [];
    const stream = await client(sim).chat.completions.create({ ...ask('stall'), stream: true });
    for await (const chunk of stream) {
      seen.push(chunk);
      // The client's own deadline: it gives up once the stream has stopped moving.
      if (seen.length === 2) setTimeout(() => stream.controller.abort(), 200).unref();
    }
    expect(stream.controller.signal.aborted).toBe(true);
    expect(seen).toHaveLength(2);
    expect(seen.some((c) => c.choices[0]?.finish_reason)).toBe(false);
    await waitFor(() => sim.inFlight === 0, 'the stalled stream to be released');
  });

  it('ignores stream faults on non-streamed requests', async () => {
    const res = await client(sim).chat.completions.create(ask('cut', 'not streamed'));
    expect(res.choices[0]!.message.content).toBe(answer);
    expect(sim.requests[0]!.faults).toBeUndefined();
  });
});
