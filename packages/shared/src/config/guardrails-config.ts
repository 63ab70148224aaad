/**
 * An agent's guardrails: checks on its request (`input`), its final answer (`output`) and its tool calls'
 * arguments and results (`tool`). Parsed as part of the agents document (see `agents.ts`), checked here;
 * the loop runs them (scheduler `agent-loop/guardrails*.ts`). Reference: docs/guardrails.md.
 */
import { NAME_PATTERN } from '@agent-reach/protocol';
import safeRegex from 'safe-regex2';
import { closestName } from '../tools/suggest.js';
import { GUARDRAIL_REGEX_MAX_QUANTIFIERS } from '../constants.js';
import { agentToolName } from './agent-tools-config.js';

/** PII detectors of the `pii` check. */
export const PII_DETECTORS = ['email', 'phone', 'cn_id', 'card'] as const;
export type PiiDetector = (typeof PII_DETECTORS)[number];

/** What a guardrail does when its check fails or times out. */
export type GuardrailOnError = 'fail_closed' | 'fail_open';

/** Which part of a tool call a tool guardrail checks. */
export type ToolGuardrailStage = 'arguments' | 'result' | 'both';

/** The kinds of check, exactly one of which a guardrail declares. */
export const GUARDRAIL_CHECKS = ['max_length', 'blocked_terms', 'regex', 'pii', 'tool', 'agent'] as const;
export type GuardrailCheck = (typeof GUARDRAIL_CHECKS)[number];

/** One guardrail: a name, exactly one check, and what to do when the check itself fails. */
export interface GuardrailSpec {
  /** Unique among the agent's guardrails; the metric's and the events' label. */
  readonly name: string;
  /** Trips when the text is longer than this many characters. */
  readonly max_length?: number;
  /** Trips when the text holds one of these terms (case-insensitive, after Unicode NFKC folding). */
  readonly blocked_terms?: readonly string[];
  /** Trips when this regular expression (JavaScript syntax) matches the text. */
  readonly regex?: string | { readonly pattern: string; readonly flags?: string };
  /** Trips when one of these detectors finds PII. `[]` is refused: list them (or use `all`). */
  readonly pii?: readonly (PiiDetector | 'all')[];
  /** A tool of the fleet that returns `{tripped, reason?}` (called with `{text, stage, tool?}`). */
  readonly tool?: string;
  /** An agent of this file asked, in one model call, for a verdict `{tripped, reason}` on the text. */
  readonly agent?: string;
  /** Default `fail_closed`: a check that fails or times out counts as tripped. */
  readonly on_error?: GuardrailOnError;
  /** Time the check may take, in ms (tool and agent checks). Default `DEFAULT_GUARDRAIL_TIMEOUT_MS`. */
  readonly timeout_ms?: number;
  /**
   * Input guardrails only: run beside the first model call instead of before it (its answer is discarded
   * when this trips). Default: the `guardrails.run_in_parallel` of the agent, else false (blocking).
   */
  readonly run_in_parallel?: boolean;
}

/** A guardrail on tool calls: the tools it watches (names or `*`/`?` globs) and which stage. */
export interface ToolGuardrailSpec extends GuardrailSpec {
  readonly tools: readonly string[];
  /** Default `both`. */
  readonly stage?: ToolGuardrailStage;
}

/** The `guardrails` field of an agent. */
export interface AgentGuardrails {
  /** Default of the input guardrails' `run_in_parallel`. Default false. */
  readonly run_in_parallel?: boolean;
  readonly input?: readonly GuardrailSpec[];
  readonly output?: readonly GuardrailSpec[];
  readonly tool?: readonly ToolGuardrailSpec[];
}

/** The check a guardrail declares (the first, when the file declares several: the checks refuse that). */
export function guardrailCheck(spec: GuardrailSpec): GuardrailCheck {
  return GUARDRAIL_CHECKS.find((k) => spec[k] !== undefined) ?? 'max_length';
}

/** The detectors a `pii` check runs (`all`: every one). */
export function piiDetectors(spec: GuardrailSpec): PiiDetector[] {
  const listed = spec.pii ?? [];
  return listed.includes('all') ? [...PII_DETECTORS] : (listed as PiiDetector[]);
}

