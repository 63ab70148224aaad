import { readFile } from 'node:fs/promises';
import path from 'node:path';
import safeRegex from 'safe-regex2';
import { LineCounter, parseDocument, isNode } from 'yaml';
import { createAjv, errorLines, schemaProblem, type Ajv } from './ajv.js';
import { EVAL_REGEX_MAX_QUANTIFIERS } from './constants.js';
import { CASE_SCHEMA, DATASET_SCHEMA } from './dataset-schema.js';
import { EvalInputError } from './errors.js';
import type { Dataset, EvalCase, Expectations, JudgeSpec, Matcher, MatchersByPath } from './types.js';

/** Options of {@link parseDataset}. */
export interface DatasetOptions {
  /** The agent of cases that name none (the command's `--agent`); the dataset's own `agent` wins over it. */
  agent?: string;
}

/** Reads and checks a dataset file (`.jsonl`: one case a line; anything else: YAML or JSON). */
export async function loadDataset(file: string, options: DatasetOptions = {}): Promise<Dataset> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new EvalInputError([`${file}: cannot read the dataset: ${(err as Error).message}`]);
  }
  return parseDataset(text, file, options);
}

/** A dataset from its text; an {@link EvalInputError} naming the case, field and line of every problem. */
export function parseDataset(text: string, file: string, options: DatasetOptions = {}): Dataset {
  const name = path.basename(file).replace(/\.(jsonl|ya?ml|json)$/i, '');
  const raw = file.toLowerCase().endsWith('.jsonl') ? parseJsonl(text, file) : parseYaml(text, file);
  const ajv = createAjv();
  const problems = [...raw.problems];
  const doc = raw.value as { name?: string; agent?: string; judge?: JudgeSpec; cases?: unknown[] };
  if (problems.length === 0) {
    const validate = ajv.compile<unknown>((raw.jsonl ? CASE_SCHEMA : DATASET_SCHEMA) as object);
    if (raw.jsonl) {
      (doc.cases ?? []).forEach((c, i) => {
        if (!validate(c)) problems.push(...located(raw, validate.errors, `/cases/${i}`, c, file, i));
      });
    } else if (!validate(doc)) problems.push(...located(raw, validate.errors, '', doc, file));
  }
  if (problems.length > 0) throw new EvalInputError(problems);
  const agent = doc.agent ?? options.agent;
  const cases = (doc.cases ?? []).map((c) => normalizeCase(c as RawCase, agent, doc.judge));
  problems.push(...semanticProblems(cases, ajv, file, raw));
  if (problems.length > 0) throw new EvalInputError(problems);
  return { name: doc.name ?? name, cases };
}

interface Parsed {
  value: unknown;
  problems: string[];
  jsonl: boolean;
  /** Line (1-based) of the node at a JSON pointer's segments, when known. */
  lineOf: (segments: string[]) => number | undefined;
}

function parseYaml(text: string, file: string): Parsed {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, uniqueKeys: true });
  const problems = doc.errors.map(
    (e) => `${file}: line ${e.linePos?.[0].line ?? '?'}: ${e.message.split('\n')[0]}`,
  );
  const lineOf = (segments: string[]) => {
    for (let n = segments.length; n >= 0; n--) {
      const node = doc.getIn(
        segments.slice(0, n).map((s) => (/^\d+$/.test(s) ? Number(s) : s)),
        true,
      );
      if (isNode(node) && node.range) return lineCounter.linePos(node.range[0]).line;
    }
    return undefined;
  };
  const value: unknown = problems.length ? undefined : doc.toJS();
  if (!problems.length && (value === null || typeof value !== 'object' || Array.isArray(value)))
    problems.push(`${file}: the dataset must be a mapping with a "cases" list`);
  return { value, problems, jsonl: false, lineOf };
}

