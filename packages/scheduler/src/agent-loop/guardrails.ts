import type { GuardrailStage, ToolResult } from '@agent-reach/protocol';
import {
  checkOutput,
  constants,
  guardrailCheck,
  TIMED_OUT,
  waitAtMost,
  type GuardrailSpec,
} from '@agent-reach/shared';
import { agentInCharge } from './run-state.js';
import type { RunContext } from './run-context.js';
import { chargeSideRequest } from './model-usage.js';
import {
  builtinVerdict,
  guardrailCallId,
  verdictKey,
  type GuardrailVerdict,
  type GuardTarget,
} from './guardrail-verdicts.js';

/** A guardrail that stopped something: its spec and its verdict (tripped, or failed under `fail_closed`). */
export interface GuardrailTrip {
  spec: GuardrailSpec;
  verdict: GuardrailVerdict;
}

/** What a trip does at each stage (the event's `action`). */
const ACTIONS = {
  input: 'stopped_run',
  output: 'stopped_run',
  arguments: 'blocked_call',
  result: 'withheld_result',
} as const satisfies Record<GuardrailStage, string>;

/** The verdict an `agent` check's model call must answer with. */
const VERDICT_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['tripped', 'reason'],
  properties: { tripped: { type: 'boolean' }, reason: { type: 'string' } },
} as const;

/**
 * Runs guardrails on one target and returns the first (in declared order) that trips, or fails under
 * `fail_closed`. Built-in checks run first, in this process; the fleet's tools and the agents are asked
 * only when none tripped, all at once. Each verdict is kept in the run's state by guardrail, stage and
 * target, so a resumed run reads it instead of asking again; a trip or a failure is an event.
 */
export async function runGuardrails(
  run: RunContext,
  specs: readonly GuardrailSpec[],
  target: GuardTarget,
): Promise<GuardrailTrip | undefined> {
  const { state } = run;
  const verdicts = (state.guardrailVerdicts ??= {});
  const stops = (spec: GuardrailSpec, v: GuardrailVerdict) =>
    v.verdict === 'tripped' || (v.verdict === 'error' && spec.on_error !== 'fail_open');
  const remote: GuardrailSpec[] = [];
  for (const spec of specs) {
    const known = verdicts[verdictKey(spec, target)];
    if (known) {
      if (stops(spec, known)) return { spec, verdict: known };
      continue;
    }
    const check = guardrailCheck(spec);
    if (check === 'tool' || check === 'agent') {
      remote.push(spec);
      continue;
    }
    const started = performance.now();
    const v = builtinVerdict(spec, target);
    const verdict = decide(run, spec, target, v.tripped ? 'tripped' : 'passed', v.reason, started);
    if (stops(spec, verdict)) return { spec, verdict };
  }
  if (remote.length === 0) return undefined;
  const decided = await askRemote(run, remote, target);
  for (const [i, spec] of remote.entries()) {
    const verdict = decided[i] as GuardrailVerdict;
    if (stops(spec, verdict)) return { spec, verdict };
  }
  return undefined;
}

/** Keeps a verdict in the state and, unless it passed, reports it as an event. */
function decide(
  run: RunContext,
  spec: GuardrailSpec,
  target: GuardTarget,
  verdict: GuardrailVerdict['verdict'],
  reason: string,
  started: number,
  asked: Asked = {},
): GuardrailVerdict {
  const v: GuardrailVerdict = { verdict, reason: reason.slice(0, 1000), at: Date.now(), ...asked };
  (run.state.guardrailVerdicts ??= {})[verdictKey(spec, target)] = v;
  if (verdict === 'passed') return v;
  const open = verdict === 'error' && spec.on_error === 'fail_open';
  run.emit({
    type: 'guardrail',
    guardrail: spec.name,
    stage: target.stage,
    check: guardrailCheck(spec),
    verdict,
    action: open ? 'let_through' : ACTIONS[target.stage],
    reason: v.reason,
    ...(target.toolCallId ? { tool_call_id: target.toolCallId } : {}),
    ...(target.tool ? { tool: target.tool } : {}),
    ...(asked.model ? { model: asked.model } : {}),
    duration_ms: Math.round(performance.now() - started),
  });
  if (verdict === 'error')
    run.log.warn({ guardrail: spec.name, stage: target.stage, reason }, 'guardrail check failed');
  return v;
}

/**
 * Asks the fleet's tools and the guardrail agents, at once. A tool check's call is put in the run's ledger
 * by a checkpoint before it is published (executors run only calls their run recorded); its id comes from
 * the verdict's key, so a resumed run that publishes it again gets its recorded result, not a second run.
 */
async function askRemote(
  run: RunContext,
  specs: GuardrailSpec[],
  target: GuardTarget,
): Promise<GuardrailVerdict[]> {
  const { state } = run;
  const calls = specs.map((spec) =>
    spec.tool === undefined
      ? undefined
      : {
          id: guardrailCallId(`${state.runId}:${verdictKey(spec, target)}`),
          name: spec.tool,
          arguments: JSON.stringify({
            text: target.text,
            stage: target.stage,
            ...(target.tool ? { tool: target.tool } : {}),
          }),
        },
  );
  const toPublish = calls.filter((c) => c !== undefined);
  if (toPublish.length > 0) {
    state.guardrailCalls = toPublish;
    await run.checkpoint('llm_response');
  }
  try {
    return await Promise.all(
      specs.map(async (spec, i) => {
        const started = performance.now();
        const timeoutMs = spec.timeout_ms ?? constants.DEFAULT_GUARDRAIL_TIMEOUT_MS;
        const call = calls[i];
        const answer = await waitAtMost(
          (call ? askTool(run, call, timeoutMs) : askAgent(run, spec, target, timeoutMs)).catch(
            (err: unknown) => ({ error: `the check failed: ${(err as Error)?.message ?? String(err)}` }),
          ),
          timeoutMs,
        );
        const v =
          answer === TIMED_OUT ? { error: `the check gave no verdict within ${timeoutMs} ms` } : answer;
        const asked = 'asked' in v ? v.asked : undefined;
        return 'error' in v
          ? decide(run, spec, target, 'error', v.error, started, asked)
          : decide(run, spec, target, v.tripped ? 'tripped' : 'passed', v.reason, started, asked);
      }),
    );
  } finally {
    delete state.guardrailCalls;
  }
}

