import { readFileSync } from 'node:fs';
import AjvModule from 'ajv';
import { parse } from 'yaml';
import { AgentReachError, NAME_PATTERN } from '@agent-reach/protocol';
import { closestName } from '../tools/suggest.js';
import { describeSchemaError, misspeltRequired, repeatsMisspelt } from './schema-problems.js';
import { deepFreeze } from './config.js';
import { outputSchemaProblems } from './output-schema.js';
import { GROUP_NAME_PATTERN } from '../constants.js';
import type { WorkflowDocument } from './workflows.js';
import { agentPolicyProblems, agentPolicyProperties, type AgentPolicy } from './agent-policy.js';
import {
  guardrailProblems,
  guardrailsProperties,
  guardrailTools,
  type AgentGuardrails,
} from './guardrails-config.js';
import { agentHandoffProperties, handoffProblems, type AgentHandoffs } from './handoff-config.js';
import { agentToolsProblems, agentToolsProperties, type AgentTools } from './agent-tools-config.js';
import {
  declaredOpenApiTools,
  openApiSourceProblems,
  undeclaredOpenApiTool,
  openApiSourcesSchema,
  type OpenApiSourceSpec,
} from './openapi-config.js';
import {
  inMcpNamespace,
  mcpServerProblems,
  mcpServersOf,
  mcpServersSchema,
  type McpServerSpec,
} from './mcp-config.js';
import {
  agentReachProperties,
  toolDefaultsSchema,
  type AgentReach,
  type ToolDefaults,
} from '../tools/reach-policy.js';

const Ajv = AjvModule.default;

/** One agent as declared in the agents file: who it is and which tools it may reach. */
export interface AgentSpec extends AgentPolicy, AgentReach, AgentHandoffs, AgentTools {
  readonly name: string;
  readonly description?: string;
  /** Extra role text for the system prompt. */
  readonly instructions?: string;
  readonly tools: readonly string[];
  readonly allowed_topic?: readonly string[];
  readonly max_iterations?: number;
  /** Tokens (prompt + completion, over every model call) a run of this agent may use. Default: `RUN_TOKEN_BUDGET`. */
  readonly max_tokens?: number;
  /** Wall-clock time a run of this agent may take, in ms. Default: `RUN_DEADLINE_MS`. */
  readonly max_wall_time_ms?: number;
  /** JSON Schema the run's final answer must match (its parsed JSON becomes the run's `output`). */
  readonly output_schema?: Readonly<Record<string, unknown>>;
  /** Times an answer that misses `output_schema` is sent back to the model. Default: `OUTPUT_RETRIES`. */
  readonly output_retries?: number;
  /** The model, as `<provider>/<model>` (or a model of the default provider); default: `OPENAI_MODEL`. */
  readonly model?: string;
  /** Models asked in order when the model's provider is unavailable (see docs/providers.md). */
  readonly fallback?: readonly string[];
  /** Checks on the request, the final answer and tool calls (see `guardrails-config.ts`). */
  readonly guardrails?: AgentGuardrails;
}

/** Fleet-wide limits of one tool group's queue, enforced by BullMQ across every executor. */
export interface ToolGroupLimits {
  /** Calls of the group running at once across the fleet. */
  readonly concurrency?: number;
  /** Calls of the group started per window across the fleet. */
  readonly rate?: { readonly max: number; readonly per_ms: number };
  /** OpenAPI documents whose listed operations become tools of this group (see `openapi-config.ts`). */
  readonly openapi?: readonly OpenApiSourceSpec[];
  /** MCP servers whose tools join this group (see `mcp-config.ts`). */
  readonly mcp_servers?: readonly McpServerSpec[];
}

/**
 * The configuration document as validated: plain JSON, what `config apply` publishes. Other sections of
 * the fleet's configuration join it as further top-level keys.
 */
export interface ConfigDocument {
  readonly agents: readonly AgentSpec[];
  readonly tool_groups?: Readonly<Record<string, ToolGroupLimits>>;
  /** The fleet's workflows (checked against these agents); see `parseWorkflowsDocument`. */
  readonly workflows?: readonly WorkflowDocument[];
  /** Result shaping defaults for tools that set none (see `reach-policy.ts`). */
  readonly tool_defaults?: ToolDefaults;
}

