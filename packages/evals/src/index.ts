// Evals of agents on the real fleet (docs/evals.md): datasets, scorers, variants, reports, CI gates and
// the `agent-reach eval` command, all over the HTTP client.
export { evalCommand, renderReport, EVAL_EXIT, EVAL_USAGE } from './eval-command.js';
export type { EvalIo } from './eval-command.js';
export { loadDataset, parseDataset } from './dataset.js';
export type { DatasetOptions } from './dataset.js';
export { EvalInputError } from './errors.js';
export { runEval, newEvalId } from './runner.js';
export type { RunEvalOptions } from './runner.js';
export { scoreRun, isSubsequence } from './scorer.js';
export { runFacts } from './run-facts.js';
export { taskCompletion } from './task-completion.js';
export type { TaskCompletion } from './task-completion.js';
export type { RunFacts } from './run-facts.js';
export {
  variantMetrics,
  compare,
  comparisons,
  casePassed,
  rateIntervalMethod,
  LOWER_IS_BETTER,
} from './metrics.js';
export { wilson, wilsonDifference, pairedBootstrap, percentile } from './stats.js';
export { formatTable, formatMarkdown, intervalsNote } from './format-text.js';
export { formatJunit } from './format-junit.js';
export { parseGate, gateFailures } from './gates.js';
export type { Gate } from './gates.js';
export { parseVariant, parseVariants } from './variants.js';
export { datasetFromRuns, parseRunFilter, caseOfRun } from './from-runs.js';
export { quotaFetch, retryAfterMs } from './quota-fetch.js';
export { uploadReport } from './upload.js';
export { judgeAnswer, JUDGE_OUTPUT_SCHEMA } from './judge.js';
export type {
  Dataset,
  EvalCase,
  EvalVariant,
  Expectations,
  JudgeSpec,
  Matcher,
  MatcherSpec,
} from './types.js';