/** The model that answered an `agent` check, and the answer's cost when the model has a price. */
type Asked = Pick<GuardrailVerdict, 'model' | 'cost'>;
type Answer = ({ tripped: boolean; reason: string } | { error: string }) & { asked?: Asked };

/** A guardrail tool's verdict: its result's content must be `{tripped: boolean, reason?: string}`. */
async function askTool(
  run: RunContext,
  call: { id: string; name: string; arguments: string },
  timeoutMs: number,
): Promise<Answer> {
  const { state, deps } = run;
  const [result] = await deps.dispatcher.dispatch(
    {
      runId: state.runId,
      traceId: state.traceId,
      agent: agentInCharge(state),
      deadlineAt: Math.min(state.deadlineAt, Date.now() + timeoutMs + constants.GUARDRAIL_CALL_GRACE_MS),
    },
    [{ toolCallId: call.id, name: call.name, arguments: call.arguments }],
    { fresh: false, ...(deps.release ? { signal: deps.release } : {}) },
  );
  return readToolVerdict(call.name, result);
}

function readToolVerdict(tool: string, result: ToolResult | undefined): Answer {
  if (!result) return { error: `tool "${tool}" gave no result` };
  if (!result.ok)
    return {
      error: `tool "${tool}" failed: ${result.error?.kind ?? 'error'}: ${result.error?.message ?? ''}`,
    };
  const c = result.content as { tripped?: unknown; reason?: unknown } | null | undefined;
  if (!c || typeof c !== 'object' || typeof c.tripped !== 'boolean')
    return {
      error: `tool "${tool}" answered without a boolean "tripped": ${JSON.stringify(result.content)?.slice(0, 200)}`,
    };
  return { tripped: c.tripped, reason: typeof c.reason === 'string' ? c.reason : `tool "${tool}" says so` };
}

/**
 * A guardrail agent's verdict: one model call, without tools, with the agent's instructions, asked for
 * `{tripped, reason}` as a JSON Schema answer, of the model a run of that agent would ask (its model and
 * fallbacks through their providers, else the default). Charged to the run like any of its model requests:
 * its tokens to the run's usage and token budget, its tokens and cost to the account of the model that
 * answered.
 */
async function askAgent(
  run: RunContext,
  spec: GuardrailSpec,
  target: GuardTarget,
  timeoutMs: number,
): Promise<Answer> {
  const { deps } = run;
  const judge = spec.agent ? deps.agentNamed?.(spec.agent) : undefined;
  if (!judge)
    return { error: `guardrail agent "${spec.agent}" is not an agent of the configuration in force` };
  // A timer and a listener of its own, let go once the call ends (as the loop's model calls do).
  const stop = new AbortController();
  const timer = setTimeout(() => stop.abort(new Error(`no verdict within ${timeoutMs} ms`)), timeoutMs);
  const onRelease = () => stop.abort(deps.release?.reason);
  deps.release?.addEventListener('abort', onRelease, { once: true });
  if (deps.release?.aborted) onRelease();
  const llm = deps.llmOf?.(judge.name) ?? deps.llm;
  const started = performance.now();
  const res = await llm
    .complete(
      [
        {
          role: 'system',
          content:
            `You are the guardrail "${spec.name}" (${judge.name}). ${judge.instructions ?? judge.description ?? ''}\n` +
            `Decide whether the ${target.stage === 'input' ? 'request' : target.stage === 'output' ? 'answer' : `tool call's ${target.stage}`} ` +
            'below trips this guardrail. Answer only with JSON: {"tripped": true|false, "reason": "why, in one sentence"}.',
        },
        { role: 'user', content: target.text },
      ],
      [],
      stop.signal,
      undefined,
      {
        responseFormat: {
          type: 'json_schema',
          json_schema: { name: 'guardrail_verdict', schema: VERDICT_SCHEMA, strict: true },
        },
      },
    )
    .finally(() => {
      clearTimeout(timer);
      deps.release?.removeEventListener('abort', onRelease);
    });
  const { answered_by, model, cost } = chargeSideRequest(
    run,
    res,
    llm,
    Math.round(performance.now() - started),
    { purpose: 'guardrail', guardrail: spec.name },
  );
  const asked: Asked = { model: answered_by ?? model, ...(cost !== undefined ? { cost } : {}) };
  const text = res.choices[0]?.message?.content ?? '';
  const checked = checkOutput(text, VERDICT_SCHEMA);
  if (!checked.ok)
    return {
      error: `guardrail agent "${judge.name}" answered without a valid verdict: ${checked.problems
        .map((p) => `${p.field} ${p.message}`)
        .join('; ')
        .slice(0, 300)}`,
      asked,
    };
  return { ...(checked.output as { tripped: boolean; reason: string }), asked };
}