export interface AgentsFile {
  readonly agents: ReadonlyMap<string, AgentSpec>;
  /** An agent's reachable tools; empty for an unknown agent (so nothing is reachable). */
  reachable(agent: string): ReadonlySet<string>;
  /** Limits per tool group (groups without an entry have none). */
  readonly toolGroups: ReadonlyMap<string, ToolGroupLimits>;
  /** The validated document the file holds, frozen. */
  readonly document: ConfigDocument;
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
          max_tokens: { type: 'integer', minimum: 100 },
          max_wall_time_ms: { type: 'integer', minimum: 1000 },
          output_schema: { type: 'object' },
          output_retries: { type: 'integer', minimum: 0, maximum: 10 },
          ...agentPolicyProperties,
          model: { type: 'string', minLength: 1, maxLength: 200 },
          fallback: {
            type: 'array',
            items: { type: 'string', minLength: 1, maxLength: 200 },
            uniqueItems: true,
          },
          ...agentReachProperties,
          ...guardrailsProperties,
          ...agentHandoffProperties,
          ...agentToolsProperties,
        },
      },
    },
    tool_defaults: toolDefaultsSchema,
    tool_groups: {
      type: 'object',
      propertyNames: { pattern: GROUP_NAME_PATTERN.source },
      additionalProperties: {
        type: 'object',
        additionalProperties: false,
        minProperties: 1,
        properties: {
          concurrency: { type: 'integer', minimum: 1, maximum: 100_000 },
          rate: {
            type: 'object',
            additionalProperties: false,
            required: ['max', 'per_ms'],
            properties: {
              max: { type: 'integer', minimum: 1, maximum: 1_000_000 },
              per_ms: { type: 'integer', minimum: 1, maximum: 3_600_000 },
            },
          },
          openapi: openApiSourcesSchema,
          mcp_servers: mcpServersSchema,
        },
      },
    },
  },
} as const;

const validateAgents = new Ajv({ allErrors: true, strict: true, verbose: true }).compile(agentsSchema);

/**
 * Parses and checks an agents document. Every problem is reported at once, each naming the file, the
 * agent and the field: a field the schema refuses does not stop the other checks (names declared twice,
 * and, with `knownTools`, tools nobody registered), which run on every agent whose fields they read are
 * well formed. A misspelt field gets a did-you-mean (`unknown field "tols" (did you mean "tools"?)`).
 */
