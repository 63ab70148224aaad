import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { LlmSim, Scenario } from '@agent-reach/llm-sim';
import { ROOT } from './node-run.js';

const HERE = fileURLToPath(import.meta.url);

/** The agent of the workload: `recorded_effect` as a tool module and as an MCP server's tool. */
export const FAULT_AGENTS_FILE = path.join(ROOT, 'packages/faults/fixtures/fault-agents.yaml');
/** The tool module the fleet's executors load (this package's fault-tools, built or from its source). */
export const FAULT_TOOLS_MODULE = path.join(path.dirname(HERE), `fault-tools${path.extname(HERE)}`);

/**
 * Short locks (as in chaos.test.ts) so that a paused or killed process's work is taken over within
 * seconds, and short shutdown grace periods so that a fleet-wide SIGTERM is over quickly.
 */
export const FAULT_ENV = {
  RUN_LOCK_DURATION_MS: '4000',
  RUN_STALLED_INTERVAL_MS: '1000',
  LOCK_DURATION_MS: '3000',
  STALLED_INTERVAL_MS: '1000',
  SCHEDULER_SHUTDOWN_GRACE_MS: '5000',
  SHUTDOWN_GRACE_MS: '5000',
};
export const SHUTDOWN_GRACE_MS = 5000;
/** How much longer than its grace period a process may take to exit after SIGTERM (process teardown). */
export const SHUTDOWN_SLACK_MS = 3000;

export const FAULT_AGENT = 'fault_agent';
export const TOOL_CALLS_PER_RUN = 6;
/** `recorded_effect` served by an MCP server over stdio (fixtures/fault-agents.yaml). */
export const MCP_FAULT_TOOL = 'effects__recorded_effect';

/**
 * The model side of the workload: 6 calls of `recorded_effect` over 4 tool turns (two of them with two
 * calls at once), then a final answer; the last call goes to the same tool served by an MCP server.
 * Three variants with different model latencies, so that runs started together are soon at different
 * steps.
 */
export function faultModelScenarios(): Scenario[] {
  const call = (step: number) => ({
    name: step === TOOL_CALLS_PER_RUN - 1 ? MCP_FAULT_TOOL : 'recorded_effect',
    arguments: { step, ms: 20 + ((step * 17) % 45) },
  });
  return [120, 200, 300].map((latency, v) => ({
    name: `faults-${v}`,
    latency_ms: latency,
    turns: [
      { tool_calls: [call(0)] },
      { tool_calls: [call(1), call(2)] },
      { tool_calls: [call(3)] },
      { tool_calls: [call(4), call(5)] },
      { content: 'all six effects done' },
    ],
  }));
}

/** The environment of the fleet's processes: their Redis and prefix, the workload's agent and tools, llm-sim. */
export function fleetEnv(
  prefix: string,
  redisUrl: string,
  sim: LlmSim,
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    REDIS_URL: redisUrl,
    AR_KEY_PREFIX: prefix,
    AGENTS_FILE: FAULT_AGENTS_FILE,
    TOOL_MODULES: FAULT_TOOLS_MODULE,
    OUTPUTS_DIR: path.join(ROOT, 'outputs', 'faults'),
    OPENAI_API_KEY: 'test',
    OPENAI_BASE_URL: sim.url,
    OPENAI_MODEL: 'echo',
    EXECUTOR_METRICS_PORT: '0',
    SCHEDULER_METRICS_PORT: '0',
    ARCHIVER_METRICS_PORT: '0',
    LLM_MAX_RETRIES: '4',
    LLM_TIMEOUT_MS: '10000',
    ...extra,
  };
}
