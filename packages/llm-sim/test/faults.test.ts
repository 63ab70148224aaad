import { APIConnectionError, APIConnectionTimeoutError, InternalServerError, RateLimitError } from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startLlmSim, type LlmSim, type Scenario } from '../src/index.js';
import { client, functionCalls, postRaw, waitFor } from './helpers.js';

const weatherCall = { name: 'query_weather', arguments: { city: '上海' } };
const scenarios: Scenario[] = [
  { name: 'limited', turns: [{ content: 'ok', fault: { type: 'rate_limit', retry_after_s: 2 } }] },
  { name: 'limited-fast', turns: [{ content: 'ok', fault: { type: 'rate_limit', retry_after_s: 0.01 } }] },
  { name: 'broken', turns: [{ content: 'ok', fault: { type: 'server_error' } }] },
  { name: 'bad-gateway', turns: [{ content: 'ok', fault: { type: 'server_error', status: 502, times: 2 } }] },
  { name: 'reset', turns: [{ content: 'ok', fault: { type: 'connection_reset' } }] },
  { name: 'hang', turns: [{ content: 'ok', fault: { type: 'hang' } }] },
  { name: 'slow', turns: [{ content: 'ok', fault: { type: 'latency', ms: 20 } }] },
  { name: 'malformed', turns: [{ tool_calls: [weatherCall], fault: { type: 'malformed_arguments' } }] },
  { name: 'oversized', turns: [{ content: 'hi', fault: { type: 'oversized_content', chars: 200_000 } }] },
  {
    name: 'sequence',
    fault: { type: 'rate_limit', retry_after_s: 0 },
    turns: [{ content: 'ok', fault: [{ type: 'server_error' }, { type: 'malformed_arguments' }] }],
  },
  {
    name: 'noisy',
    noise: { seed: 1, hallucinated_tool: 1, malformed_arguments: 1 },
    turns: [{ tool_calls: [weatherCall] }],
  },
];

let sim: LlmSim;
beforeAll(async () => {
  sim = await startLlmSim({ scenarios });
});
afterAll(async () => {
  await sim.close();
});
beforeEach(() => sim.clearRequests());

const ask = (content: string) => ({ messages: [{ role: 'user' as const, content }] });

describe('scripted faults', () => {
  it('answers a rate_limit fault with 429, retry-after and the API rate-limit error body', async () => {
    const err = await client(sim)
      .chat.completions.create({ model: 'limited', ...ask('429 please') })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RateLimitError);
    const e = err as RateLimitError;
    expect(e.status).toBe(429);
    expect(e.headers.get('retry-after')).toBe('2');
    expect(e.code).toBe('rate_limit_exceeded');
    expect(e.type).toBe('requests');
    expect(sim.requests[0]!.faults).toEqual([{ type: 'rate_limit', source: 'script' }]);
  });

  it('lets the retry succeed after the first rate-limited request (times defaults to 1)', async () => {
    const res = await client(sim, { maxRetries: 1 }).chat.completions.create({
      model: 'limited-fast',
      ...ask('retry'),
    });
    expect(res.choices[0]!.message.content).toBe('ok');
    expect(sim.requests.map((r) => r.status)).toEqual([429, 200]);
    expect(sim.requests.map((r) => r.headers['x-stainless-retry-count'])).toEqual(['0', '1']);
  });

  it('answers a server_error fault with 500 server_error, then answers normally', async () => {
    const err = await client(sim)
      .chat.completions.create({ model: 'broken', ...ask('500 please') })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InternalServerError);
    expect((err as InternalServerError).status).toBe(500);
    expect((err as InternalServerError).type).toBe('server_error');
    const again = await client(sim).chat.completions.create({ model: 'broken', ...ask('500 please') });
    expect(again.choices[0]!.message.content).toBe('ok');
  });

  it('fails exactly the first `times` requests of a turn with the scripted status', async () => {
    const body = { model: 'bad-gateway', ...ask('twice') };
    const statuses = [];
    for (let i = 0; i < 3; i += 1) statuses.push((await postRaw(sim, body)).status);
    expect(statuses).toEqual([502, 502, 200]);
  });

  it('plays transport faults in order, scenario faults first: 429, then 500, then the answer', async () => {
    const body = { model: 'sequence', ...ask('in order') };
    const results = [];
    for (let i = 0; i < 3; i += 1) results.push(await postRaw(sim, body));
    expect(results.map((r) => r.status)).toEqual([429, 500, 200]);
    expect(results[0]!.error!.code).toBe('rate_limit_exceeded');
    expect(results[1]!.error!.type).toBe('server_error');
  });

  it('surfaces a connection_reset fault as APIConnectionError and lets a retry through', async () => {
    const err = await client(sim)
      .chat.completions.create({ model: 'reset', ...ask('reset') })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(APIConnectionError);
    expect(sim.requests[0]).toMatchObject({
      status: null,
      response: null,
      faults: [{ type: 'connection_reset' }],
    });
    const res = await client(sim, { maxRetries: 1 }).chat.completions.create({
      model: 'reset',
      ...ask('reset 2'),
    });
    expect(res.choices[0]!.message.content).toBe('ok');
  });

  it('never answers a hang fault, which the SDK reports as a timeout', async () => {
    const err = await client(sim, { timeout: 500 })
      .chat.completions.create({ model: 'hang', ...ask('hang') })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(APIConnectionTimeoutError);
    expect(sim.requests[0]).toMatchObject({ status: null, faults: [{ type: 'hang', source: 'script' }] });
    const retried = await client(sim, { timeout: 500 }).chat.completions.create({
      model: 'hang',
      ...ask('hang'),
    });
    expect(retried.choices[0]!.message.content).toBe('ok');
  });

  it('delays a latency fault and still answers', async () => {
    const res = await client(sim).chat.completions.create({ model: 'slow', ...ask('slow') });
    expect(res.choices[0]!.message.content).toBe('ok');
    expect(sim.requests[0]!.faults).toEqual([{ type: 'latency', source: 'script' }]);
  });

  it('sends truncated, unparseable JSON arguments for a malformed_arguments fault', async () => {
    const res = await client(sim).chat.completions.create({ model: 'malformed', ...ask('malformed') });
    const args = functionCalls(res)[0]!.arguments;
    expect(() => JSON.parse(args)).toThrow(SyntaxError);
    expect('{"city":"上海"}'.startsWith(args)).toBe(true);
    expect(args.length).toBeGreaterThan(1);
  });

  it('pads content to the size an oversized_content fault asks for', async () => {
    const res = await client(sim).chat.completions.create({ model: 'oversized', ...ask('big') });
    const content = res.choices[0]!.message.content!;
    expect(content).toHaveLength(200_000);
    expect(content.startsWith('hi\n')).toBe(true);
  });
});