export function parseAgents(text: string, file: string, knownTools?: Iterable<string>): AgentsFile {
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (err) {
    throw new AgentReachError('AGENTS_INVALID', `${file}: not valid YAML: ${(err as Error).message}`);
  }
  const problems: string[] = [];
  const entries = (doc as { agents?: unknown } | null)?.agents;
  const list: unknown[] = Array.isArray(entries) ? entries : [];
  const agentName = (index: string | undefined) => {
    const entry = index === undefined ? undefined : (list[Number(index)] as { name?: unknown } | null);
    return typeof entry?.name === 'string' ? `agent "${entry.name}"` : `agents[${index}]`;
  };
  const valid = validateAgents(doc);
  if (!valid) {
    const errors = validateAgents.errors ?? [];
    const misspelt = misspeltRequired(errors);
    for (const e of errors) {
      if (repeatsMisspelt(e, misspelt)) continue;
      const m = /^\/agents\/(\d+)(\/.*)?$/.exec(e.instancePath);
      const field = m
        ? (m[2]?.slice(1).replace(/\//g, '.') ?? '')
        : e.instancePath.slice(1).replace(/\//g, '.') || '(top level)';
      const who = m ? `${agentName(m[1])}: ` : '';
      // A bad group name is reported once, by its propertyNames error, not again by the inner pattern.
      if ((e as { propertyName?: string }).propertyName !== undefined) continue;
      if (e.keyword === 'propertyNames') {
        const name = String((e.params as { propertyName?: string }).propertyName);
        problems.push(
          `${file}: tool_groups: "${name}" is not a valid group name (${GROUP_NAME_PATTERN.source})`,
        );
        continue;
      }
      const sep = e.keyword === 'additionalProperties' && field ? ': ' : ' ';
      problems.push(`${file}: ${who}${field ? `${field}${sep}` : ''}${describeSchemaError(e)}`);
    }
  }
  const agents = new Map<string, AgentSpec>();
  // The OpenAPI checks read tool groups as the schema describes them: only when the schema found none malformed.
  const groupsWellFormed =
    valid || !(validateAgents.errors ?? []).some((e) => e.instancePath.startsWith('/tool_groups'));
  const toolGroups = groupsWellFormed ? (doc as Partial<ConfigDocument> | null)?.tool_groups : undefined;
  problems.push(...openApiSourceProblems(toolGroups, file));
  const servers = groupsWellFormed ? mcpServersOf({ tool_groups: toolGroups }) : [];
  problems.push(...mcpServerProblems(servers, file));
  // The document's own OpenAPI operations are tools by their declaration: no document needs reading.
  const known =
    knownTools === undefined
      ? undefined
      : new Set([...knownTools, ...declaredOpenApiTools(toolGroups).map((t) => t.name)]);
  list.forEach((entry, i) => {
    const spec = entry as Partial<AgentSpec> | null;
    if (typeof spec?.name !== 'string') return;
    if (agents.has(spec.name)) problems.push(`${file}: agent "${spec.name}": name is declared twice`);
    if (
      typeof spec.output_schema === 'object' &&
      spec.output_schema !== null &&
      !Array.isArray(spec.output_schema)
    )
      for (const problem of outputSchemaProblems(spec.output_schema))
        problems.push(`${file}: agent "${spec.name}": output_schema ${problem}`);
    agents.set(spec.name, spec as AgentSpec);
    problems.push(...agentPolicyProblems(spec, `${file}: ${agentName(String(i))}`));
    problems.push(...guardrailProblems(spec, `${file}: ${agentName(String(i))}`, agentNamesOf(list)));
    for (const tool of known ? guardrailTools(spec.guardrails) : [])
      if (!known?.has(tool))
        problems.push(`${file}: ${agentName(String(i))}: guardrail tool "${tool}" is not a registered tool`);
    if (!known || !Array.isArray(spec.tools)) return;
    spec.tools.forEach((tool, j) => {
      // An MCP server's tools are known once it runs: until it announces one, no agent sees it.
      if (typeof tool !== 'string' || known.has(tool) || inMcpNamespace(tool, servers)) return;
      const undeclared = undeclaredOpenApiTool(tool, toolGroups);
      const guess = undeclared === undefined ? closestName(tool, known) : undefined;
      problems.push(
        `${file}: ${agentName(String(i))}: tools[${j}] "${tool}" ${undeclared ?? `is not a registered tool${guess ? ` (did you mean "${guess}"?)` : ''}`}`,
      );
    });
  });
  problems.push(...handoffProblems(agents, file, closestName));
  problems.push(...agentToolsProblems(agents, file, closestName));
  if (problems.length > 0 || !valid)
    throw new AgentReachError('AGENTS_INVALID', problems.join('\n'), { details: problems });
  const document = doc as ConfigDocument;
  deepFreeze(document);
  const frozen = deepFreeze(agents);
  // A guardrail's tool is reachable for the executors' check, though never offered to the model.
  const reachableSets = new Map(
    [...frozen].map(([name, spec]) => [name, new Set([...spec.tools, ...guardrailTools(spec.guardrails)])]),
  );
  const none: ReadonlySet<string> = new Set();
  return {
    agents: frozen,
    reachable: (agent) => reachableSets.get(agent) ?? none,
    toolGroups: deepFreeze(new Map(Object.entries(document.tool_groups ?? {}))),
    document,
  };
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
  const known = new Set([
    ...knownTools,
    ...declaredOpenApiTools(file.document.tool_groups).map((t) => t.name),
  ]);
  const problems: string[] = [];
  const servers = mcpServersOf(file.document);
  for (const spec of file.agents.values()) {
    guardrailTools(spec.guardrails).forEach((tool) => {
      if (!known.has(tool))
        problems.push(`agent "${spec.name}": guardrail tool "${tool}" is not a registered tool`);
    });
    spec.tools.forEach((tool, j) => {
      if (known.has(tool) || inMcpNamespace(tool, servers)) return;
      const guess = closestName(tool, known);
      problems.push(
        `agent "${spec.name}": tools[${j}] "${tool}" is not a registered tool${guess ? ` (did you mean "${guess}"?)` : ''}`,
      );
    });
  }
  return problems;
}

/**
 * The document with each MCP server's `pinned` completed from what the fleet serves now: a tool the
 * document does not pin gets the digest its executors announce it with (`config apply` writes them
 * into the published version, so pins outlive the fleet's first-seen record). Tools an executor
 * withdrew for a changed digest are not pinned: accepting a change is the operator's explicit act.
 */
export function pinAnnouncedDigests(
  document: ConfigDocument,
  announced: ReadonlyArray<{ origin?: { kind: string; server: string; tool: string; digest: string } }>,
): ConfigDocument {
  const digests = new Map<string, Map<string, string>>();
  for (const entry of announced) {
    const o = entry.origin;
    if (o?.kind !== 'mcp') continue;
    if (!digests.has(o.server)) digests.set(o.server, new Map());
    digests.get(o.server)?.set(o.tool, o.digest);
  }
  if (digests.size === 0 || !document.tool_groups) return document;
  const groups = Object.fromEntries(
    Object.entries(document.tool_groups).map(([name, group]) => [
      name,
      group.mcp_servers === undefined
        ? group
        : {
            ...group,
            mcp_servers: group.mcp_servers.map((spec) => {
              const seen = digests.get(spec.name);
              if (!seen) return spec;
              const own = spec.pinned ?? {};
              // Entries, not assignments: a tool name is the server's to choose (`__proto__` included).
              const added = [...seen].filter(([tool]) => !Object.hasOwn(own, tool));
              return { ...spec, pinned: Object.fromEntries([...Object.entries(own), ...added]) };
            }),
          },
    ]),
  );
  return { ...document, tool_groups: groups };
}

/** The names the agents of a document declare. */
function agentNamesOf(list: unknown[]): Set<string> {
  return new Set(
    list.flatMap((a) =>
      typeof (a as { name?: unknown })?.name === 'string' ? [(a as { name: string }).name] : [],
    ),
  );
}
