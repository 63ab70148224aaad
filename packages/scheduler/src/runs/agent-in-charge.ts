import type { AgentSpec, AgentsFile } from '@agent-reach/shared';
import type { LoopLimits } from '../agent-loop/run-agent.js';
import { agentInCharge, type RunState } from '../agent-loop/run-state.js';
import type { LlmClient } from '../model/llm.js';

/** How a run resolves the agents that take charge of it by handoff. */
export interface InChargeOptions {
  state: RunState;
  agents: AgentsFile;
  /** The model client of the agent the run started with. */
  startLlm: LlmClient;
  /** A handoff target's limits: its budgets and loop settings over the fleet's, under the run's own. */
  limitsOf: (agent: AgentSpec) => Partial<LoopLimits>;
  /** A handoff target's model client (undefined: `defaultLlm`). */
  llmFor?: (agent: string) => LlmClient | undefined;
  defaultLlm: LlmClient;
}

/**
 * The agent in charge of a run, its limits and its model client, read at each step: the agent the run
 * started with (as the caller resolves it) until it hands off, then the target (see
 * agent-loop/handoffs.ts). A target removed from the configuration mid-run reaches no tool.
 */
export function inChargeDeps(o: InChargeOptions) {
  const clients = new Map<string, LlmClient>();
  const handedTo = () => {
    const name = agentInCharge(o.state);
    return name === o.state.agent ? undefined : name;
  };
  const target = (name: string): AgentSpec => o.agents.agents.get(name) ?? { name, tools: [] };
  return {
    agent: (started: () => AgentSpec): AgentSpec => {
      const name = handedTo();
      return name === undefined ? started() : target(name);
    },
    limits: (started: () => Partial<LoopLimits>): Partial<LoopLimits> => {
      const name = handedTo();
      return name === undefined ? started() : o.limitsOf(target(name));
    },
    llm: (): LlmClient => {
      const name = handedTo();
      if (name === undefined) return o.startLlm;
      if (!clients.has(name)) clients.set(name, o.llmFor?.(name) ?? o.defaultLlm);
      return clients.get(name) as LlmClient;
    },
    agentNamed: (name: string): AgentSpec | undefined => o.agents.agents.get(name),
  };
}
