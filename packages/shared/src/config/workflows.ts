import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import AjvModule from 'ajv';
import { parse } from 'yaml';
import { DEFAULT_WORKFLOW_NODE_TIMEOUT_MS } from '../constants.js';
import { AgentReachError } from '@agent-reach/protocol';
import { closestName } from '../tools/suggest.js';
import { describeSchemaError, misspeltRequired, repeatsMisspelt } from './schema-problems.js';
import { deepFreeze } from './config.js';
import { answerJson, outputPathProblem, outputSchemaProblems, type OutputSchema } from './output-schema.js';

const Ajv = AjvModule.default;

/**
 * What the watchdog does with a node that has no output when its timeout passes: inject `default` as
 * its output (marked low-confidence), or abort the workflow with a report of the waits.
 */
export type OnTimeout = 'abort' | { readonly default: string };

/** One node of a workflow: an ordinary run of `agent` on `input`, started once its dependencies finished. */
export interface WorkflowNodeSpec {
  readonly id: string;
  readonly agent: string;
  /**
   * The run's input, a template over `{{request}}` (the workflow's input) and `{{nodes.ID.output}}` of the
   * nodes it depends on.
   */
  readonly input: string;
  readonly depends_on: readonly string[];
  /** From the workflow's start, how long the node may wait and run before the watchdog acts, in ms. */
  readonly timeout_ms: number;
  readonly on_timeout: OnTimeout;
  /** The model of the node's run instead of the scheduler's default. */
  readonly model?: string;
  /**
   * JSON Schema the node's answer must match, instead of its agent's `output_schema`; dependants may
   * then address its fields (`{{nodes.ID.output.FIELD}}`).
   */
  readonly output_schema?: OutputSchema;
}

export interface WorkflowSpec {
  readonly name: string;
  readonly description?: string;
  /** Nodes in declaration order (dependencies may be declared after their dependants). */
  readonly nodes: readonly WorkflowNodeSpec[];
}

/** A workflow as written in a workflows file or a published configuration (before defaults). */
export interface WorkflowDocument {
  readonly name: string;
  readonly description?: string;
  readonly nodes: ReadonlyArray<{
    readonly id: string;
    readonly agent: string;
    readonly input?: string;
    readonly depends_on?: readonly string[];
    readonly timeout_ms?: number;
    readonly on_timeout?: OnTimeout;
    readonly model?: string;
    readonly output_schema?: OutputSchema;
  }>;
}

export interface WorkflowsFile {
  readonly workflows: ReadonlyMap<string, WorkflowSpec>;
  /** The validated workflows as written (what a published configuration holds), frozen. */
  readonly document: readonly WorkflowDocument[];
}

const NAME = '^[a-zA-Z0-9_-]{1,64}$';

const workflowsSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['workflows'],
  properties: {
    workflows: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['name', 'nodes'],
        properties: {
          name: { type: 'string', pattern: NAME },
          description: { type: 'string' },
          nodes: {
            type: 'array',
            minItems: 1,
            maxItems: 64,
            items: {
              type: 'object',
              additionalProperties: false,
              required: ['id', 'agent'],
              properties: {
                id: { type: 'string', pattern: NAME },
                agent: { type: 'string', pattern: NAME },
                input: { type: 'string', minLength: 1 },
                depends_on: { type: 'array', items: { type: 'string', minLength: 1 }, uniqueItems: true },
                timeout_ms: { type: 'integer', minimum: 1, maximum: 7 * 24 * 3600 * 1000 },
                on_timeout: {
                  oneOf: [
                    { const: 'abort' },
                    {
                      type: 'object',
                      additionalProperties: false,
                      required: ['default'],
                      properties: { default: { type: 'string' } },
                    },
                  ],
                },
                model: { type: 'string', minLength: 1, maxLength: 200 },
                output_schema: { type: 'object' },
              },
            },
          },
        },
      },
    },
  },
} as const;

const validateWorkflows = new Ajv({ allErrors: true, strict: true, verbose: true }).compile(workflowsSchema);

