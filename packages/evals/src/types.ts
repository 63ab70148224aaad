/** A dataset as the eval runs it (docs/evals.md): the file's shape, validated. */

/** A matcher of one value; every field given must hold. */
export interface Matcher {
  equals?: unknown;
  regex?: string;
  schema?: Record<string, unknown>;
  min?: number;
  max?: number;
}

/** A matcher, or a scalar it must equal. */
export type MatcherSpec = Matcher | string | number | boolean | null;

/** Matchers by field path (`a.b.0`; `$` is the whole value). */
export type MatchersByPath = Record<string, MatcherSpec>;

export interface JudgeSpec {
  /** The agent whose run scores the answer (its declared provider and model). */
  agent: string;
  rubric: string;
  model?: string;
  /** Least score (0..1) that passes. Default 0.5. */
  min_score?: number;
}

export interface Expectations {
  tools_called?: string[];
  tools_in_order?: string[];
  tools_not_called?: string[];
  arguments?: Record<string, MatchersByPath>;
  status?: string;
  reason?: string;
  output?: { schema?: Record<string, unknown>; fields?: MatchersByPath };
  answer?: { contains?: string[]; regex?: string[]; not_contains?: string[] };
  max_steps?: number;
  max_tokens?: number;
  max_cost?: number;
  max_latency_ms?: number;
}

export interface EvalCase {
  id: string;
  agent: string;
  input: string;
  model?: string;
  /** Earlier messages of the case's session, each run (and waited for) before `input`. */
  history?: string[];
  metadata?: Record<string, string>;
  grants?: string[];
  output_schema?: Record<string, unknown>;
  expect: Expectations;
  judge?: JudgeSpec;
}

export interface Dataset {
  name: string;
  cases: EvalCase[];
}

/** A variant of the eval: a name and the overrides its runs carry. */
export interface EvalVariant {
  name: string;
  overrides: Record<string, unknown>;
}
