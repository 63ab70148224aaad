import type { Run } from '@agent-reach/client';

/** What the scorers and metrics read of one run's record (GET /v1/runs/{id}). */
export interface RunFacts {
  runId: string;
  status: string;
  reason: string | undefined;
  answer: string | undefined;
  output: unknown;
  /** Every call the model made, in order: tool, parsed arguments, error kind (undefined: it succeeded). */
  calls: { tool: string; args: unknown; errorKind: string | undefined }[];
  /** Tools whose call reached the tool: not unknown, not forbidden, arguments valid. */
  reached: string[];
  /** Calls of known tools, and of them those whose arguments passed validation the first time they were sent. */
  validatable: number;
  validFirstTry: number;
  /** Calls refused for invalid arguments, and of them those followed by a valid call of the same tool. */
  invalidArgs: number;
  selfHealed: number;
  unknownTools: number;
  forbidden: number;
  steps: number;
  tokens: number;
  cost: number;
  latencyMs: number;
  /** The run's task stack, each step done or open (empty: the run was not planned). */
  tasks: { title: string; tool?: string; done: boolean; carried?: true }[];
}

// Calls that never ran the tool: refused before it for its name, its scope or its arguments.
const REFUSED_BEFORE_TOOL = new Set(['unknown_tool', 'forbidden', 'invalid_arguments']);

function parseArgs(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** The facts of a finished run. */
export function runFacts(run: Run): RunFacts {
  const calls = run.steps.map((s) => ({
    tool: s.tool,
    args: parseArgs(s.arguments),
    errorKind: s.ok ? undefined : (s.error_kind ?? 'execution_error'),
  }));
  const known = calls.filter((c) => c.errorKind !== 'unknown_tool');
  const invalid = calls.map((c, i) => ({ c, i })).filter(({ c }) => c.errorKind === 'invalid_arguments');
  const healed = invalid.filter(({ c, i }) =>
    calls.slice(i + 1).some((later) => later.tool === c.tool && later.errorKind !== 'invalid_arguments'),
  );
  return {
    runId: run.run_id,
    status: run.status,
    reason: run.reason,
    answer: run.answer,
    output: run.output,
    calls,
    reached: calls.filter((c) => !REFUSED_BEFORE_TOOL.has(c.errorKind ?? '')).map((c) => c.tool),
    validatable: known.length,
    validFirstTry: known.filter((c) => c.errorKind !== 'invalid_arguments').length,
    invalidArgs: invalid.length,
    selfHealed: healed.length,
    unknownTools: calls.filter((c) => c.errorKind === 'unknown_tool').length,
    forbidden: calls.filter((c) => c.errorKind === 'forbidden').length,
    steps: run.iterations,
    tokens: run.usage.total_tokens,
    cost: run.cost ?? 0,
    latencyMs: Math.max(0, run.updated_at - run.created_at),
    tasks: run.tasks ?? [],
  };
}
