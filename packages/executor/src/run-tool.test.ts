import { randomUUID } from 'node:crypto';
import { Registry } from 'prom-client';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  createKeys,
  defineTool,
  ToolError,
  toolMessageContent,
  Type,
  WIRE_VERSION,
  type Keys,
  type ToolCallJob,
  type ToolContext,
} from '@agent-reach/protocol';
import {
  createLogger,
  createMetrics,
  createRedis,
  parseAgents,
  ToolRegistry,
  waitReady,
} from '@agent-reach/shared';
import type { Redis } from 'ioredis';
import { BreakerBoard } from './breakers.js';
import { checkArgumentsAhead, runTool, type RunToolDeps, type ToolOutcome } from './run-tool.js';

const TIMEOUT_MS = 2_000;
const BACKOFF_MS = 1_000;
const RESET_MS = 30_000;

/** Handler behaviour per call, set by each test: what the next attempts do. */
let behave: (args: { n: number }, ctx: ToolContext) => unknown;
const attempts: Array<{ attempt: number; at: number; signal: AbortSignal }> = [];

function lookup(maxAttempts: number) {
  return defineTool({
    name: 'lookup',
    description: 'Looks a number up.',
    parameters: Type.Object({ n: Type.Integer() }),
    timeoutMs: TIMEOUT_MS,
    retry: { maxAttempts, backoffMs: BACKOFF_MS },
    handler: (args, ctx) => {
      attempts.push({ attempt: ctx.attempt, at: Date.now(), signal: ctx.signal });
      return behave(args, ctx);
    },
  });
}

const secret = defineTool({
  name: 'secret',
  description: 'Not reachable by the agent.',
  parameters: Type.Object({}),
  handler: () => 'never',
});

const registry = new ToolRegistry().register(lookup(3), secret);
/** The same tools, `lookup` with a single attempt. */
const singleAttempt = new ToolRegistry().register(lookup(1), secret);
const agents = parseAgents('agents:\n  - name: helper\n    tools: [lookup]\n', 'agents.yaml');

let redis: Redis;
let keys: Keys;
let breakers: BreakerBoard;
let deps: RunToolDeps;

function job(overrides: Partial<ToolCallJob> = {}): ToolCallJob {
  return {
    v: WIRE_VERSION,
    run_id: 'run_unit',
    trace_id: 'trace',
    agent: 'helper',
    tool_call_id: `call_${randomUUID().slice(0, 8)}`,
    name: 'lookup',
    arguments: '{"n":1}',
    deadline: Date.now() + 60_000,
    reply_to: 'unused',
    enqueued_at: Date.now(),
    ...overrides,
  };
}

/** Runs the call, moving the fake clock from one timer to the next until it settles. */
async function settle(call: Promise<ToolOutcome>): Promise<ToolOutcome> {
  let outcome: ToolOutcome | undefined;
  void call.then((o) => (outcome = o));
  for (let timers = 0; timers < 20; timers += 1) {
    await vi.advanceTimersByTimeAsync(0);
    if (outcome !== undefined) return outcome;
    await vi.advanceTimersToNextTimerAsync();
  }
  throw new Error('the call did not settle after 20 timers');
}

function board(failureThreshold: number): BreakerBoard {
  return new BreakerBoard(
    { failureThreshold, resetTimeoutMs: RESET_MS },
    {
      redis,
      keys,
      executorId: 'exec_unit',
      logger: createLogger('test', { level: 'silent' }),
      metrics: createMetrics(new Registry()),
    },
  );
}

function econnreset(): Error {
  return Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
}

beforeAll(async () => {
  const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  redis = createRedis(url, 'producer');
  await waitReady(redis, url);
  keys = createKeys(`t${randomUUID().slice(0, 8)}`);
});

afterAll(async () => {
  await redis.del(keys.breakers);
  await redis.quit();
});

beforeEach(() => {
  // Only the clocks the pipeline reads: Redis keeps its real sockets and immediates.
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date', 'performance'] });
  attempts.length = 0;
  behave = () => ({ ok: 1 });
  breakers = board(3);
  deps = { registry, agents, breakers, logger: createLogger('test', { level: 'silent' }) };
});

afterEach(() => {
  breakers.shutdown();
  vi.useRealTimers();
});

