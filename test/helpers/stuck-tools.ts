import { defineTool, Type, type Keys, type ToolDefinition } from '@agent-reach/protocol';
import type { RedisClient } from '@agent-reach/shared';

/** Agents file line of the agent that may call the tools below. */
export const STUCK_AGENTS_YAML = 'agents:\n  - name: test_agent\n    tools: [stuck_once]\n';

/**
 * A tool module for shutdown tests: the first execution of each call never settles (and ignores its abort
 * signal); any later execution of the same call succeeds. Executions are counted per call in Redis.
 */
export default function stuckTools({ redis, keys }: { redis: RedisClient; keys: Keys }): ToolDefinition[] {
  return [
    defineTool({
      name: 'stuck_once',
      description: 'Hangs forever on its first execution of a call, succeeds on the next. Test tool.',
      parameters: Type.Object({}, { additionalProperties: false }),
      timeoutMs: 120_000,
      retry: { maxAttempts: 1 },
      handler: async (_args, ctx) => {
        const n = await redis.hincrby(`${keys.prefix}:test:stuck`, ctx.idempotencyKey, 1);
        if (n === 1) return new Promise(() => undefined);
        return { executions: n, pid: process.pid };
      },
    }),
  ];
}
