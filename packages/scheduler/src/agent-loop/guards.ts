import type { GuardName, RunState } from './run-state.js';

export interface GuardLimits {
  maxIterations: number;
  repeatLimit: number;
  maxFailedRounds: number;
  /** Rounds in a row spent fixing the model's own arguments that stop the run. Default 4. */
  maxArgumentFixRounds: number;
  tokenBudget: number;
}

export interface GuardStop {
  guard: GuardName;
  status: 'not_converged' | 'failed';
  report: string;
}

/** Checked before each LLM call: the budget-like guards. */
export function checkBudgets(state: RunState, limits: GuardLimits, now = Date.now()): GuardStop | undefined {
  if (state.iterations >= limits.maxIterations) {
    return {
      guard: 'max_iterations',
      status: 'not_converged',
      report:
        `stopped after ${state.iterations} model turns without a final answer (limit ${limits.maxIterations}); ` +
        'split the task into smaller requests or raise max_iterations for this agent',
    };
  }
  const tokens = checkTokenBudget(state, limits);
  if (tokens) return tokens;
  if (now >= state.deadlineAt) {
    return { guard: 'deadline', status: 'not_converged', report: 'the run passed its wall-clock deadline' };
  }
  return undefined;
}

/** The token budget, checked before each model call and again after each model turn. */
export function checkTokenBudget(state: RunState, limits: GuardLimits): GuardStop | undefined {
  if (state.usage.total_tokens < limits.tokenBudget) return undefined;
  return {
    guard: 'token_budget',
    status: 'not_converged',
    report: `used ${state.usage.total_tokens} tokens, over the run budget of ${limits.tokenBudget}`,
  };
}

/** The turn's calls as one comparable string: names and canonical arguments, order-independent. */
export function turnSignature(calls: Array<{ name: string; arguments: string }>): string {
  return calls
    .map((c) => `${c.name}(${canonical(c.arguments)})`)
    .sort()
    .join('|');
}

function canonical(raw: string): string {
  try {
    return JSON.stringify(sortKeys(JSON.parse(raw)));
  } catch {
    return raw.trim();
  }
}

function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v && typeof v === 'object') {
    return Object.fromEntries(
      Object.keys(v)
        .sort()
        .map((k) => [k, sortKeys((v as Record<string, unknown>)[k])]),
    );
  }
  return v;
}

/**
 * Repeat guard, after a model turn with tool calls: the same calls `repeatLimit` turns in a row earn a
 * nudge; repeating them once more after the nudge stops the run.
 */
export function checkRepeat(
  state: RunState,
  signature: string,
  limits: GuardLimits,
): 'ok' | 'nudge' | GuardStop {
  const g = state.guard;
  if (g.lastSignature === signature) g.repeatCount += 1;
  else {
    g.lastSignature = signature;
    g.repeatCount = 1;
    g.nudged = false;
  }
  if (g.repeatCount > limits.repeatLimit && g.nudged) {
    return {
      guard: 'repeat',
      status: 'not_converged',
      report: `the model repeated the same call ${g.repeatCount} turns in a row and ignored a nudge: ${signature}`,
    };
  }
  if (g.repeatCount >= limits.repeatLimit && !g.nudged) {
    g.nudged = true;
    return 'nudge';
  }
  return 'ok';
}

export function repeatNudge(signature: string, times: number): string {
  return (
    `Guard: you have made the same tool call ${times} turns in a row (${signature}). Its result will not ` +
    'change. Use the results you already have, try a different approach, or give your final answer. ' +
    'Repeating it again stops the run.'
  );
}
