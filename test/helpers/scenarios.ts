import type { LlmSim, Scenario } from '@agent-reach/llm-sim';

/** Scenarios several test files play: a tool step then an answer, an approval, and an echo of the user. */
export const COMMON_SCENARIOS: Scenario[] = [
  {
    name: 'weather-then-answer',
    plan: ['weather', 'answer'],
    turns: [
      { tool_calls: [{ name: 'query_weather', arguments: { city: '杭州' } }] },
      { content: 'It is {{ last.content.forecast.0.condition }}.' },
    ],
  },
  {
    name: 'approval',
    turns: [
      { tool_calls: [{ name: 'needs_approval', arguments: {} }] },
      { content: 'after the decision: {{ last.ok }} {{ last.error.message ?? "" }}' },
    ],
  },
  { name: 'remember', turns: [{ content: 'noted: {{ user }}' }] },
];

export function addCommonScenarios(sim: LlmSim): void {
  for (const s of COMMON_SCENARIOS) sim.addScenario(s);
}
