import type { VariantOverrides } from '@agent-reach/protocol';
import {
  DEFAULT_MAX_ITERATIONS_MULTI_STEP,
  DEFAULT_MAX_OUTPUT_TOKENS,
  DEFAULT_RUN_DEADLINE_MS,
  DEFAULT_RUN_TOKEN_BUDGET,
} from '../constants.js';
import type { AgentSpec } from './agents.js';

/**
 * A variant may lower its run's limits, never raise them: the most a run of an agent may take is what the
 * configuration in force gives it (the agent's own setting, else the fleet's), the guard its operator set
 * on spend and time. A key allowed variants could otherwise start runs of any length and cost; to try
 * higher limits, raise them in the agents file (or declare a second agent for the experiment).
 */

/** The fleet's limits of a run whose agent sets none: what a variant may not exceed for such an agent. */
export interface VariantCeilings {
  /** Model turns: the most a run takes without an agent setting (a multi-step request's). Default 15. */
  max_iterations: number;
  /** Tokens of a run (`RUN_TOKEN_BUDGET`). Default 200 000. */
  max_tokens: number;
  /** Wall-clock time of a run, in ms (`RUN_DEADLINE_MS`). Default 10 minutes. */
  max_wall_time_ms: number;
  /** Output tokens of one model turn (`MAX_OUTPUT_TOKENS`). Default 2000. */
  max_output_tokens: number;
}

/** The ceilings of a fleet with every default. */
export const DEFAULT_VARIANT_CEILINGS: Readonly<VariantCeilings> = Object.freeze({
  max_iterations: DEFAULT_MAX_ITERATIONS_MULTI_STEP,
  max_tokens: DEFAULT_RUN_TOKEN_BUDGET,
  max_wall_time_ms: DEFAULT_RUN_DEADLINE_MS,
  max_output_tokens: DEFAULT_MAX_OUTPUT_TOKENS,
});

/** What the fleet's setting of each ceiling is called, for a problem that names it. */
const FLEET_SETTING: Record<keyof VariantCeilings, string> = {
  max_iterations: 'the most turns a run takes without one',
  max_tokens: 'RUN_TOKEN_BUDGET',
  max_wall_time_ms: 'RUN_DEADLINE_MS',
  max_output_tokens: 'MAX_OUTPUT_TOKENS',
};

/** Each limit a variant raises past what its agent may use, naming the field, the value and the ceiling. */
export function variantLimitProblems(
  agent: AgentSpec,
  overrides: VariantOverrides,
  ceilings: Readonly<VariantCeilings> = DEFAULT_VARIANT_CEILINGS,
): string[] {
  const limits: Array<[string, keyof VariantCeilings, unknown, number | undefined]> = [
    ['max_iterations', 'max_iterations', overrides.max_iterations, agent.max_iterations],
    ['max_tokens', 'max_tokens', overrides.max_tokens, agent.max_tokens],
    ['max_wall_time_ms', 'max_wall_time_ms', overrides.max_wall_time_ms, agent.max_wall_time_ms],
    [
      'loop.max_output_tokens',
      'max_output_tokens',
      overrides.loop?.max_output_tokens,
      agent.loop?.max_output_tokens,
    ],
  ];
  const problems: string[] = [];
  for (const [field, ceiling, value, own] of limits) {
    if (typeof value !== 'number') continue;
    const most = own ?? ceilings[ceiling];
    if (value <= most) continue;
    const source =
      own === undefined ? `the fleet's ${FLEET_SETTING[ceiling]}` : `its ${field} in the agents file`;
    problems.push(
      `overrides.${field} ${value} is above what agent "${agent.name}" may use (${most}, ${source}): a variant may lower a limit, never raise it; raise it in the agents file`,
    );
  }
  return problems;
}