function parseJsonl(text: string, file: string): Parsed {
  const problems: string[] = [];
  const cases: unknown[] = [];
  const lines: number[] = [];
  text.split('\n').forEach((line, i) => {
    if (!line.trim()) return;
    try {
      cases.push(JSON.parse(line));
      lines.push(i + 1);
    } catch (err) {
      problems.push(`${file}: line ${i + 1}: not JSON: ${(err as Error).message}`);
    }
  });
  if (!problems.length && cases.length === 0) problems.push(`${file}: no case in the file`);
  return {
    value: { cases },
    problems,
    jsonl: true,
    lineOf: (segments) => (segments[0] === 'cases' ? lines[Number(segments[1])] : undefined),
  };
}

/** ajv's errors as sentences naming the case (by id when it has one), the field and the line. */
function located(
  raw: Parsed,
  errors: Parameters<typeof errorLines>[0],
  prefix: string,
  value: unknown,
  file: string,
  index?: number,
): string[] {
  return errorLines(errors).map(({ path: pointer, message }) => {
    const segments = `${prefix}${pointer}`.split('/').slice(1).map(unescapePointer);
    return `${file}: ${where(raw, segments, value, index)}: ${message}`;
  });
}

function where(raw: Parsed, segments: string[], value: unknown, index?: number): string {
  const line = raw.lineOf(segments);
  const at = line === undefined ? '' : ` (line ${line})`;
  if (segments[0] !== 'cases' || segments.length < 2) return `${segments.join('.') || 'dataset'}${at}`;
  const i = Number(segments[1]);
  const c = index === undefined ? (value as { cases?: unknown[] }).cases?.[i] : value;
  const id = (c as { id?: unknown } | undefined)?.id;
  const field = segments.slice(2).join('.') || '(the case)';
  return `case ${typeof id === 'string' ? `"${id}"` : `#${i + 1}`}${at}: ${field}`;
}

const unescapePointer = (s: string) => s.replace(/~1/g, '/').replace(/~0/g, '~');

type RawCase = Omit<EvalCase, 'agent' | 'expect'> & {
  agent?: string;
  expect?: Omit<Expectations, 'answer' | 'arguments' | 'output'> & {
    answer?: Record<string, string | string[]>;
    arguments?: Record<string, Record<string, unknown>>;
    output?: { schema?: Record<string, unknown>; fields?: Record<string, unknown> };
  };
};

const list = (v: string | string[] | undefined) => (v === undefined ? undefined : [v].flat());

/** A matcher's short form (a scalar) as `{ equals }`. */
function matcher(v: unknown): Matcher {
  return v !== null && typeof v === 'object' ? (v as Matcher) : { equals: v };
}

function matchers(m: Record<string, unknown> | undefined): MatchersByPath | undefined {
  if (!m) return undefined;
  return Object.fromEntries(Object.entries(m).map(([k, v]) => [k, matcher(v)]));
}

function normalizeCase(c: RawCase, agent: string | undefined, judge: JudgeSpec | undefined): EvalCase {
  const e = c.expect ?? {};
  const answer = e.answer
    ? {
        ...(e.answer.contains ? { contains: list(e.answer.contains) } : {}),
        ...(e.answer.regex ? { regex: list(e.answer.regex) } : {}),
        ...(e.answer.not_contains ? { not_contains: list(e.answer.not_contains) } : {}),
      }
    : undefined;
  const args = e.arguments
    ? Object.fromEntries(Object.entries(e.arguments).map(([t, m]) => [t, matchers(m) ?? {}]))
    : undefined;
  const output = e.output
    ? {
        ...(e.output.schema ? { schema: e.output.schema } : {}),
        ...(e.output.fields ? { fields: matchers(e.output.fields) } : {}),
      }
    : undefined;
  const caseJudge = c.judge ?? judge;
  return {
    ...c,
    agent: c.agent ?? agent ?? '',
    expect: {
      ...e,
      ...(answer ? { answer } : {}),
      ...(args ? { arguments: args } : {}),
      ...(output ? { output } : {}),
    } as Expectations,
    ...(caseJudge ? { judge: caseJudge } : {}),
  };
}

