import type { Keys, ToolDefinition } from '@agent-reach/protocol';
import { createGetFullResult } from './get-full-result.js';
import { queryOrderStatus } from './query-order-status.js';
import { queryWeather } from './query-weather.js';
import { createWriteMarkdownFile } from './write-markdown-file.js';
import type { RedisClient } from '@agent-reach/shared';

/** The built-in demo tools: deterministic, canned, no network. */
export function createDemoTools(deps: {
  redis: RedisClient;
  keys: Keys;
  outputsDir: string;
}): ToolDefinition[] {
  return [
    queryWeather,
    queryOrderStatus,
    createWriteMarkdownFile(deps.outputsDir),
    createGetFullResult(deps.redis, deps.keys),
  ];
}

export { queryWeather, queryOrderStatus, createWriteMarkdownFile, createGetFullResult };