const guardrailProperties = {
  name: { type: 'string', pattern: NAME_PATTERN.source },
  max_length: { type: 'integer', minimum: 1, maximum: 10_000_000 },
  blocked_terms: {
    type: 'array',
    minItems: 1,
    maxItems: 1000,
    items: { type: 'string', minLength: 1, maxLength: 200 },
  },
  regex: {
    oneOf: [
      { type: 'string', minLength: 1, maxLength: 1000 },
      {
        type: 'object',
        additionalProperties: false,
        required: ['pattern'],
        properties: {
          pattern: { type: 'string', minLength: 1, maxLength: 1000 },
          flags: { type: 'string', pattern: '^[imsu]*$' },
        },
      },
    ],
  },
  pii: {
    type: 'array',
    minItems: 1,
    uniqueItems: true,
    items: { enum: [...PII_DETECTORS, 'all'] },
  },
  tool: { type: 'string', minLength: 1 },
  agent: { type: 'string', minLength: 1 },
  on_error: { enum: ['fail_closed', 'fail_open'] },
  timeout_ms: { type: 'integer', minimum: 10, maximum: 600_000 },
} as const;

const guardrailList = (extra: Record<string, unknown> = {}, required: string[] = []) =>
  ({
    type: 'array',
    maxItems: 20,
    items: {
      type: 'object',
      additionalProperties: false,
      required: ['name', ...required],
      properties: { ...guardrailProperties, ...extra },
    },
  }) as const;

/** JSON Schema of an agent's `guardrails` field, merged into the agent's schema. */
export const guardrailsProperties = {
  guardrails: {
    type: 'object',
    additionalProperties: false,
    properties: {
      run_in_parallel: { type: 'boolean' },
      input: guardrailList({ run_in_parallel: { type: 'boolean' } }),
      output: guardrailList(),
      tool: guardrailList(
        {
          tools: { type: 'array', minItems: 1, items: { type: 'string', minLength: 1, maxLength: 200 } },
          stage: { enum: ['arguments', 'result', 'both'] },
        },
        ['tools'],
      ),
    },
  },
} as const;

