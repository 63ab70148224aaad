import { randomBytes } from 'node:crypto';
import {
  AgentReachApiError,
  type AgentReachClient,
  type CreateRunInput,
  type Run,
} from '@agent-reach/client';
import type { EvalAttempt, EvalReport, EvalVariantResult } from '@agent-reach/protocol';
import { createAjv, type Ajv } from './ajv.js';
import { DEFAULT_EVAL_CONCURRENCY, DEFAULT_RUN_TIMEOUT_MS } from './constants.js';
import { EvalInputError, EvalInterrupted } from './errors.js';
import { judgeAnswer } from './judge.js';
import { comparisons, variantMetrics } from './metrics.js';
import { runFacts } from './run-facts.js';
import { taskCompletion } from './task-completion.js';
import { scoreRun } from './scorer.js';
import { waitForEndOrApproval } from './wait-run.js';
import type { Dataset, EvalCase, EvalVariant } from './types.js';

/** Options of {@link runEval}; all optional but the client, dataset and variants. */
export interface RunEvalOptions {
  client: AgentReachClient;
  dataset: Dataset;
  /** The first is the baseline the others are compared with. */
  variants: EvalVariant[];
  /** Runs of each case per variant. Default 1. */
  repeat?: number;
  /** Attempts in flight at once. Default 4. */
  concurrency?: number;
  /** The eval's id (the runs' `eval` metadata). Default: a new `ev_…` id. */
  id?: string;
  /** How long one run may take before its attempt fails, in ms. Default 10 minutes. */
  runTimeoutMs?: number;
  /** Stops the eval: no attempt starts after it, the runs in flight are cancelled ({@link EvalInterrupted}). */
  signal?: AbortSignal;
  /** Hears of each finished attempt. */
  onAttempt?: (a: { variant: string; case: string; attempt: EvalAttempt }) => void;
}

/** A new eval id: `ev_` and 16 hex digits. */
export const newEvalId = (): string => `ev_${randomBytes(8).toString('hex')}`;

interface Task {
  variant: EvalVariant;
  caseIndex: number;
  c: EvalCase;
  repeat: number;
}

interface RunContext {
  client: AgentReachClient;
  id: string;
  ajv: Ajv;
  runTimeoutMs: number;
  signal: AbortSignal | undefined;
  /** Runs cancelled because the eval was stopped. */
  interrupted: number;
}

/**
 * Runs every case of a dataset as ordinary runs of the fleet, per variant and repeat, `concurrency` at a
 * time, and returns the report with its metrics and comparisons. A request the platform refuses as
 * malformed or not allowed (4xx) stops the eval with an {@link EvalInputError}; anything else fails only
 * its attempt.
 */
export async function runEval(o: RunEvalOptions): Promise<EvalReport> {
  const ctx: RunContext = {
    client: o.client,
    id: o.id ?? newEvalId(),
    ajv: createAjv(),
    runTimeoutMs: o.runTimeoutMs ?? DEFAULT_RUN_TIMEOUT_MS,
    signal: o.signal,
    interrupted: 0,
  };
  const repeat = o.repeat ?? 1;
  const concurrency = o.concurrency ?? DEFAULT_EVAL_CONCURRENCY;
  const startedAt = new Date().toISOString();
  // Variants interleaved case by case, so that a drift of the fleet over time weighs on each alike.
  const tasks: Task[] = o.dataset.cases.flatMap((c, caseIndex) =>
    Array.from({ length: repeat }, (_, r) =>
      o.variants.map((variant) => ({ variant, caseIndex, c, repeat: r })),
    ).flat(),
  );
  const results = new Map<string, EvalAttempt[]>();
  const key = (variant: string, caseIndex: number) => `${variant}\u0000${caseIndex}`;
  let next = 0;
  let fatal: unknown;
  const worker = async () => {
    while (fatal === undefined && !o.signal?.aborted && next < tasks.length) {
      const t = tasks[next++] as Task;
      try {
        const attempt = await runAttempt(ctx, t);
        const k = key(t.variant.name, t.caseIndex);
        results.set(k, [...(results.get(k) ?? []), attempt]);
        o.onAttempt?.({ variant: t.variant.name, case: t.c.id, attempt });
      } catch (err) {
        fatal ??= err;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, tasks.length) }, worker));
  if (o.signal?.aborted) throw new EvalInterrupted(ctx.interrupted);
  if (fatal !== undefined) throw fatal;
  const variants: EvalVariantResult[] = o.variants.map((v) => {
    const cases = o.dataset.cases.map((c, i) => ({ id: c.id, attempts: results.get(key(v.name, i)) ?? [] }));
    return { name: v.name, overrides: v.overrides, metrics: variantMetrics(cases), cases };
  });
  return {
    id: ctx.id,
    dataset: { name: o.dataset.name, cases: o.dataset.cases.length, agents: agentsOf(o.dataset) },
    started_at: startedAt,
    finished_at: new Date().toISOString(),
    repeat,
    concurrency,
    variants,
    comparisons: comparisons(variants),
  };
}

/** The agents an eval's runs are of: its cases' and their judges'. */
function agentsOf(d: Dataset): string[] {
  return [...new Set(d.cases.flatMap((c) => [c.agent, ...(c.judge ? [c.judge.agent] : [])]))].sort();
}