describe('runTool retries', () => {
  it('retries a transient failure with the same arguments after linear backoff: 1 s, then 2 s', async () => {
    const seen: number[] = [];
    behave = (args, ctx) => {
      seen.push(args.n);
      if (ctx.attempt < 3) throw econnreset();
      return { n: args.n };
    };
    const start = Date.now();
    const call = runTool(job({ arguments: '{"n":7}' }), deps);
    await vi.advanceTimersByTimeAsync(BACKOFF_MS - 1);
    expect(attempts).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(attempts).toHaveLength(2);
    const { result } = await settle(call);
    expect(result).toMatchObject({ ok: true, attempts: 3, content: { n: 7 } });
    expect(attempts.map((a) => a.at - start)).toEqual([0, BACKOFF_MS, 3 * BACKOFF_MS]);
    expect(seen).toEqual([7, 7, 7]);
  });

  it('gives up after maxAttempts with the last transient error, marked retryable', async () => {
    behave = () => {
      throw Object.assign(new Error('upstream 503'), { status: 503 });
    };
    const { result } = await settle(runTool(job(), deps));
    expect(result).toMatchObject({
      ok: false,
      attempts: 3,
      error: { kind: 'transient', message: 'upstream 503', retryable: true },
    });
  });

  it('never retries an execution error and reports its type', async () => {
    behave = () => {
      throw new RangeError('n out of range');
    };
    const { result } = await settle(runTool(job(), deps));
    expect(result).toMatchObject({
      attempts: 1,
      error: { kind: 'execution_error', type: 'RangeError', message: 'n out of range', retryable: false },
    });
    expect(attempts).toHaveLength(1);
  });

  it('returns invalid_arguments without running or retrying when the schema rejects the arguments', async () => {
    const { result } = await settle(runTool(job({ arguments: '{"n":"seven"}' }), deps));
    expect(result).toMatchObject({
      attempts: 0,
      error: { kind: 'invalid_arguments', field: '/n', expected: 'integer', retryable: false },
    });
    expect(attempts).toHaveLength(0);
  });

  it('does not start a retry whose backoff and timeout would not fit before the deadline', async () => {
    behave = () => {
      throw econnreset();
    };
    // Attempt 2 would start at +1 s and could run to +3 s: past a deadline at +2.5 s.
    const { result } = await settle(runTool(job({ deadline: Date.now() + 2_500 }), deps));
    expect(attempts).toHaveLength(1);
    expect(result).toMatchObject({ attempts: 1, error: { kind: 'transient', retryable: true } });
  });

  it('answers a call picked up after its deadline as unavailable without running it', async () => {
    const { result } = await settle(runTool(job({ deadline: Date.now() - 1 }), deps));
    expect(result).toMatchObject({
      attempts: 0,
      error: {
        kind: 'unavailable',
        message: 'the call waited in the queue past its deadline and was not run',
      },
    });
    expect(attempts).toHaveLength(0);
  });

  it('hands a call back as unavailable when the executor stops during a backoff', async () => {
    behave = () => {
      throw econnreset();
    };
    const stop = new AbortController();
    const call = runTool(job(), { ...deps, signal: stop.signal });
    await vi.advanceTimersByTimeAsync(BACKOFF_MS / 2);
    stop.abort();
    const { result } = await settle(call);
    expect(attempts).toHaveLength(1);
    expect(result.error).toMatchObject({ kind: 'unavailable', retryable: true });
  });
});

describe('runTool with arguments checked ahead', () => {
  it("runs on the ahead check's outcome for the tool it checked, instead of checking the arguments again", async () => {
    behave = (args) => ({ twice: args.n * 2 });
    // The ahead check of the same call's arguments is what counts: here deliberately another call's, so
    // that a second check in the pipeline would show.
    const ahead = checkArgumentsAhead(registry, job({ arguments: '{"n":5}' }));
    const ran = await settle(runTool(job({ arguments: '{"n":4}' }), { ...deps, checked: ahead }));
    expect(ran.result).toMatchObject({ ok: true, content: { twice: 10 } });

    const failed = checkArgumentsAhead(registry, job({ arguments: '{"n":"seven"}' }));
    const refused = await settle(runTool(job({ arguments: '{"n":4}' }), { ...deps, checked: failed }));
    expect(refused.result).toMatchObject({ attempts: 0, error: { kind: 'invalid_arguments', field: '/n' } });
    expect(attempts).toHaveLength(1);
  });

  it('checks the arguments again when the tool checked ahead is no longer the one the name resolves to', async () => {
    // Checked ahead against a tool whose schema took anything; the registry now holds a stricter one.
    const loose = new ToolRegistry().register(
      defineTool({ name: 'lookup', description: 'Anything.', parameters: Type.Object({}), handler: () => 0 }),
    );
    const call = job({ arguments: '{"n":"seven"}' });
    const ahead = checkArgumentsAhead(loose, call);
    expect(ahead?.check.ok).toBe(true);
    const { result } = await settle(runTool(call, { ...deps, checked: ahead }));
    expect(result).toMatchObject({ attempts: 0, error: { kind: 'invalid_arguments', field: '/n' } });
    expect(attempts).toHaveLength(0);
  });

  it('answers a call past its deadline as unavailable even when its arguments were checked ahead and failed', async () => {
    const call = job({ arguments: 'not json', deadline: Date.now() - 1 });
    const { result } = await settle(runTool(call, { ...deps, checked: checkArgumentsAhead(registry, call) }));
    expect(result).toMatchObject({ attempts: 0, error: { kind: 'unavailable' } });
  });

  it('checks nothing ahead for a job without a registered tool or an argument string, or with arguments over 64 KiB', () => {
    expect(checkArgumentsAhead(registry, job({ name: 'nope' }))).toBeUndefined();
    expect(checkArgumentsAhead(registry, { ...job(), arguments: { n: 1 } })).toBeUndefined();
    expect(checkArgumentsAhead(registry, null)).toBeUndefined();
    expect(checkArgumentsAhead(registry, 'a string')).toBeUndefined();
    const big = `{"n":1,"pad":"${'x'.repeat(64 * 1024)}"}`;
    expect(checkArgumentsAhead(registry, job({ arguments: big }))).toBeUndefined();
    expect(checkArgumentsAhead(registry, job({ arguments: '{"n":1}' }))?.check.ok).toBe(true);
  });
});

