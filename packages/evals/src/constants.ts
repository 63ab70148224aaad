/** Every default of the eval command, with its unit in the name. */

/** Cases run at once when `--concurrency` is not given. */
export const DEFAULT_EVAL_CONCURRENCY = 4;
/** Most cases run at once. */
export const MAX_EVAL_CONCURRENCY = 256;
/** Most repeats of each case. */
export const MAX_EVAL_REPEAT = 1000;
/** How long one attempt's run may take before the attempt fails (`run_timeout`), in ms. */
export const DEFAULT_RUN_TIMEOUT_MS = 10 * 60_000;
export const MAX_RUN_TIMEOUT_MS = 24 * 3600_000;
/** The API the command talks to without AGENT_REACH_URL or --url (the scheduler's default port). */
export const DEFAULT_API_URL = 'http://127.0.0.1:8080';
/** The pause after a 429 that names no `Retry-After`, doubled each time up to the max, in ms. */
export const QUOTA_BACKOFF_FIRST_MS = 500;
export const QUOTA_BACKOFF_MAX_MS = 10_000;
/** Longest `Retry-After` honoured, in ms (a longer one is waited in these steps, never given up). */
export const MAX_RETRY_AFTER_MS = 60_000;
/** Resamples of the paired bootstrap behind a non-rate metric's interval. */
export const BOOTSTRAP_RESAMPLES = 2000;
/** Seed of the bootstrap's generator: the same report gives the same intervals. */
export const BOOTSTRAP_SEED = 0x5eed;
/** The z of a 95 % interval. */
export const Z_95 = 1.959963984540054;
/** A judge's passing score when the dataset names none (scores are in 0..1). */
export const DEFAULT_JUDGE_MIN_SCORE = 0.5;
/** Runs read per page by `--from-runs`, and at most this many runs become cases. */
export const FROM_RUNS_PAGE = 200;
export const DEFAULT_FROM_RUNS_LIMIT = 200;
/**
 * Quantifiers a dataset's regular expression may hold (safe-regex2's repetition limit, as guardrails'):
 * past it, or with a quantifier nested in another's group, the dataset is refused.
 */
export const EVAL_REGEX_MAX_QUANTIFIERS = 25;
