import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform } from './helpers/platform.js';

describe('tool-call path: every error kind reaches the caller as structured data', () => {
  let p: Awaited<ReturnType<typeof startPlatform>>;
  beforeAll(async () => {
    p = await startPlatform({ BREAKER_FAILURE_THRESHOLD: '100' });
  });
  afterAll(async () => p.close());

  it('runs a valid call and returns ok content with one attempt', async () => {
    const r = await p.call('query_weather', { city: '上海' });
    expect(r).toMatchObject({ ok: true, status: 'ok', name: 'query_weather', attempts: 1 });
    expect((r.content as { city: string }).city).toBe('上海');
  });

  it('answers unknown_tool with the closest reachable name and the reachable list', async () => {
    const r = await p.call('get_weather', { city: '上海' });
    expect(r.ok).toBe(false);
    expect(r.error).toMatchObject({ kind: 'unknown_tool', did_you_mean: 'query_weather', retryable: false });
    expect(r.error?.available_tools).toContain('query_order_status');
    expect(r.attempts).toBe(0);
  });

  it('answers invalid_arguments naming the field, constraint, expected format and an example', async () => {
    const r = await p.call('query_order_status', { order_id: '12345' });
    expect(r.error).toMatchObject({
      kind: 'invalid_arguments',
      field: '/order_id',
      constraint: 'pattern',
      expected: 'a string matching ^ORD-\\d{6}$',
      example: 'ORD-123456',
      retryable: false,
    });
  });

  it('answers invalid_arguments for a wrongly typed value instead of coercing it', async () => {
    const r = await p.call('query_order_status', { order_id: 123456 });
    expect(r.error).toMatchObject({
      kind: 'invalid_arguments',
      field: '/order_id',
      constraint: 'type',
      expected: 'string',
    });
  });

  it('answers invalid_arguments naming a missing required field', async () => {
    const r = await p.call('query_weather', {});
    expect(r.error).toMatchObject({ kind: 'invalid_arguments', field: '/city', constraint: 'required' });
    expect(r.error?.example).toBe('北京');
  });

  it('answers invalid_arguments for argument text that is not JSON', async () => {
    const r = await p.call('query_weather', '{"city": "上');
    expect(r.error).toMatchObject({ kind: 'invalid_arguments', constraint: 'json' });
    expect(r.error?.message).toMatch(/not valid JSON/);
  });

  it('refuses a forged job for a tool outside the agent scope as forbidden', async () => {
    const r = await p.call('query_order_status', { order_id: 'ORD-123456' }, 'weather_only');
    expect(r.error).toMatchObject({ kind: 'forbidden', available_tools: ['query_weather'] });
  });

  it('refuses every tool for an agent that is not declared', async () => {
    const r = await p.call('query_weather', { city: '北京' }, 'nobody');
    expect(r.error?.kind).toBe('forbidden');
  });

  it('does not run a tool that requires confirmation without an approval', async () => {
    const r = await p.call('needs_approval', {});
    expect(r.error).toMatchObject({ kind: 'awaiting_confirmation', retryable: false });
  });

  it('returns no_result as a successful result with a hint and no retry', async () => {
    const r = await p.call('query_order_status', { order_id: 'ORD-123000' });
    expect(r).toMatchObject({ ok: true, no_result: true, attempts: 1 });
    expect((r.content as { hint: string }).hint).toMatch(/no order ORD-123000/);
  });

  it('returns execution_error with the error type and message, without retrying', async () => {
    const r = await p.call('throws_plain', {});
    expect(r.error).toMatchObject({
      kind: 'execution_error',
      type: 'RangeError',
      message: 'the ledger is closed',
      retryable: false,
    });
    expect(r.attempts).toBe(1);
  });

  it('returns transient after the last retry of an upstream that keeps failing', async () => {
    const r = await p.call('always_failing', {});
    expect(r.error).toMatchObject({ kind: 'transient', retryable: true });
  });

  it('keeps __proto__ payloads away from the handler and Object.prototype untouched', async () => {
    const payloads = [
      '{"value":"x","__proto__":{"polluted":"yes"}}',
      '{"value":"x","constructor":{"prototype":{"polluted":"yes"}}}',
    ];
    for (const raw of payloads) {
      const r = await p.call('noop', raw);
      expect(r.error).toMatchObject({ kind: 'invalid_arguments', constraint: 'forbidden_key' });
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.prototype.hasOwnProperty.call(Object.prototype, 'polluted')).toBe(false);
  });

  it('answers timeout on time for a handler that ignores its abort signal, after its retries', async () => {
    const r = await p.call('ignores_signal', {});
    expect(r.error).toMatchObject({ kind: 'timeout', retryable: true });
    expect(r.attempts).toBe(2);
  });

  it('truncates a result over the tool budget and serves the full content by ref', async () => {
    const r = await p.call('big_result', { items: 200 });
    expect(r).toMatchObject({ ok: true, truncated: true });
    expect(JSON.stringify(r.content).length).toBeLessThanOrEqual(1000);
    expect(r.ref).toMatch(/^ref_/);
    let text = '';
    let offset: number | undefined = 0;
    while (offset !== undefined) {
      const page = await p.call('get_full_result', { ref: r.ref, offset, limit: 4000 });
      const c = page.content as { page: string; next_offset?: number; total_chars: number };
      text += c.page;
      offset = c.next_offset;
    }
    const full = JSON.parse(text) as { rows: unknown[] };
    expect(full.rows).toHaveLength(200);
  });

  it('answers no_result for an unknown ref', async () => {
    const r = await p.call('get_full_result', { ref: 'ref_00000000-0000-0000-0000-000000000000' });
    expect(r).toMatchObject({ ok: true, no_result: true });
  });
});
