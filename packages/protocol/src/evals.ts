import { Type, type Static } from '@sinclair/typebox';
import { StringEnum } from './tool.js';

/**
 * Eval reports: what `agent-reach eval` measured of a dataset's cases run on the fleet, per variant and
 * between variants (docs/evals.md). `POST /v1/evals` stores one, `GET /v1/evals[/{id}]` reads them back.
 */

/** Largest report `POST /v1/evals` accepts, in bytes. */
export const MAX_EVAL_REPORT_BYTES = 2 * 1024 * 1024;
/** Ids of evals and variant names: 1-64 of A-Z a-z 0-9 _ . - */
export const EVAL_ID_PATTERN = /^(?!(?:__proto__|constructor|prototype)$)[A-Za-z0-9_.-]{1,64}$/;
export const EVAL_VARIANT_NAME_PATTERN = /^(?!(?:__proto__|constructor|prototype)$)[A-Za-z0-9_.-]{1,64}$/;

/** The metrics of one variant; rates are in 0..1 (docs/evals.md defines each). */
export const VARIANT_METRIC_NAMES = [
  'reach_success',
  'tool_selection_accuracy',
  'first_try_valid_args',
  'self_healed_args',
  'unknown_tool_calls',
  'forbidden_calls',
  'task_completion',
  'steps_mean',
  'tokens_total',
  'cost_total',
  'latency_p50_ms',
  'latency_p95_ms',
] as const;
export type VariantMetricName = (typeof VARIANT_METRIC_NAMES)[number];
/** Metrics that are rates (0..1) of attempts or calls, compared with a Wilson interval. */
export const RATE_METRIC_NAMES: readonly VariantMetricName[] = [
  'reach_success',
  'tool_selection_accuracy',
  'first_try_valid_args',
  'self_healed_args',
  'task_completion',
];

const Num = Type.Number();
const Count = Type.Integer({ minimum: 0 });

export const VariantMetrics = Type.Object({
  cases: Count,
  attempts: Count,
  reach_success: Num,
  tool_selection_accuracy: Num,
  first_try_valid_args: Num,
  self_healed_args: Num,
  unknown_tool_calls: Num,
  forbidden_calls: Num,
  task_completion: Num,
  steps_mean: Num,
  tokens_total: Num,
  cost_total: Num,
  latency_p50_ms: Num,
  latency_p95_ms: Num,
  counts: Type.Optional(
    Type.Record(Type.String(), Type.Tuple([Num, Num]), {
      description: 'of each rate, its numerator and denominator ([k, n]); a rate of n = 0 measured nothing',
    }),
  ),
});
export type VariantMetrics = Static<typeof VariantMetrics>;

export const EvalFailure = Type.Object({
  check: Type.String({ description: 'the expectation that failed, e.g. tools_called, answer_contains' }),
  message: Type.String(),
});
export type EvalFailure = Static<typeof EvalFailure>;

/** What the metrics count of one attempt's run (docs/evals.md). */
export const AttemptFacts = Type.Object({
  status: Type.String(),
  reason: Type.Optional(Type.String()),
  tools: Type.Array(Type.String(), { description: 'the tools its calls reached, in order' }),
  tools_selected: Type.Optional(
    Type.Boolean({ description: 'whether its tool expectations held (absent: the case has none)' }),
  ),
  validatable_calls: Count,
  valid_first_try: Count,
  invalid_args: Count,
  self_healed: Count,
  unknown_tool_calls: Count,
  forbidden_calls: Count,
  tasks_complete: Type.Optional(
    Type.Boolean({
      description:
        'whether the run finished its task: it succeeded, no step of its task stack is open and every tool the case requires was reached',
    }),
  ),
  open_tasks: Type.Optional(
    Type.Array(Type.String(), { description: 'the steps it left open (task-stack steps, required tools)' }),
  ),
  error: Type.Optional(Type.String({ description: 'why the attempt has no finished run' })),
});
export type AttemptFacts = Static<typeof AttemptFacts>;

export const EvalAttempt = Type.Object({
  run_id: Type.String(),
  passed: Type.Boolean(),
  failures: Type.Array(EvalFailure),
  steps: Num,
  tokens: Num,
  cost: Num,
  latency_ms: Num,
  judge: Type.Optional(Type.Object({ score: Num, reason: Type.String() })),
  facts: Type.Optional(AttemptFacts),
});
export type EvalAttempt = Static<typeof EvalAttempt>;

export const EvalCaseResult = Type.Object({ id: Type.String(), attempts: Type.Array(EvalAttempt) });
export type EvalCaseResult = Static<typeof EvalCaseResult>;

export const EvalVariantResult = Type.Object({
  name: Type.String({ pattern: EVAL_VARIANT_NAME_PATTERN.source }),
  overrides: Type.Record(Type.String(), Type.Unknown()),
  metrics: VariantMetrics,
  cases: Type.Array(EvalCaseResult),
});
export type EvalVariantResult = Static<typeof EvalVariantResult>;

export const MetricComparison = Type.Object({
  baseline: Num,
  variant: Num,
  diff: Num,
  low: Type.Union([Num, Type.Null()], { description: 'lower end of the 95 % interval of diff' }),
  high: Type.Union([Num, Type.Null()], { description: 'upper end of the 95 % interval of diff' }),
});
export type MetricComparison = Static<typeof MetricComparison>;

const PassFail = StringEnum(['pass', 'fail']);
export const FlippedCase = Type.Object({
  case: Type.String(),
  from: PassFail,
  to: PassFail,
  baseline_runs: Type.Array(Type.String()),
  variant_runs: Type.Array(Type.String()),
});
export type FlippedCase = Static<typeof FlippedCase>;

export const EvalComparison = Type.Object({
  baseline: Type.String(),
  variant: Type.String(),
  metrics: Type.Record(Type.String(), MetricComparison),
  flipped: Type.Array(FlippedCase),
});
export type EvalComparison = Static<typeof EvalComparison>;

export const EvalReport = Type.Object({
  id: Type.String({ pattern: EVAL_ID_PATTERN.source }),
  dataset: Type.Object({
    name: Type.String({ maxLength: 200 }),
    cases: Count,
    agents: Type.Optional(
      Type.Array(Type.String({ maxLength: 64 }), {
        maxItems: 1000,
        description:
          "the agents whose runs the eval started (its cases' and judges'): a key limited to some agents sees only evals of those",
      }),
    ),
  }),
  started_at: Type.String(),
  finished_at: Type.String(),
  repeat: Type.Integer({ minimum: 1 }),
  concurrency: Type.Integer({ minimum: 1 }),
  variants: Type.Array(EvalVariantResult, { minItems: 1 }),
  comparisons: Type.Array(EvalComparison),
});
export type EvalReport = Static<typeof EvalReport>;

export const EvalSummary = Type.Object({
  id: Type.String(),
  dataset: Type.String(),
  started_at: Type.String(),
  finished_at: Type.String(),
  variants: Type.Array(Type.Object({ name: Type.String(), reach_success: Num })),
});
export type EvalSummary = Static<typeof EvalSummary>;

export const EvalList = Type.Object({ evals: Type.Array(EvalSummary) });
export type EvalList = Static<typeof EvalList>;
export const EvalParams = Type.Object(
  { id: Type.String({ pattern: EVAL_ID_PATTERN.source }) },
  { additionalProperties: false },
);
export const EvalCreated = Type.Object({ id: Type.String() });
