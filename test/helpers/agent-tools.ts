import type { LlmSim } from '@agent-reach/llm-sim';
import type { StoredEvent } from '@agent-reach/scheduler';

/**
 * The agents of the agents-as-tools tests, run through the real fleet: llm-sim over HTTP, an executor and schedulers on a
 * prefix of their own. A planner's model calls `ask_researcher`; the researcher's run is a child run on
 * the fleet whose end answers the planner's call.
 */
export const AGENTS = {
  agents: [
    {
      name: 'planner',
      description: 'Plans and asks the researcher.',
      tools: [],
      model: 'at-planner',
      agent_tools: ['researcher'],
    },
    {
      name: 'researcher',
      description: 'Finds things out; some of its steps need a person.',
      tools: ['needs_approval', 'slow'],
      model: 'at-researcher',
    },
    {
      name: 'slow_researcher',
      description: 'Researches slowly.',
      tools: ['slow'],
      model: 'at-slow-researcher',
    },
    {
      name: 'slow_planner',
      tools: [],
      model: 'at-planner-slow',
      agent_tools: [{ agent: 'slow_researcher', name: 'research', description: 'Research a question.' }],
    },
    {
      name: 'judge',
      description: 'Judges whether a refund is allowed.',
      tools: [],
      model: 'at-judge',
      output_schema: {
        type: 'object',
        required: ['allowed', 'why'],
        additionalProperties: false,
        properties: { allowed: { type: 'boolean' }, why: { type: 'string' } },
      },
    },
    { name: 'busy_planner', tools: ['noop'], model: 'at-busy-planner', agent_tools: ['researcher'] },
    {
      name: 'hasty_planner',
      tools: [],
      model: 'at-planner',
      agent_tools: ['researcher'],
      max_wall_time_ms: 3000,
    },
    { name: 'sloppy_planner', tools: [], model: 'at-sloppy', agent_tools: ['researcher'] },
    { name: 'greedy_clerk', tools: [], model: 'at-greedy', agent_tools: ['judge'] },
    { name: 'clerk', tools: [], model: 'at-clerk', agent_tools: ['judge'] },
    { name: 'ping', tools: [], model: 'at-ping', agent_tools: ['pong'], max_agent_depth: 2 },
    { name: 'pong', tools: [], model: 'at-pong', agent_tools: ['ping'] },
  ],
};

/** The scenarios the agents' models name, allowed on llm-sim's (the default) provider. */
export const MODELS = {
  ALLOWED_MODELS:
    'echo,at-planner,at-researcher,at-slow-researcher,at-planner-slow,at-ping,at-pong,at-judge,at-clerk,at-busy-planner,at-sloppy,at-greedy',
};

const PLANNER_TURNS = [
  { tool_calls: [{ name: 'ask_researcher', arguments: { input: 'find the answer' } }] },
  { content: 'planner: {{ last.content ?? last.error.message }}' },
];

export function addScenarios(sim: LlmSim): void {
  sim.addScenario({ name: 'at-planner', turns: PLANNER_TURNS });
  sim.addScenario({
    name: 'at-researcher',
    turns: [
      { tool_calls: [{ name: 'needs_approval', arguments: {} }] },
      { content: 'researched ok={{ last.ok }}' },
    ],
  });
  sim.addScenario({
    name: 'at-planner-slow',
    turns: [
      { tool_calls: [{ name: 'research', arguments: { input: 'slowly' } }] },
      { content: 'planner: {{ last.content }}' },
    ],
  });
  sim.addScenario({
    name: 'at-slow-researcher',
    turns: [{ tool_calls: [{ name: 'slow', arguments: { ms: 2500 } }] }, { content: 'slow research done' }],
  });
  sim.addScenario({
    name: 'at-judge',
    turns: [{ content: '{"allowed": true, "why": "damaged on arrival"}' }],
  });
  sim.addScenario({
    name: 'at-clerk',
    turns: [
      { tool_calls: [{ name: 'ask_judge', arguments: { input: 'refund order 7?' } }] },
      { content: 'allowed={{ last.content.allowed }} because {{ last.content.why }}' },
    ],
  });
  sim.addScenario({
    name: 'at-busy-planner',
    turns: [
      {
        tool_calls: [
          { name: 'ask_researcher', arguments: { input: 'find the answer' } },
          { name: 'noop', arguments: { value: 'beside' } },
        ],
      },
      { content: 'both answered' },
    ],
  });
  // Ten agent calls in one turn: past the run's limit of child runs the rest are refused.
  sim.addScenario({
    name: 'at-greedy',
    turns: [
      {
        tool_calls: Array.from({ length: 10 }, (_, i) => ({
          name: 'ask_judge',
          arguments: { input: `refund order ${i}?` },
        })),
      },
      { content: 'asked' },
    ],
  });
  sim.addScenario({
    name: 'at-sloppy',
    turns: [
      { tool_calls: [{ name: 'ask_researcher', arguments: { query: 'no input field' } }] },
      { content: 'refused: {{ last.error.kind }} at {{ last.error.field }}' },
    ],
  });
  // ping → pong → ping → pong … each calls the other; the depth limit ends the chain.
  for (const [name, tool] of [
    ['at-ping', 'ask_pong'],
    ['at-pong', 'ask_ping'],
  ] as const) {
    sim.addScenario({
      name,
      turns: [
        { tool_calls: [{ name: tool, arguments: { input: 'your turn' } }] },
        { content: `${name}<{{ last.content ?? last.error.kind }}>` },
      ],
    });
  }
}

export const ofType = <T extends StoredEvent['event']['type']>(events: StoredEvent[], type: T) =>
  events.flatMap((e) =>
    e.event.type === type ? [e.event as Extract<StoredEvent['event'], { type: T }>] : [],
  );