/**
 * `{{ request }}`, `{{ nodes.ID.output }}` or a field of a node's JSON output, `{{ nodes.ID.output.a.b }}`
 * (an array element by its index: `days.0`); anything else between braces is a problem.
 */
const TEMPLATE = /\{\{\s*([^{}]*?)\s*\}\}/g;
const NODE_OUTPUT = /^nodes\.([a-zA-Z0-9_-]{1,64})\.output((?:\.[A-Za-z0-9_-]{1,64})*)$/;

/** A template's use of a field of a node's output: `{{nodes.weather.output.city}}`. */
export interface OutputFieldRef {
  readonly node: string;
  readonly path: readonly string[];
}

/** The nodes whose outputs a template uses, the fields of them it uses, and the expressions it cannot resolve. */
export function templateRefs(template: string): {
  nodes: string[];
  fields: OutputFieldRef[];
  unknown: string[];
} {
  const nodes: string[] = [];
  const fields: OutputFieldRef[] = [];
  const unknown: string[] = [];
  for (const m of template.matchAll(TEMPLATE)) {
    const expr = m[1] ?? '';
    if (expr === 'request') continue;
    const ref = NODE_OUTPUT.exec(expr);
    const node = ref?.[1];
    if (!node) {
      unknown.push(expr);
      continue;
    }
    nodes.push(node);
    if (ref[2]) fields.push({ node, path: ref[2].slice(1).split('.') });
  }
  return { nodes, fields, unknown };
}

