import type { Scenario } from '@agent-reach/llm-sim';
import { defineTool, Type, type ToolDefinition } from '@agent-reach/protocol';

/** The benchmark's model name: the llm-sim scenario every run plays. */
export const SCENARIO = 'bench-loop-3-steps';
export const TOOL = 'bench_noop';
export const AGENT = 'bench_loop_agent';
/** Tool turns per run (each one call of {@link TOOL}), before the final answer. */
export const TOOL_STEPS = 3;

/** Echoes its payload: a tool whose own time is ~0, so a step's time is the LLM's plus the platform's. */
export const noopTool: ToolDefinition = defineTool({
  name: TOOL,
  description: 'Echoes its payload back; does nothing else. For benchmarks.',
  parameters: Type.Object({ payload: Type.String() }, { additionalProperties: false }),
  handler: (a) => ({ echo: a.payload }),
});

/**
 * A 3-step plan, three tool turns and a final answer; by default with no simulated latency. The final
 * answer quotes the last result, so a run whose tool results went missing does not look like a success.
 */
export function benchScenario(latencyMs = 0): Scenario {
  return {
    name: SCENARIO,
    description: 'Three no-op tool turns, then a final answer.',
    latency_ms: latencyMs,
    plan: ['Look up the first fact', 'Look up the second fact', 'Look up the third fact'],
    turns: [
      ...Array.from({ length: TOOL_STEPS }, (_, i) => ({
        tool_calls: [{ name: TOOL, arguments: { payload: `fact ${i + 1}` } }],
      })),
      { content: 'Done: {{ results.bench_noop.content.echo }}.' },
    ],
  };
}

/**
 * The request of run `n`: a multi-step task, so the loop classifies it `multi_step` and plans, as the
 * scenario's plan step expects.
 */
export function taskInput(n: number): string {
  return `task #${n}: look up the first fact, then the second, then the third`;
}

/** Expected final answer, to check each run really went through all its steps. */
export const FINAL_ANSWER = `Done: fact ${TOOL_STEPS}.`;

/** The agents file: one agent offered the no-op tool and one demo tool (so the prompt lists two tools). */
export const AGENTS_YAML = `agents:
  - name: ${AGENT}
    description: Benchmark agent for the agent-loop benchmark.
    tools: [${TOOL}, query_weather]
`;
