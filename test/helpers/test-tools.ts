import {
  defineTool,
  StringEnum,
  ToolError,
  Type,
  type Keys,
  type ToolDefinition,
} from '@agent-reach/protocol';
import type { RedisClient } from '@agent-reach/shared';
import { guardrailTools } from './guardrail-tools.js';

/**
 * Tools with controllable behaviour for the tests. Their state lives in Redis under the test's prefix so
 * that tools running in executor child processes report to the test process.
 */
export default function testTools({ redis, keys }: { redis: RedisClient; keys: Keys }): ToolDefinition[] {
  const k = (name: string) => `${keys.prefix}:test:${name}`;
  return [
    defineTool({
      name: 'noop',
      description: 'Does nothing and returns its input. Test tool.',
      parameters: Type.Object({ value: Type.Optional(Type.String()) }, { additionalProperties: false }),
      handler: (args) => ({ echo: args.value ?? null }),
    }),
    defineTool({
      name: 'flaky',
      description:
        'Fails transiently `failures` times per key, then succeeds; records each attempt time. Test tool.',
      parameters: Type.Object(
        { key: Type.String(), failures: Type.Integer({ minimum: 0 }) },
        { additionalProperties: false },
      ),
      retry: { maxAttempts: 4, backoffMs: 100 },
      handler: async ({ key, failures }, ctx) => {
        const n = await redis.rpush(
          k(`flaky:${key}`),
          `${Date.now()}|${ctx.attempt}|${JSON.stringify(ctx.idempotencyKey)}`,
        );
        if (n <= failures) throw new ToolError('transient', `upstream answered 503 (attempt ${n})`);
        return { attempts_seen: n };
      },
    }),
    defineTool({
      name: 'always_failing',
      description: 'Its upstream always fails with a 503. Test tool.',
      parameters: Type.Object({}, { additionalProperties: false }),
      retry: { maxAttempts: 1 },
      handler: () => {
        throw Object.assign(new Error('upstream 503'), { status: 503 });
      },
    }),
    defineTool({
      name: 'throws_plain',
      description: 'Throws a non-transient error. Test tool.',
      parameters: Type.Object({}, { additionalProperties: false }),
      handler: () => {
        throw new RangeError('the ledger is closed');
      },
    }),
    defineTool({
      name: 'ignores_signal',
      description: 'Never settles and ignores its abort signal. Test tool.',
      parameters: Type.Object({}, { additionalProperties: false }),
      timeoutMs: 200,
      retry: { maxAttempts: 2, backoffMs: 50 },
      handler: () => new Promise(() => undefined),
    }),
    defineTool({
      name: 'big_result',
      description: 'Returns `items` rows of filler. Test tool.',
      parameters: Type.Object(
        { items: Type.Integer({ minimum: 1, maximum: 100000 }) },
        { additionalProperties: false },
      ),
      resultBudgetChars: 1000,
      handler: ({ items }) => ({
        rows: Array.from({ length: items }, (_, i) => ({ id: i, text: `row ${i} `.repeat(5) })),
      }),
    }),
    defineTool({
      name: 'slow',
      description:
        'Sleeps `ms` milliseconds (honouring its signal), counting starts and finishes. Test tool.',
      parameters: Type.Object({ ms: Type.Integer({ minimum: 0 }) }, { additionalProperties: false }),
      timeoutMs: 30_000,
      handler: async ({ ms }, ctx) => {
        await redis.incr(k('slow:started'));
        await new Promise<void>((resolve, reject) => {
          const t = setTimeout(resolve, ms);
          ctx.signal.addEventListener('abort', () => {
            clearTimeout(t);
            reject(ctx.signal.reason as Error);
          });
        });
        await redis.incr(k('slow:finished'));
        return { slept_ms: ms };
      },
    }),
    defineTool({
      name: 'counted_effect',
      description: 'Records one side effect per execution under its tool call id. Test tool.',
      parameters: Type.Object(
        { ms: Type.Optional(Type.Integer({ minimum: 0 })) },
        { additionalProperties: false },
      ),
      timeoutMs: 30_000,
      handler: async ({ ms }, ctx) => {
        if (ms) await new Promise((r) => setTimeout(r, ms));
        const n = await redis.hincrby(k('effects'), ctx.idempotencyKey, 1);
        return { executions: n, pid: process.pid };
      },
    }),
    defineTool({
      name: 'isolated_echo',
      description: 'Echoes its input from the "isolated" group queue. Test tool.',
      parameters: Type.Object({ value: Type.String() }, { additionalProperties: false }),
      group: 'isolated',
      timeoutMs: 300,
      retry: { maxAttempts: 1 },
      handler: ({ value }) => ({ echo: value, pid: process.pid }),
    }),
    defineTool({
      name: 'limited_work',
      description:
        'Works `ms` milliseconds in the "limited" group, recording when it started and ended and in which process. Test tool.',
      parameters: Type.Object({ ms: Type.Integer({ minimum: 0 }) }, { additionalProperties: false }),
      group: 'limited',
      timeoutMs: 10_000,
      retry: { maxAttempts: 1 },
      handler: async ({ ms }) => {
        const started = Date.now();
        await new Promise((r) => setTimeout(r, ms));
        await redis.rpush(k('limited:spans'), `${started}|${Date.now()}|${process.pid}`);
        return { started };
      },
    }),
    defineTool({
      name: 'needs_approval',
      description: 'Does something a person must approve first. Test tool.',
      parameters: Type.Object({}, { additionalProperties: false }),
      requiresConfirmation: true,
      handler: () => ({ done: true }),
    }),
    ...reachTools(redis, k),
    ...guardrailTools(redis, k),
  ];
}

/** Tools of the reach policy's tests: scoped, granted and aliased; each execution is counted. */
function reachTools(redis: RedisClient, k: (name: string) => string): ToolDefinition[] {
  const counted = (name: string) => async () => ({ executions: await redis.hincrby(k('reach'), name, 1) });
  return [
    defineTool({
      name: 'orders_read',
      description: 'Reads orders (scope orders.read); counts its executions. Test tool.',
      parameters: Type.Object({}, { additionalProperties: false }),
      accessScope: 'orders.read',
      handler: counted('orders_read'),
    }),
    defineTool({
      name: 'orders_write',
      description: 'Changes orders (scope orders.write); counts its executions. Test tool.',
      parameters: Type.Object({}, { additionalProperties: false }),
      accessScope: 'orders.write',
      handler: counted('orders_write'),
    }),
    defineTool({
      name: 'granted_refund',
      description: 'Refunds an order; runs only where the session granted it. Test tool.',
      parameters: Type.Object({}, { additionalProperties: false }),
      requiresGrant: true,
      handler: counted('granted_refund'),
    }),
    defineTool({
      name: 'city_weather',
      description: 'Weather of one of the known cities; city names have aliases. Test tool.',
      parameters: Type.Object(
        { city: StringEnum(['Chengdu', 'Beijing']), days: Type.Optional(Type.Integer({ default: 1 })) },
        { additionalProperties: false },
      ),
      argumentAliases: { city: { 成都: 'Chengdu', chengdu: 'Chengdu', 北京: 'Beijing', peking: 'Beijing' } },
      handler: ({ city }) => ({ city }),
    }),
  ];
}