/** The value at `path` of a node's JSON output (text as it is, anything else as JSON); undefined if none. */
function outputField(output: string, path: readonly string[]): string | undefined {
  let value: unknown;
  try {
    value = JSON.parse(answerJson(output));
  } catch {
    return undefined;
  }
  for (const step of path) {
    if (typeof value !== 'object' || value === null || !Object.hasOwn(value, step)) return undefined;
    value = (value as Record<string, unknown>)[step];
  }
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** A dependency's output as a later node sees it. */
export interface NodeOutput {
  readonly output: string;
  /** The output is the node's declared default, injected by the watchdog (or after its run failed). */
  readonly low_confidence: boolean;
  /** Why it is low-confidence, in words (shown to the later node's agent). */
  readonly note?: string;
}

/**
 * Fills a node's input template. A low-confidence output reaches the later node's agent marked as such,
 * so that the model knows the value is a stand-in.
 */
export function renderNodeInput(
  template: string,
  request: string,
  outputs: ReadonlyMap<string, NodeOutput>,
): string {
  return template.replace(TEMPLATE, (whole, expr: string) => {
    if (expr === 'request') return request;
    const ref = NODE_OUTPUT.exec(expr);
    const id = ref?.[1];
    const out = id === undefined ? undefined : outputs.get(id);
    if (!out) return whole;
    const path = ref?.[2] ? ref[2].slice(1).split('.') : [];
    // A field the output does not have (an optional one, or a default that is not JSON) is empty, or,
    // for a stand-in, the whole stand-in.
    const field = path.length === 0 ? out.output : outputField(out.output, path);
    const text = field ?? (out.low_confidence ? out.output : '');
    return out.low_confidence
      ? `[low_confidence: ${out.note ?? `node ${id} did not answer; this is its declared default`}] ${text}`
      : text;
  });
}

/**
 * The first cycle of a workflow's wait graph (a node waits on each node of its `depends_on`), in order,
 * its first node repeated at the end; undefined when there is none. Nodes are visited in declaration
 * order, dependencies in the order listed, so the same file always names the same cycle.
 */
export function findCycle(
  nodes: ReadonlyArray<Pick<WorkflowNodeSpec, 'id' | 'depends_on'>>,
): string[] | undefined {
  const deps = new Map(nodes.map((n) => [n.id, n.depends_on]));
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (id: string): string[] | undefined => {
    const s = state.get(id);
    if (s === 'done') return undefined;
    if (s === 'open') return [...stack.slice(stack.indexOf(id)), id];
    state.set(id, 'open');
    stack.push(id);
    for (const d of deps.get(id) ?? []) {
      if (!deps.has(d)) continue;
      const cycle = visit(d);
      if (cycle) return cycle;
    }
    stack.pop();
    state.set(id, 'done');
    return undefined;
  };
  for (const n of nodes) {
    const cycle = visit(n.id);
    if (cycle) return cycle;
  }
  return undefined;
}

/** What `parseWorkflows` checks beyond the file itself. */
export interface WorkflowCheckOptions {
  /**
   * The models a node may name in `model` (the fleet's `ALLOWED_MODELS`): a node naming another is a
   * problem. Without it, models are not checked.
   */
  readonly allowedModels?: Iterable<string> | undefined;
  /**
   * The agents' output schemas (an agent without one is absent): a template addressing a field of a node's
   * output must name one that the node's schema (its own, else its agent's) can have. Without it, fields
   * of nodes that declare no schema themselves are not checked.
   */
  readonly agentOutputSchemas?: ReadonlyMap<string, OutputSchema> | undefined;
}

/**
 * Parses and checks a workflows document before anything can start: the schema, then per workflow
 * duplicate node ids, agents not in `knownAgents`, models not allowed, dependencies on undeclared nodes,
 * templates naming nodes the node does not depend on, and cycles (named in order, `a → b → c → a`).
 * Every problem is reported at once, each naming the file, the workflow, the node and the field.
 */
export function parseWorkflows(
  text: string,
  file: string,
  knownAgents: Iterable<string>,
  options: WorkflowCheckOptions = {},
): WorkflowsFile {
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (err) {
    throw new AgentReachError('WORKFLOWS_INVALID', `${file}: not valid YAML: ${(err as Error).message}`);
  }
  return parseWorkflowsDocument(doc, file, knownAgents, options);
}

/**
 * Checks a workflows document already parsed (`{ workflows: [...] }`, e.g. from a published
 * configuration) as `parseWorkflows` does; `file` names where it came from in every problem. A field the
 * schema refuses does not stop the other checks: they run on every workflow and node whose fields they
 * read are well formed, so one pass lists every problem.
 */
export function parseWorkflowsDocument(
  doc: unknown,
  file: string,
  knownAgents: Iterable<string>,
  options: WorkflowCheckOptions = {},
): WorkflowsFile {
  const problems: string[] = [];
  const declared = (doc as { workflows?: unknown } | null)?.workflows;
  const list: unknown[] = Array.isArray(declared) ? declared : [];
  const valid = validateWorkflows(doc);
  if (!valid) problems.push(...schemaProblems(list, file));
  const agents = new Set(knownAgents);
  const allowedModels = options.allowedModels === undefined ? undefined : new Set(options.allowedModels);
  const workflows = new Map<string, WorkflowSpec>();
  for (const entry of list) {
    const w = entry as { name?: unknown; description?: unknown; nodes?: unknown } | null;
    if (typeof w?.name !== 'string' || !Array.isArray(w.nodes)) continue;
    const at = `${file}: workflow "${w.name}"`;
    if (workflows.has(w.name)) problems.push(`${at}: name is declared twice`);
    const raw = w.nodes.filter(
      (n): n is Record<string, unknown> & { id: string } =>
        typeof n === 'object' && n !== null && typeof (n as { id?: unknown }).id === 'string',
    );
    const ids = new Set<string>();
    for (const n of raw) {
      if (ids.has(n.id)) problems.push(`${at}: node "${n.id}": id is declared twice`);
      ids.add(n.id);
    }
    const nodes = raw.map((n) =>
      checkNode(n, `${at}: node "${n.id}"`, { agents, allowedModels, ids }, problems),
    );
    problems.push(...fieldProblems(nodes, at, options.agentOutputSchemas));
    const cycle = findCycle(nodes);
    if (cycle)
      problems.push(
        `${at}: depends_on has a cycle: ${cycle.join(' → ')} (each waits on the next, so none could ever start)`,
      );
    workflows.set(w.name, {
      name: w.name,
      ...(typeof w.description === 'string' && w.description ? { description: w.description } : {}),
      nodes,
    });
  }
  if (problems.length > 0 || !valid)
    throw new AgentReachError('WORKFLOWS_INVALID', problems.join('\n'), { details: problems });
  return {
    workflows: deepFreeze(workflows),
    document: deepFreeze(structuredClone(list as WorkflowDocument[])),
  };
}

/**
 * One node's checks beyond the schema, each on a field only when it is well formed (the schema reports it
 * otherwise); the node with its defaults filled in.
 */
function checkNode(
  n: Record<string, unknown> & { id: string },
  here: string,
  known: {
    agents: ReadonlySet<string>;
    allowedModels: ReadonlySet<string> | undefined;
    ids: ReadonlySet<string>;
  },
  problems: string[],
): WorkflowNodeSpec {
  const agent = typeof n.agent === 'string' ? n.agent : '';
  if (typeof n.agent === 'string' && !known.agents.has(agent)) {
    const guess = closestName(agent, known.agents);
    problems.push(
      `${here}: agent "${agent}" is not declared in the agents file${guess ? ` (did you mean "${guess}"?)` : ''}`,
    );
  }
  const model = typeof n.model === 'string' && n.model ? n.model : undefined;
  if (model !== undefined && known.allowedModels && !known.allowedModels.has(model)) {
    const guess = closestName(model, known.allowedModels);
    problems.push(
      `${here}: model "${model}" is not an allowed model (ALLOWED_MODELS: ${[...known.allowedModels].join(', ')})${guess ? ` (did you mean "${guess}"?)` : ''}`,
    );
  }
  const dependsOn = Array.isArray(n.depends_on)
    ? n.depends_on.filter((d): d is string => typeof d === 'string')
    : [];
  dependsOn.forEach((d, j) => {
    if (d === n.id) problems.push(`${here}: depends_on[${j}] "${d}" is the node itself`);
    else if (!known.ids.has(d)) {
      const guess = closestName(d, known.ids);
      problems.push(
        `${here}: depends_on[${j}] "${d}" is not a node of this workflow${guess ? ` (did you mean "${guess}"?)` : ''}`,
      );
    }
  });
  const written = typeof n.input === 'string' ? n.input : undefined;
  const input = written ?? (dependsOn.length === 0 ? '{{request}}' : undefined);
  if (input === undefined && n.input === undefined)
    problems.push(`${here}: input is required for a node with dependencies (a template over their outputs)`);
  const refs = templateRefs(input ?? '');
  for (const expr of refs.unknown)
    problems.push(
      `${here}: input uses "{{${expr}}}"; a template may use {{request}}, {{nodes.ID.output}} and {{nodes.ID.output.FIELD}}`,
    );
  const schema = isSchemaObject(n.output_schema) ? n.output_schema : undefined;
  for (const problem of schema ? outputSchemaProblems(schema) : [])
    problems.push(`${here}: output_schema ${problem}`);
  for (const ref of refs.nodes)
    if (!dependsOn.includes(ref))
      problems.push(`${here}: input uses nodes.${ref}.output but "${ref}" is not in depends_on`);
  return {
    id: n.id,
    agent,
    input: input ?? '',
    depends_on: dependsOn,
    timeout_ms: typeof n.timeout_ms === 'number' ? n.timeout_ms : DEFAULT_WORKFLOW_NODE_TIMEOUT_MS,
    on_timeout: (n.on_timeout as OnTimeout | undefined) ?? 'abort',
    ...(model ? { model } : {}),
    ...(schema ? { output_schema: schema } : {}),
  };
}

const isSchemaObject = (v: unknown): v is OutputSchema =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Fields of dependencies' outputs that the templates of a workflow's nodes address but that cannot be
 * there: the dependency's schema (its own, else its agent's) has no such field, or it declares none.
 */