describe('runTool stopped by the executor', () => {
  it('hands every running attempt back as unavailable and aborts its signal when the executor stops', async () => {
    behave = (_args, ctx) => new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
    const stop = new AbortController();
    const calls = [
      runTool(job(), { ...deps, signal: stop.signal }),
      runTool(job(), { ...deps, signal: stop.signal }),
    ];
    await vi.advanceTimersByTimeAsync(10);
    expect(attempts).toHaveLength(2);
    stop.abort();
    const results = await Promise.all(calls.map(settle));
    for (const { result } of results) {
      expect(result.error).toMatchObject({
        kind: 'unavailable',
        message: 'the executor stopped; the call goes back to its queue',
      });
    }
    expect(attempts.map((a) => a.signal.aborted)).toEqual([true, true]);
  });
});

describe('runTool timeouts', () => {
  it('stops an attempt at the tool timeout, aborts its signal and says how long it had', async () => {
    behave = (_args, ctx) => new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
    const call = runTool(job({ arguments: '{"n":1}' }), {
      ...deps,
      registry: singleAttempt,
    });
    await vi.advanceTimersByTimeAsync(TIMEOUT_MS - 1);
    expect(attempts[0]?.signal.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(attempts[0]?.signal.aborted).toBe(true);
    const { result } = await settle(call);
    expect(result).toMatchObject({
      attempts: 1,
      error: { kind: 'timeout', message: `"lookup" did not finish within ${TIMEOUT_MS} ms`, retryable: true },
    });
  });

  it('counts the time a handler spends before returning its promise against the tool timeout', async () => {
    behave = (_args, ctx) => {
      // The handler's synchronous part takes 1.5 s of the attempt's 2 s before it hands its promise over.
      vi.setSystemTime(Date.now() + 1_500);
      return new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
    };
    const call = runTool(job(), { ...deps, registry: singleAttempt });
    await vi.advanceTimersByTimeAsync(TIMEOUT_MS - 1_500 - 1);
    expect(attempts[0]?.signal.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(attempts[0]?.signal.aborted).toBe(true);
    const { result } = await settle(call);
    expect(result.error).toMatchObject({
      kind: 'timeout',
      message: `"lookup" did not finish within ${TIMEOUT_MS} ms`,
    });
  });

  it('cuts an attempt at the call deadline when that comes before the tool timeout', async () => {
    behave = () => new Promise(() => {});
    const { result } = await settle(runTool(job({ deadline: Date.now() + 1_500 }), deps));
    expect(result.error).toMatchObject({
      kind: 'timeout',
      message: `"lookup" was stopped at the call's deadline after 1500 ms`,
    });
    expect(attempts).toHaveLength(1);
  });

  it('retries a timed-out attempt and succeeds when the next one answers in time', async () => {
    behave = (_args, ctx) => (ctx.attempt === 1 ? new Promise(() => {}) : { fast: true });
    const start = Date.now();
    const { result } = await settle(runTool(job(), deps));
    expect(result).toMatchObject({ ok: true, attempts: 2, content: { fast: true } });
    expect(attempts.map((a) => a.at - start)).toEqual([0, TIMEOUT_MS + BACKOFF_MS]);
  });
});

describe('runTool attempt timings', () => {
  it("records each attempt's start, duration and outcome on the call's clock, and keeps them out of the model's message", async () => {
    const slow = (ms: number, value: unknown) =>
      new Promise((resolve) => setTimeout(() => resolve(value), ms));
    behave = (_args, ctx) =>
      ctx.attempt === 1
        ? new Promise(() => {})
        : ctx.attempt === 2
          ? Promise.reject(econnreset())
          : slow(300, { third: true });
    const { result } = await settle(runTool(job(), deps));
    expect(result).toMatchObject({ ok: true, attempts: 3 });
    // A timeout at 2 s, a backoff of 1 s, a transient failure at once, a backoff of 2 s, then 300 ms.
    expect(result.attempt_log).toEqual([
      { attempt: 1, offset_ms: 0, duration_ms: TIMEOUT_MS, outcome: 'timeout' },
      { attempt: 2, offset_ms: TIMEOUT_MS + BACKOFF_MS, duration_ms: 0, outcome: 'transient' },
      { attempt: 3, offset_ms: TIMEOUT_MS + 3 * BACKOFF_MS, duration_ms: 300, outcome: 'ok' },
    ]);
    expect(result.duration_ms).toBe(TIMEOUT_MS + 3 * BACKOFF_MS + 300);
    const forModel = JSON.parse(toolMessageContent(result)) as Record<string, unknown>;
    expect(Object.keys(forModel)).not.toContain('attempt_log');
    expect(Object.keys(forModel)).not.toContain('attempts');
  });

  it('records the attempts of a failed call, and none for a call tried once', async () => {
    const { result: once } = await settle(runTool(job(), deps));
    expect(once).toMatchObject({ ok: true, attempts: 1 });
    expect(once.attempt_log).toBeUndefined();
    behave = () => {
      throw econnreset();
    };
    const { result } = await settle(runTool(job(), deps));
    expect(result.attempt_log?.map((t) => [t.attempt, t.outcome])).toEqual([
      [1, 'transient'],
      [2, 'transient'],
      [3, 'transient'],
    ]);
  });
});

describe('runTool scope', () => {
  it('refuses a tool outside the agent scope as forbidden, listing what the agent may call', async () => {
    const { result } = await settle(runTool(job({ name: 'secret', arguments: '{}' }), deps));
    expect(result.error).toMatchObject({
      kind: 'forbidden',
      message: 'agent "helper" may not call "secret"',
      available_tools: ['lookup'],
    });
  });

  it('answers an unknown tool with the closest reachable name', async () => {
    const { result } = await settle(runTool(job({ name: 'lookups' }), deps));
    expect(result.error).toMatchObject({
      kind: 'unknown_tool',
      message: 'there is no tool named "lookups"; did you mean "lookup"?',
      did_you_mean: 'lookup',
      available_tools: ['lookup'],
    });
  });
});

describe('runTool circuit breaker', () => {
  const failing = () => {
    throw econnreset();
  };

  it('opens after three consecutive failures and answers circuit_open without running the tool', async () => {
    behave = failing;
    const d = { ...deps, registry: singleAttempt };
    for (let i = 0; i < 2; i += 1) await settle(runTool(job(), d));
    expect(breakers.state('lookup')).toBe('closed');
    await settle(runTool(job(), d));
    expect(breakers.state('lookup')).toBe('open');
    const { result } = await settle(runTool(job(), d));
    expect(result).toMatchObject({
      attempts: 0,
      error: {
        kind: 'circuit_open',
        message: '"lookup" is failing and its circuit breaker is open; it is unavailable for now',
        retryable: false,
      },
    });
    expect(attempts).toHaveLength(3);
    const snapshot = JSON.parse((await redis.hget(keys.breakers, 'lookup')) ?? '{}') as object;
    expect(snapshot).toMatchObject({
      state: 'open',
      executorId: 'exec_unit',
      openUntil: Date.now() + RESET_MS,
    });
  });

  it('stops retrying a call once its own failures open the breaker', async () => {
    behave = failing;
    const tight = board(2);
    try {
      const { result } = await settle(runTool(job(), { ...deps, breakers: tight }));
      expect(attempts).toHaveLength(2);
      expect(result).toMatchObject({ attempts: 2, error: { kind: 'circuit_open' } });
    } finally {
      tight.shutdown();
    }
  });

  it('half-opens after the reset window and closes on a successful probe', async () => {
    behave = failing;
    const d = { ...deps, registry: singleAttempt };
    for (let i = 0; i < 3; i += 1) await settle(runTool(job(), d));
    await vi.advanceTimersByTimeAsync(RESET_MS - 1);
    expect(breakers.state('lookup')).toBe('open');
    await vi.advanceTimersByTimeAsync(1);
    expect(breakers.state('lookup')).toBe('half_open');
    behave = () => ({ back: true });
    const { result } = await settle(runTool(job(), d));
    expect(result).toMatchObject({ ok: true, content: { back: true } });
    expect(breakers.state('lookup')).toBe('closed');
  });

  it('opens again when the half-open probe fails', async () => {
    behave = failing;
    const d = { ...deps, registry: singleAttempt };
    for (let i = 0; i < 3; i += 1) await settle(runTool(job(), d));
    await vi.advanceTimersByTimeAsync(RESET_MS);
    expect(breakers.state('lookup')).toBe('half_open');
    const { result } = await settle(runTool(job(), d));
    expect(result.error?.kind).toBe('transient');
    expect(breakers.state('lookup')).toBe('open');
    expect(attempts).toHaveLength(4);
  });

  it('does not count attempts cut short by their call deadline towards opening the breaker, only full timeouts', async () => {
    behave = () => new Promise(() => {});
    const d = { ...deps, registry: singleAttempt };
    // Calls that waited in a queue: each has less time left than the tool's timeout.
    for (let i = 0; i < 5; i += 1) {
      const { result } = await settle(runTool(job({ deadline: Date.now() + TIMEOUT_MS / 4 }), d));
      expect(result.error?.message).toBe(
        `"lookup" was stopped at the call's deadline after ${TIMEOUT_MS / 4} ms`,
      );
    }
    expect(breakers.state('lookup')).toBe('closed');
    // Three that had the tool's whole timeout and used it up do open it.
    for (let i = 0; i < 3; i += 1) await settle(runTool(job(), d));
    expect(breakers.state('lookup')).toBe('open');
  });

  it('does not count invalid arguments a handler reports towards opening the breaker', async () => {
    behave = () => {
      throw new ToolError('invalid_arguments', 'n must be odd', { field: '/n' });
    };
    const d = { ...deps, registry: singleAttempt };
    for (let i = 0; i < 5; i += 1) {
      const { result } = await settle(runTool(job(), d));
      expect(result.error).toMatchObject({ kind: 'invalid_arguments', field: '/n', retryable: false });
    }
    expect(breakers.state('lookup')).toBe('closed');
  });
});

describe('result shaping settings: the tool its own, else the fleet defaults', () => {
  const rows = Array.from({ length: 300 }, (_, i) => ({ id: i, name: `row ${i}` }));
  const listing = (name: string, own: { summarizeResult?: boolean; resultBudgetChars?: number } = {}) =>
    defineTool({
      name,
      description: 'Lists rows.',
      parameters: Type.Object({}),
      handler: () => ({ rows }),
      ...own,
    });
  const shaping = new ToolRegistry().register(
    listing('plain'),
    listing('own_summary', { summarizeResult: true, resultBudgetChars: 600 }),
  );
  const withDefaults = (defaults: string) =>
    parseAgents(`agents:\n  - name: helper\n    tools: [plain, own_summary]\n${defaults}`, 'agents.yaml');
  const call = (name: string, fleet: string) =>
    settle(
      runTool(job({ name, arguments: '{}' }), {
        ...deps,
        registry: shaping,
        agents: withDefaults(fleet),
      }),
    );

  it('summarises an over-budget list by default, with a notice naming the ref', async () => {
    const { result, full } = await call('plain', '');
    expect(result).toMatchObject({ truncated: true, content: { rows: { summary: 'array', count: 300 } } });
    expect(result.notice).toContain(`get_full_result({"ref":"${result.ref}"`);
    expect(result.notice).toContain('the result was cut to fit 4000 of');
    expect(JSON.parse(full!)).toEqual({ rows });
  });

  it("follows the fleet's tool_defaults for tools without their own settings, and a tool's own over them", async () => {
    const fleet = 'tool_defaults:\n  summarize_results: false\n  result_budget_chars: 800\n';
    const plain = (await call('plain', fleet)).result;
    expect(JSON.stringify(plain.content).length).toBeLessThanOrEqual(800);
    expect((plain.content as { rows: unknown[] }).rows.at(-1)).toMatch(/^… \d+ more items$/);
    expect(plain.notice).toContain('cut to fit 800 of');
    const own = (await call('own_summary', fleet)).result;
    expect(own.content).toMatchObject({ rows: { summary: 'array', count: 300 } });
    expect(own.notice).toContain('cut to fit 600 of');
  });
});
