import { randomUUID } from 'node:crypto';
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { defineTool, Type, type Keys, type ToolDefinition } from '@agent-reach/protocol';
import type { RedisClient } from '@agent-reach/shared';

/** Environment variable naming a file each execution start is appended to (one JSON line each). */
export const STARTS_FILE_ENV = 'FAULTS_STARTS_FILE';

/**
 * Environment variable naming a directory where every execution that finishes writes its effect, a file
 * `<runId>/<toolCallId>.json`: what a call the model was told about left behind.
 */
export const EFFECTS_DIR_ENV = 'FAULTS_EFFECTS_DIR';

/** The file a finished execution of `toolCallId` in `runId` writes under the effects directory. */
export const effectFile = (dir: string, runId: string, toolCallId: string): string =>
  path.join(dir, runId, `${toolCallId}.json`);

/** Redis hash of execution starts: field `<runId>/<toolCallId>` → how many times the handler started. */
export const startsKey = (keys: Keys): string => `${keys.prefix}:test:starts`;

/** One line of the starts file. */
export interface StartRecord {
  runId: string;
  toolCallId: string;
  attempt: number;
  pid: number;
  at: number;
}

/**
 * The tool of the fault-injection suite. Every execution records that it started, keyed by run and tool
 * call, before it does anything else: in Redis (a hash under the test's prefix) and, when
 * `FAULTS_STARTS_FILE` is set, as a line appended to that file. The file does not depend on Redis, so a
 * start is on record even while Redis is down, paused or out of memory; the Redis write is not awaited
 * for the same reason (the tool's own outcome must not depend on the faults injected into Redis).
 */
export default function faultTools({ redis, keys }: { redis: RedisClient; keys: Keys }): ToolDefinition[] {
  const file = process.env[STARTS_FILE_ENV];
  const effects = process.env[EFFECTS_DIR_ENV];
  return [
    defineTool({
      name: 'recorded_effect',
      description:
        'Records that it started (per run and tool call), works for `ms` milliseconds, then writes its effect file. Test tool.',
      parameters: Type.Object(
        { step: Type.Integer({ minimum: 0 }), ms: Type.Integer({ minimum: 0, maximum: 10_000 }) },
        { additionalProperties: false },
      ),
      timeoutMs: 3000,
      retry: { maxAttempts: 2, backoffMs: 100 },
      handler: async ({ step, ms }, ctx) => {
        const record: StartRecord = {
          runId: ctx.runId,
          toolCallId: ctx.toolCallId,
          attempt: ctx.attempt,
          pid: process.pid,
          at: Date.now(),
        };
        // Lines far below PIPE_BUF, appended with O_APPEND: whole lines even with several writers.
        if (file) appendFileSync(file, `${JSON.stringify(record)}\n`);
        redis.hincrby(startsKey(keys), `${ctx.runId}/${ctx.toolCallId}`, 1).catch(() => undefined);
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(resolve, ms);
          ctx.signal.addEventListener('abort', () => {
            clearTimeout(timer);
            reject(ctx.signal.reason as Error);
          });
        });
        // A fresh id per execution: results of two executions of one call never look alike.
        const result = { step, worked_ms: ms, pid: process.pid, execution: randomUUID() };
        if (effects) {
          const target = effectFile(effects, ctx.runId, ctx.toolCallId);
          mkdirSync(path.dirname(target), { recursive: true });
          writeFileSync(target, JSON.stringify(result));
        }
        return result;
      },
    }),
  ];
}