describe('noise', () => {
  it('replaces tool names by near misses and corrupts arguments when drawn, recording the noise', async () => {
    const res = await client(sim).chat.completions.create({ model: 'noisy', ...ask('noise') });
    const call = functionCalls(res)[0]!;
    expect(call.name).toBe('query_weathr');
    expect(() => JSON.parse(call.arguments)).toThrow(SyntaxError);
    expect(sim.requests[0]!.faults).toEqual([
      { type: 'malformed_arguments', source: 'noise' },
      { type: 'hallucinated_tool', source: 'noise' },
    ]);
  });

  it('draws the same faults for the same seed and conversations in another simulator', async () => {
    const noisy: Scenario = {
      name: 'flaky',
      noise: { seed: 7, server_error: 0.5 },
      turns: [{ content: 'ok' }],
    };
    const statuses = async (target: LlmSim) => {
      const out = [];
      for (let i = 0; i < 8; i += 1)
        out.push((await postRaw(target, { model: 'flaky', ...ask(`c${i}`) })).status);
      return out;
    };
    const other = await startLlmSim({ scenarios: [noisy] });
    try {
      sim.addScenario(noisy);
      const mine = await statuses(sim);
      expect(await statuses(other)).toEqual(mine);
      expect(mine).toContain(500);
      expect(mine).toContain(200);
    } finally {
      await other.close();
    }
  });
});

describe('close()', () => {
  it('returns while a hung request is open, and that request fails with a connection error', async () => {
    const own = await startLlmSim({ scenarios });
    const pending = client(own)
      .chat.completions.create({ model: 'hang', ...ask('hang on close') })
      .catch((e: unknown) => e);
    await waitFor(() => own.requests.length === 1, 'the hung request to be recorded');
    expect(own.inFlight).toBe(1);
    await own.close();
    expect(await pending).toBeInstanceOf(APIConnectionError);
  });

  it('cuts a long simulated latency short instead of waiting for it', async () => {
    const own = await startLlmSim({
      scenarios: [{ name: 'glacial', latency_ms: 600_000, turns: [{ content: 'late' }] }],
    });
    const pending = client(own)
      .chat.completions.create({ model: 'glacial', ...ask('wait') })
      .catch((e: unknown) => e);
    await waitFor(() => own.inFlight === 1, 'the request to arrive');
    await own.close();
    expect(await pending).toBeInstanceOf(APIConnectionError);
  });
});
