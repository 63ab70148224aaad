import type { EvalFailure } from '@agent-reach/protocol';
import type { Ajv } from './ajv.js';
import { matchersProblems } from './matchers.js';
import type { RunFacts } from './run-facts.js';
import type { Expectations } from './types.js';

/** The deterministic checks of one attempt: what failed, and whether its tool expectations held. */
export interface Score {
  failures: EvalFailure[];
  /** Undefined when the case expects nothing of its tools. */
  toolsSelected: boolean | undefined;
}

const TOOL_CHECKS = new Set(['tools_called', 'tools_in_order', 'tools_not_called', 'arguments']);

/** Checks a run's facts against a case's expectations (docs/evals.md: each check's exact meaning). */
export function scoreRun(e: Expectations, f: RunFacts, ajv: Ajv): Score {
  const failures: EvalFailure[] = [];
  const fail = (check: string, message: string) => failures.push({ check, message });
  const reached = new Set(f.reached);
  const missing = (e.tools_called ?? []).filter((t) => !reached.has(t));
  if (missing.length) fail('tools_called', `not called: ${missing.join(', ')} (called: ${list(f.reached)})`);
  if (e.tools_in_order && !isSubsequence(e.tools_in_order, f.reached))
    fail(
      'tools_in_order',
      `expected ${e.tools_in_order.join(' → ')} in that order, called ${list(f.reached, ' → ')}`,
    );
  const attempted = new Set(f.calls.map((c) => c.tool));
  const unwanted = (e.tools_not_called ?? []).filter((t) => attempted.has(t));
  if (unwanted.length) fail('tools_not_called', `called: ${unwanted.join(', ')}`);
  for (const [tool, ms] of Object.entries(e.arguments ?? {})) {
    const calls = f.calls.filter((c) => c.tool === tool && !c.errorKind);
    if (calls.length === 0) {
      fail('arguments', `${tool}: no successful call to check`);
      continue;
    }
    const problems = calls.map((c) => matchersProblems(c.args, ms, ajv));
    if (problems.every((p) => p.length > 0))
      fail('arguments', `${tool}: no call matched: ${(problems.at(-1) ?? []).join('; ')}`);
  }
  if (e.status && f.status !== e.status) fail('status', `status ${f.status}, expected ${e.status}`);
  if (e.reason && f.reason !== e.reason) fail('reason', `reason ${f.reason ?? 'none'}, expected ${e.reason}`);
  checkOutput(e, f, ajv, fail);
  checkAnswer(e, f, fail);
  const over = (check: string, value: number, max: number | undefined, unit: string) => {
    if (max !== undefined && value > max) fail(check, `${value} ${unit}, at most ${max} allowed`);
  };
  over('max_steps', f.steps, e.max_steps, 'steps');
  over('max_tokens', f.tokens, e.max_tokens, 'tokens');
  over('max_cost', f.cost, e.max_cost, 'in cost');
  over('max_latency_ms', f.latencyMs, e.max_latency_ms, 'ms');
  const expectsTools = [...TOOL_CHECKS].some((k) => e[k as keyof Expectations] !== undefined);
  return {
    failures,
    toolsSelected: expectsTools ? !failures.some((x) => TOOL_CHECKS.has(x.check)) : undefined,
  };
}

function checkOutput(e: Expectations, f: RunFacts, ajv: Ajv, fail: (c: string, m: string) => void) {
  if (!e.output) return;
  if (f.output === undefined) return fail('output', 'the run has no structured output');
  if (e.output.schema) {
    const validate = ajv.compile(e.output.schema);
    if (!validate(f.output)) fail('output', `does not match the schema: ${ajv.errorsText(validate.errors)}`);
  }
  const problems = e.output.fields ? matchersProblems(f.output, e.output.fields, ajv) : [];
  if (problems.length) fail('output', problems.join('; '));
}

function checkAnswer(e: Expectations, f: RunFacts, fail: (c: string, m: string) => void) {
  if (!e.answer) return;
  const answer = f.answer ?? '';
  for (const s of e.answer.contains ?? [])
    if (!answer.includes(s)) fail('answer_contains', `the answer does not contain ${JSON.stringify(s)}`);
  for (const r of e.answer.regex ?? [])
    if (!new RegExp(r, 'u').test(answer)) fail('answer_regex', `the answer does not match /${r}/`);
  for (const s of e.answer.not_contains ?? [])
    if (answer.includes(s)) fail('answer_not_contains', `the answer contains ${JSON.stringify(s)}`);
}

/** Whether `want` appears in `seq` in order, other items allowed between. */
export function isSubsequence(want: readonly string[], seq: readonly string[]): boolean {
  let i = 0;
  for (const s of seq) if (s === want[i]) i++;
  return i === want.length;
}

const list = (tools: string[], sep = ', ') => (tools.length ? tools.join(sep) : 'none');
