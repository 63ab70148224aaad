import { readFileSync } from 'node:fs';
import AjvModule from 'ajv';
import { parse } from 'yaml';
import { AgentReachError, NAME_PATTERN } from '@agent-reach/protocol';
import { closestName } from './suggest.js';
import { deepFreeze } from './config.js';

const Ajv = AjvModule.default;

/** One agent as declared in the agents file: who it is and which tools it may reach. */
export interface AgentSpec {
  readonly name: string;
  readonly description?: string;
  /** Extra role text for the system prompt. */
  readonly instructions?: string;
  readonly tools: readonly string[];
  readonly allowed_topic?: readonly string[];
  readonly max_iterations?: number;
}

export interface AgentsFile {
  readonly agents: ReadonlyMap<string, AgentSpec>;
  /** An agent's reachable tools; empty for an unknown agent (so nothing is reachable). */
  reachable(agent: string): ReadonlySet<string>;
}

const agentsSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['agents'],
  properties: {
    agents: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['name', 'tools'],
        properties: {
          name: { type: 'string', pattern: NAME_PATTERN.source },
          description: { type: 'string' },
          instructions: { type: 'string' },
          tools: { type: 'array', items: { type: 'string', minLength: 1 }, uniqueItems: true },
          allowed_topic: { type: 'array', items: { type: 'string' } },
          max_iterations: { type: 'integer', minimum: 1, maximum: 100 },
        },
      },
    },
  },
} as const;

const validateAgents = new Ajv({ allErrors: true, strict: true }).compile(agentsSchema);

/**
 * Parses and checks an agents document. Every problem is reported at once, each naming the file, the
 * agent and the field. With `knownTools`, a tool an agent names but nobody registered is an error.
 */
export function parseAgents(text: string, file: string, knownTools?: Iterable<string>): AgentsFile {
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (err) {
    throw new AgentReachError('AGENTS_INVALID', `${file}: not valid YAML: ${(err as Error).message}`);
  }
  const problems: string[] = [];
  const agentName = (index: string | undefined) => {
    const entry =
      index === undefined
        ? undefined
        : (doc as { agents?: Array<{ name?: unknown }> }).agents?.[Number(index)];
    return typeof entry?.name === 'string' ? `agent "${entry.name}"` : `agents[${index}]`;
  };
  if (!validateAgents(doc)) {
    for (const e of validateAgents.errors ?? []) {
      const m = /^\/agents\/(\d+)(\/.*)?$/.exec(e.instancePath);
      const field = m ? (m[2]?.slice(1).replace(/\//g, '.') ?? '') : e.instancePath.slice(1) || '(top level)';
      const extra =
        e.keyword === 'additionalProperties'
          ? ` "${String((e.params as { additionalProperty: string }).additionalProperty)}"`
          : '';
      const who = m ? `${agentName(m[1])}: ` : '';
      problems.push(`${file}: ${who}${field ? `${field} ` : ''}${e.message ?? 'is invalid'}${extra}`);
    }
    throw new AgentReachError('AGENTS_INVALID', problems.join('\n'), { details: problems });
  }
  const specs = (doc as { agents: AgentSpec[] }).agents;
  const agents = new Map<string, AgentSpec>();
  const known = knownTools === undefined ? undefined : new Set(knownTools);
  specs.forEach((spec, i) => {
    if (agents.has(spec.name)) problems.push(`${file}: agent "${spec.name}": name is declared twice`);
    agents.set(spec.name, spec);
    if (!known) return;
    spec.tools.forEach((tool, j) => {
      if (known.has(tool)) return;
      const guess = closestName(tool, known);
      problems.push(
        `${file}: ${agentName(String(i))}: tools[${j}] "${tool}" is not a registered tool${guess ? ` (did you mean "${guess}"?)` : ''}`,
      );
    });
  });
  if (problems.length > 0)
    throw new AgentReachError('AGENTS_INVALID', problems.join('\n'), { details: problems });
  const frozen = deepFreeze(agents);
  const reachableSets = new Map([...frozen].map(([name, spec]) => [name, new Set(spec.tools)]));
  const none: ReadonlySet<string> = new Set();
  return { agents: frozen, reachable: (agent) => reachableSets.get(agent) ?? none };
}

export function loadAgents(file: string, knownTools?: Iterable<string>): AgentsFile {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new AgentReachError(
      'AGENTS_INVALID',
      `${file}: cannot read agents file: ${(err as Error).message}`,
    );
  }
  return parseAgents(text, file, knownTools);
}

/** Problems of an already parsed agents file against the tools a fleet registers (empty when none). */
export function parseAgentsCheck(file: AgentsFile, knownTools: Iterable<string>): string[] {
  const known = new Set(knownTools);
  const problems: string[] = [];
  for (const spec of file.agents.values()) {
    spec.tools.forEach((tool, j) => {
      if (known.has(tool)) return;
      const guess = closestName(tool, known);
      problems.push(
        `agent "${spec.name}": tools[${j}] "${tool}" is not a registered tool${guess ? ` (did you mean "${guess}"?)` : ''}`,
      );
    });
  }
  return problems;
}