function fieldProblems(
  nodes: readonly WorkflowNodeSpec[],
  at: string,
  agentSchemas: ReadonlyMap<string, OutputSchema> | undefined,
): string[] {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const problems: string[] = [];
  for (const node of nodes) {
    for (const ref of templateRefs(node.input).fields) {
      const dep = byId.get(ref.node);
      if (!dep || !node.depends_on.includes(ref.node)) continue;
      const schema = dep.output_schema ?? agentSchemas?.get(dep.agent);
      const expr = `nodes.${ref.node}.output.${ref.path.join('.')}`;
      if (!schema) {
        if (agentSchemas !== undefined)
          problems.push(
            `${at}: node "${node.id}": input uses ${expr} but node "${ref.node}" declares no output schema (output_schema on the node or on its agent "${dep.agent}"), so its output has no fields`,
          );
        continue;
      }
      const why = outputPathProblem(schema, ref.path);
      if (why)
        problems.push(
          `${at}: node "${node.id}": input uses ${expr} but the output schema of node "${ref.node}" cannot have it: ${why}`,
        );
    }
  }
  return problems;
}

/** The schema's problems, each naming the file, the workflow, the node and the field. */
function schemaProblems(list: readonly unknown[], file: string): string[] {
  const where = (w: string | undefined, n: string | undefined) => {
    const wf = w === undefined ? undefined : (list[Number(w)] as { name?: unknown; nodes?: unknown } | null);
    const wName = typeof wf?.name === 'string' ? `workflow "${wf.name}"` : `workflows[${w}]`;
    if (n === undefined) return wName;
    const node = Array.isArray(wf?.nodes) ? (wf.nodes[Number(n)] as { id?: unknown } | null) : undefined;
    return `${wName}: ${typeof node?.id === 'string' ? `node "${node.id}"` : `nodes[${n}]`}`;
  };
  const problems: string[] = [];
  const seen = new Set<string>();
  const errors = validateWorkflows.errors ?? [];
  const misspelt = misspeltRequired(errors);
  for (const e of errors) {
    if (repeatsMisspelt(e, misspelt)) continue;
    // oneOf reports each branch and then itself: one line for the field is enough.
    if (e.keyword === 'const' || e.keyword === 'oneOf') {
      if (!/\/on_timeout/.test(e.instancePath)) continue;
    }
    const m = /^\/workflows\/(\d+)(?:\/nodes\/(\d+))?(\/.*)?$/.exec(e.instancePath);
    const field = m ? (m[3]?.slice(1).replace(/\//g, '.') ?? '') : e.instancePath.slice(1) || '(top level)';
    const message =
      field.startsWith('on_timeout') || e.keyword === 'oneOf'
        ? 'must be "abort" or { default: TEXT }'
        : describeSchemaError(e);
    const sep = e.keyword === 'additionalProperties' && field ? ': ' : ' ';
    const line = `${file}: ${m ? `${where(m[1], m[2])}: ` : ''}${field ? `${field}${sep}` : ''}${message}`;
    if (!seen.has(line)) problems.push(line);
    seen.add(line);
  }
  return problems;
}

/**
 * Where a configuration's workflows file is, whether or not it exists yet: `WORKFLOWS_FILE` when set, else
 * `workflows.yaml` beside the agents file. A process that follows its files watches this path.
 */
export function workflowsPathOf(config: { agentsFile: string; workflowsFile?: string | undefined }): string {
  return config.workflowsFile || path.join(path.dirname(config.agentsFile), 'workflows.yaml');
}

/**
 * The workflows file a configuration names (`WORKFLOWS_FILE` when set, else `workflows.yaml` beside the
 * agents file) when it exists; undefined when there is none (then no workflow is declared). An optional
 * file that does not exist declares nothing, named or not (docs/configuration.md, Optional files).
 */
export function workflowsFileOf(config: {
  agentsFile: string;
  workflowsFile?: string | undefined;
}): string | undefined {
  const file = workflowsPathOf(config);
  return existsSync(file) ? file : undefined;
}

/** Reads and checks a workflows file (see `parseWorkflows`); no file means no workflows. */
export function loadWorkflows(
  file: string | undefined,
  knownAgents: Iterable<string>,
  options: WorkflowCheckOptions = {},
): WorkflowsFile {
  if (file === undefined) return { workflows: new Map(), document: [] };
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new AgentReachError(
      'WORKFLOWS_INVALID',
      `${file}: cannot read workflows file: ${(err as Error).message}`,
    );
  }
  return parseWorkflows(text, file, knownAgents, options);
}