/** The run request of a case under a variant: its tags, and the variant's model as the run's model. */
export function runRequest(id: string, t: Task): CreateRunInput {
  const { model, ...overrides } = t.variant.overrides;
  const c = t.c;
  const runModel = typeof model === 'string' ? model : c.model;
  return {
    agent: c.agent,
    input: c.input,
    metadata: { ...c.metadata, eval: id, eval_variant: t.variant.name, eval_case: c.id },
    ...(runModel ? { model: runModel } : {}),
    ...(c.grants ? { grants: c.grants } : {}),
    ...(c.output_schema ? { outputSchema: c.output_schema } : {}),
    ...(Object.keys(overrides).length > 0 ? { variant: { name: t.variant.name, overrides } } : {}),
  };
}

async function runAttempt(ctx: RunContext, t: Task): Promise<EvalAttempt> {
  const request = runRequest(ctx.id, t);
  let run: Run;
  let started = '';
  try {
    run = await startAndWait(ctx, request, t, (id) => (started = id));
  } catch (err) {
    if (ctx.signal?.aborted) {
      if (started) {
        ctx.interrupted++;
        await ctx.client.cancel(started).catch(() => undefined);
      }
      throw err;
    }
    if (err instanceof AgentReachApiError && err.status >= 400 && err.status < 500)
      throw new EvalInputError([
        `case "${t.c.id}", variant "${t.variant.name}": the platform refused the run: ${describeApiError(err)}`,
      ]);
    // A run the eval gave up on is cancelled, so that it stops holding the tenant's quota.
    if (started && err instanceof AgentReachApiError && err.code === 'TIMEOUT')
      await ctx.client.cancel(started).catch(() => undefined);
    return failedAttempt(err, started);
  }
  const facts = runFacts(run);
  const score = scoreRun(t.c.expect, facts, ctx.ajv);
  const tasks = taskCompletion(t.c.expect, facts);
  const attempt: EvalAttempt = {
    run_id: run.run_id,
    passed: score.failures.length === 0,
    failures: score.failures,
    steps: facts.steps,
    tokens: facts.tokens,
    cost: facts.cost,
    latency_ms: facts.latencyMs,
    facts: {
      status: facts.status,
      ...(facts.reason ? { reason: facts.reason } : {}),
      tools: facts.reached,
      ...(score.toolsSelected === undefined ? {} : { tools_selected: score.toolsSelected }),
      validatable_calls: facts.validatable,
      valid_first_try: facts.validFirstTry,
      invalid_args: facts.invalidArgs,
      self_healed: facts.selfHealed,
      unknown_tool_calls: facts.unknownTools,
      forbidden_calls: facts.forbidden,
      tasks_complete: tasks.complete,
      ...(tasks.open.length ? { open_tasks: tasks.open.slice(0, 20) } : {}),
    },
  };
  // Deterministic checks first: a judge is asked only about an answer that passed them, and never
  // turns a failed check into a pass.
  if (attempt.passed && t.c.judge) {
    const verdict = await judgeAnswer(ctx.client, t.c, t.c.judge, facts.answer ?? '', request.metadata ?? {});
    attempt.judge = { score: verdict.score, reason: verdict.reason };
    if (verdict.failure) {
      attempt.passed = false;
      attempt.failures.push(verdict.failure);
    }
  }
  return attempt;
}

/** Runs the case's session history (if any), then its request; the finished run. */
async function startAndWait(
  ctx: RunContext,
  request: CreateRunInput,
  t: Task,
  onStarted: (runId: string) => void,
): Promise<Run> {
  const wait = async (run: Run) => {
    onStarted(run.run_id);
    const end = await waitForEndOrApproval(ctx.client, run.run_id, ctx.runTimeoutMs, ctx.signal);
    // A parked run has no one to approve it: it is cancelled, so it stops holding the tenant's quota.
    if (end.status === 'awaiting_approval') await ctx.client.cancel(end.run_id).catch(() => undefined);
    return end;
  };
  const idempotencyKey = `${ctx.id}:${t.variant.name}:${t.caseIndex}:${t.repeat}`;
  if (!t.c.history?.length) return wait(await ctx.client.createRun({ ...request, idempotencyKey }));
  const { session_id } = await ctx.client.createSession();
  for (const input of t.c.history)
    await wait(await ctx.client.sendMessage(session_id, { ...request, input }));
  return wait(await ctx.client.sendMessage(session_id, request));
}

/** An API error with its details (the field and the property it names), as one line. */
export function describeApiError(err: AgentReachApiError): string {
  const details = (err.details ?? []).flatMap((d) => {
    const { path, property, message } = (d ?? {}) as { path?: string; property?: string; message?: string };
    const where = [path, property && `"${property}"`].filter(Boolean).join(' ');
    return message || where ? [`${where}${where && message ? ': ' : ''}${message ?? ''}`] : [];
  });
  return `${err.code}: ${err.message}${details.length ? ` (${details.join('; ')})` : ''}`;
}

/** An attempt whose run could not be started or did not finish in time (`runId`: the run, if started). */
function failedAttempt(err: unknown, runId: string): EvalAttempt {
  const message = err instanceof Error ? err.message : String(err);
  const code = err instanceof AgentReachApiError ? err.code : 'ERROR';
  return {
    run_id: runId,
    passed: false,
    failures: [{ check: code === 'TIMEOUT' ? 'run_timeout' : 'run_error', message: `${code}: ${message}` }],
    steps: 0,
    tokens: 0,
    cost: 0,
    latency_ms: 0,
    facts: {
      status: 'error',
      tools: [],
      validatable_calls: 0,
      valid_first_try: 0,
      invalid_args: 0,
      self_healed: 0,
      unknown_tool_calls: 0,
      forbidden_calls: 0,
      error: message,
    },
  };
}
