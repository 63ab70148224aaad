/**
 * The scale-out benchmark's tools, as an executor tool module (`TOOL_MODULES`): an I/O-bound tool that
 * waits `BENCH_SLEEP_MS` (default 30) and returns, and the agent-loop benchmark's no-op tool.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { defineTool, Type, type ToolDefinition } from '@agent-reach/protocol';
import { noopTool } from '../agent-loop/task.js';

export const SLEEP_TOOL = 'bench_sleep';

const sleepMs = Number(process.env.BENCH_SLEEP_MS ?? 30);

/** Waits like a call to a remote service would: no CPU, one timer. */
export const sleepTool: ToolDefinition = defineTool({
  name: SLEEP_TOOL,
  description: 'Waits a fixed time, as a call to a remote service would, and returns. For benchmarks.',
  parameters: Type.Object({ payload: Type.String() }, { additionalProperties: false }),
  handler: async (a, ctx) => {
    await sleep(sleepMs, undefined, { signal: ctx.signal });
    return { echo: a.payload };
  },
});

export default [sleepTool, noopTool];
