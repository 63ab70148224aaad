import { afterEach, describe, expect, it } from 'vitest';
import { startPlatform } from './helpers/platform.js';
import { waitFor } from './helpers/redis.js';

describe('retries inside the executor', () => {
  let p: Awaited<ReturnType<typeof startPlatform>> | undefined;
  afterEach(async () => {
    await p?.close();
    p = undefined;
  });

  it('retries a transient failure with the same arguments and linear backoff, recording attempts', async () => {
    p = await startPlatform();
    const r = await p.call('flaky', { key: 'a', failures: 2 });
    expect(r).toMatchObject({ ok: true, attempts: 3, content: { attempts_seen: 3 } });
    const seen = (await p.redis.lrange(`${p.prefix}:test:flaky:a`, 0, -1)).map((line) => line.split('|'));
    expect(seen.map((s) => s[1])).toEqual(['1', '2', '3']);
    // Every attempt carried the same idempotency key, hence the same call and arguments.
    expect(new Set(seen.map((s) => s[2])).size).toBe(1);
    const [t1, t2, t3] = seen.map((s) => Number(s[0]));
    // flaky's backoffMs is 100: attempt n waits 100 * (n - 1) ms.
    expect((t2 as number) - (t1 as number)).toBeGreaterThanOrEqual(100);
    expect((t3 as number) - (t2 as number)).toBeGreaterThanOrEqual(200);
  });

  it('gives up after maxAttempts and reports the last transient error', async () => {
    p = await startPlatform({ BREAKER_FAILURE_THRESHOLD: '100' });
    const r = await p.call('flaky', { key: 'b', failures: 10 });
    expect(r).toMatchObject({ ok: false, attempts: 4, error: { kind: 'transient', retryable: true } });
    expect(await p.redis.llen(`${p.prefix}:test:flaky:b`)).toBe(4);
  });

  it('never retries invalid arguments', async () => {
    p = await startPlatform();
    const r = await p.call('flaky', { key: 'c', failures: 'two' });
    expect(r).toMatchObject({ ok: false, attempts: 0, error: { kind: 'invalid_arguments' } });
    expect(await p.redis.llen(`${p.prefix}:test:flaky:c`)).toBe(0);
  });
});

describe('circuit breakers', () => {
  let p: Awaited<ReturnType<typeof startPlatform>> | undefined;
  afterEach(async () => {
    await p?.close();
    p = undefined;
  });

  const snapshot = async (tool: string) => {
    const raw = await p?.redis.hget(p.keys.breakers, tool);
    return raw ? (JSON.parse(raw) as { state: string; openUntil?: number }) : undefined;
  };

  it('opens after N consecutive failures, answers circuit_open, half-opens and closes on a good probe', async () => {
    p = await startPlatform({ BREAKER_FAILURE_THRESHOLD: '3', BREAKER_RESET_TIMEOUT_MS: '400' });
    for (let i = 0; i < 2; i += 1) expect((await p.call('always_failing', {})).error?.kind).toBe('transient');
    expect(p.executor.worker.breakers.state('always_failing')).toBe('closed');
    expect((await p.call('always_failing', {})).error?.kind).toBe('transient');
    expect(p.executor.worker.breakers.state('always_failing')).toBe('open');
    const blocked = await p.call('always_failing', {});
    expect(blocked.error).toMatchObject({ kind: 'circuit_open', retryable: false });
    expect(blocked.attempts).toBe(0);
    const open = await waitFor(() => snapshot('always_failing'), 2000, 'breaker snapshot');
    expect(open.state).toBe('open');
    expect(open.openUntil).toBeGreaterThan(Date.now() - 1000);
    await waitFor(async () => (await snapshot('always_failing'))?.state === 'half_open', 5000, 'half-open');
    // The probe fails: straight back to open.
    expect((await p.call('always_failing', {})).error?.kind).toBe('transient');
    expect(p.executor.worker.breakers.state('always_failing')).toBe('open');
  });

  it('closes again when the half-open probe succeeds', async () => {
    p = await startPlatform({ BREAKER_FAILURE_THRESHOLD: '2', BREAKER_RESET_TIMEOUT_MS: '300' });
    // flaky with maxAttempts 4: two failing calls of 4 attempts each would open it; use failures per key.
    const r = await p.call('flaky', { key: 'd', failures: 2 });
    // Two consecutive failed attempts open the breaker during the first call's retries.
    expect(r.error?.kind).toBe('circuit_open');
    expect(r.attempts).toBe(2);
    await waitFor(async () => (await snapshot('flaky'))?.state === 'half_open', 5000, 'half-open');
    const probe = await p.call('flaky', { key: 'd', failures: 2 });
    expect(probe).toMatchObject({ ok: true, attempts: 1 });
    expect(p.executor.worker.breakers.state('flaky')).toBe('closed');
    expect((await snapshot('flaky'))?.state).toBe('closed');
  });

  it('is never tripped by bad arguments, unknown names or forbidden calls', async () => {
    p = await startPlatform({ BREAKER_FAILURE_THRESHOLD: '2' });
    for (let i = 0; i < 5; i += 1) {
      expect((await p.call('query_order_status', { order_id: 'nope' })).error?.kind).toBe(
        'invalid_arguments',
      );
      expect(
        (await p.call('query_order_status', { order_id: 'ORD-123456' }, 'weather_only')).error?.kind,
      ).toBe('forbidden');
      expect((await p.call('write_markdown_file', { path: '../x.md', content: 'x' })).error?.kind).toBe(
        'invalid_arguments',
      );
    }
    expect(p.executor.worker.breakers.state('query_order_status')).toBe('closed');
    expect(p.executor.worker.breakers.state('write_markdown_file')).toBe('closed');
    expect((await p.call('query_order_status', { order_id: 'ORD-123456' })).ok).toBe(true);
  });

  it('exposes breaker state, transitions, calls and queue wait on /metrics', async () => {
    p = await startPlatform({ BREAKER_FAILURE_THRESHOLD: '1' });
    await p.call('always_failing', {});
    await p.call('query_weather', { city: '北京' });
    const text = await (await fetch(`http://127.0.0.1:${p.executor.metricsPort}/metrics`)).text();
    expect(text).toMatch(/agent_reach_breaker_state\{tool="always_failing"\} 2/);
    expect(text).toMatch(/agent_reach_breaker_transitions_total\{tool="always_failing",to="open"\} 1/);
    expect(text).toMatch(
      /agent_reach_tool_calls_total\{tool="query_weather",status="ok",error_kind="none"\} 1/,
    );
    expect(text).toMatch(
      /agent_reach_tool_calls_total\{tool="always_failing",status="error",error_kind="transient"\} 1/,
    );
    expect(text).toMatch(/agent_reach_tool_queue_wait_seconds_count\{group="default"\} 2/);
    expect(text).toMatch(/agent_reach_tool_call_duration_seconds_bucket/);
  });
});