/** What the schema cannot say: unique ids, an agent for every case, regexes and schemas that compile. */
function semanticProblems(cases: EvalCase[], ajv: Ajv, file: string, raw: Parsed): string[] {
  const problems: string[] = [];
  const seen = new Map<string, number>();
  cases.forEach((c, i) => {
    const at = (field: string) => {
      const line = raw.lineOf(['cases', String(i), ...field.split('.')]);
      return `${file}: case "${c.id}"${line === undefined ? '' : ` (line ${line})`}: ${field}`;
    };
    if (seen.has(c.id))
      problems.push(`${at('id')}: the id of case #${(seen.get(c.id) ?? 0) + 1} too; ids are unique`);
    seen.set(c.id, i);
    if (!c.agent)
      problems.push(`${at('agent')}: no agent (give the case or the dataset an agent, or --agent)`);
    const regexes: [string, string][] = [
      ...(c.expect.answer?.regex ?? []).map((r): [string, string] => ['expect.answer.regex', r]),
      ...matcherEntries(c.expect).flatMap(([field, m]) =>
        m.regex ? [[`${field}.regex`, m.regex] as [string, string]] : [],
      ),
    ];
    for (const [field, r] of regexes) {
      const problem = regexProblem(r);
      if (problem) problems.push(`${at(field)}: ${problem}`);
    }
    const schemas: [string, unknown][] = [
      ...(c.output_schema ? [['output_schema', c.output_schema] as [string, unknown]] : []),
      ...(c.expect.output?.schema
        ? [['expect.output.schema', c.expect.output.schema] as [string, unknown]]
        : []),
      ...matcherEntries(c.expect).flatMap(([field, m]) =>
        m.schema ? [[`${field}.schema`, m.schema] as [string, unknown]] : [],
      ),
    ];
    for (const [field, s] of schemas) {
      const p = schemaProblem(ajv, s);
      if (p) problems.push(`${at(field)}: ${p}`);
    }
    for (const [field, m] of matcherEntries(c.expect))
      if (m.min !== undefined && m.max !== undefined && m.min > m.max)
        problems.push(`${at(field)}: min ${m.min} is above max ${m.max}`);
    const both = (c.expect.tools_called ?? []).filter((t) => c.expect.tools_not_called?.includes(t));
    if (both.length)
      problems.push(`${at('expect.tools_not_called')}: ${both.join(', ')} also in tools_called`);
  });
  return problems;
}

/** Every matcher of a case's expectations with its field path. */
function matcherEntries(e: Expectations): [string, Matcher][] {
  return [
    ...Object.entries(e.arguments ?? {}).flatMap(([tool, ms]) =>
      Object.entries(ms).map(([p, m]): [string, Matcher] => [`expect.arguments.${tool}.${p}`, m as Matcher]),
    ),
    ...Object.entries(e.output?.fields ?? {}).map(([p, m]): [string, Matcher] => [
      `expect.output.fields.${p}`,
      m as Matcher,
    ]),
  ];
}

/**
 * What is wrong with a dataset's regular expression: one that does not compile, or one that may take
 * exponential time on some answers (a quantifier over a group that holds another, as in `(a+)+$`, or more
 * than `EVAL_REGEX_MAX_QUANTIFIERS` quantifiers), which would hold the command for minutes on one answer.
 */
function regexProblem(pattern: string): string | undefined {
  let re: RegExp;
  try {
    re = new RegExp(pattern, 'u');
  } catch (err) {
    return `not a regular expression: ${(err as Error).message}`;
  }
  if (safeRegex(re, { limit: EVAL_REGEX_MAX_QUANTIFIERS })) return undefined;
  return (
    `regex /${pattern}/ may take exponential time on some answers (a quantifier over a group that holds ` +
    `another, such as (a+)+, or more than ${EVAL_REGEX_MAX_QUANTIFIERS} quantifiers): rewrite it without ` +
    'nested quantifiers, e.g. (a+)+ as a+'
  );
}