/** True when `name` matches a tool pattern: a name, or a glob with `*` (any run) and `?` (one character). */
export function toolPatternMatches(pattern: string, name: string): boolean {
  if (!/[*?]/.test(pattern)) return pattern === name;
  const source = pattern
    .split('')
    .map((c) => (c === '*' ? '.*' : c === '?' ? '.' : c.replace(/[.+^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${source}$`).test(name);
}

/** Whether an input guardrail runs beside the first model call: its own setting, else its agent's. */
export function runsInParallel(guardrails: AgentGuardrails | undefined, spec: GuardrailSpec): boolean {
  return spec.run_in_parallel ?? guardrails?.run_in_parallel ?? false;
}

/** The tools of the fleet an agent's guardrails call (executors authorize them for the agent). */
export function guardrailTools(guardrails: AgentGuardrails | undefined): string[] {
  const all = [...(guardrails?.input ?? []), ...(guardrails?.output ?? []), ...(guardrails?.tool ?? [])];
  return all.flatMap((g) => (typeof g?.tool === 'string' ? [g.tool] : []));
}

/**
 * Problems of one agent's guardrails the schema cannot see, each naming the agent, the guardrail and the
 * field: no check or more than one, a name used twice, a regular expression that does not compile, an
 * `agent` check naming no agent of the file (or the agent itself), a tool guardrail's tool that the
 * agent does not have (a glob must match at least one).
 */
export function guardrailProblems(
  spec: { name?: unknown; tools?: unknown; agent_tools?: unknown; guardrails?: unknown },
  where: string,
  agentNames: ReadonlySet<string>,
): string[] {
  const g = spec.guardrails as AgentGuardrails | undefined;
  if (!g || typeof g !== 'object') return [];
  const problems: string[] = [];
  const seen = new Set<string>();
  const tools = [
    ...(Array.isArray(spec.tools) ? spec.tools.filter((t): t is string => typeof t === 'string') : []),
    ...agentToolNamesOf(spec.agent_tools),
  ];
  for (const stage of ['input', 'output', 'tool'] as const) {
    const list = g[stage];
    if (!Array.isArray(list)) continue;
    list.forEach((item: GuardrailSpec | null, i) => {
      if (!item || typeof item !== 'object') return;
      const at = `${where}: guardrails.${stage}[${i}]${typeof item.name === 'string' ? ` "${item.name}"` : ''}`;
      if (typeof item.name === 'string') {
        if (seen.has(item.name)) problems.push(`${at}: name is used by another guardrail of this agent`);
        seen.add(item.name);
      }
      const checks = GUARDRAIL_CHECKS.filter((k) => item[k] !== undefined);
      if (checks.length === 0)
        problems.push(`${at}: declares no check: give exactly one of ${GUARDRAIL_CHECKS.join(', ')}`);
      if (checks.length > 1) problems.push(`${at}: declares ${checks.join(' and ')}: give exactly one check`);
      problems.push(...regexProblems(item, at));
      if (typeof item.agent === 'string') {
        if (item.agent === spec.name) problems.push(`${at}: agent "${item.agent}" is the agent itself`);
        else if (!agentNames.has(item.agent)) {
          const guess = closestName(item.agent, agentNames);
          problems.push(
            `${at}: agent "${item.agent}" is not an agent of this file${guess ? ` (did you mean "${guess}"?)` : ''}`,
          );
        }
      }
      if (stage === 'tool') problems.push(...watchedToolProblems(item as ToolGuardrailSpec, tools, at));
    });
  }
  return problems;
}

/** The tool names of an agent's `agent_tools` as the file writes them (malformed entries are the schema's). */
function agentToolNamesOf(list: unknown): string[] {
  if (!Array.isArray(list)) return [];
  return list.flatMap((t: unknown) => {
    if (typeof t === 'string') return [agentToolName(t)];
    const o = t as { name?: unknown; agent?: unknown } | null;
    if (typeof o?.name === 'string') return [o.name];
    return typeof o?.agent === 'string' ? [agentToolName(o.agent)] : [];
  });
}

/**
 * A pattern that does not compile, or that can backtrack exponentially (a quantifier over a group that
 * holds one, as in `(a+)+$`, or more than `GUARDRAIL_REGEX_MAX_QUANTIFIERS` quantifiers): such a pattern
 * would hold the scheduler's thread for minutes on a crafted text, so the file is refused instead.
 */
function regexProblems(item: GuardrailSpec, at: string): string[] {
  const r = item.regex;
  const pattern = typeof r === 'string' ? r : r?.pattern;
  if (typeof pattern !== 'string') return [];
  let re: RegExp;
  try {
    re = new RegExp(pattern, typeof r === 'object' ? r.flags : undefined);
  } catch (err) {
    return [`${at}: regex does not compile: ${(err as Error).message}`];
  }
  if (safeRegex(re, { limit: GUARDRAIL_REGEX_MAX_QUANTIFIERS })) return [];
  return [
    `${at}: regex /${pattern}/ may take exponential time on some texts (a quantifier over a group that ` +
      `holds another, such as (a+)+, or more than ${GUARDRAIL_REGEX_MAX_QUANTIFIERS} quantifiers): ` +
      'rewrite it without nested quantifiers, e.g. (a+)+ as a+',
  ];
}

function watchedToolProblems(item: ToolGuardrailSpec, tools: string[], at: string): string[] {
  if (!Array.isArray(item.tools)) return [];
  return item.tools.flatMap((pattern, j) => {
    if (typeof pattern !== 'string' || tools.some((t) => toolPatternMatches(pattern, t))) return [];
    const guess = /[*?]/.test(pattern) ? undefined : closestName(pattern, tools);
    return [
      `${at}: tools[${j}] "${pattern}" ${/[*?]/.test(pattern) ? 'matches none' : 'is not one'} of the agent's tools${guess ? ` (did you mean "${guess}"?)` : ''}`,
    ];
  });
}
