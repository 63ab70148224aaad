import type { RunVariant } from '@agent-reach/protocol';
import { variantProblems } from '@agent-reach/shared';
import type { Principal } from './auth.js';
import { ApiError } from './errors.js';
import type { ApiContext } from './options.js';

/**
 * Checks a run request's variant before anything is stored: the key must be allowed variants (403
 * FORBIDDEN saying why), its models must be ones a request may name (400 MODEL_NOT_ALLOWED naming them),
 * and the variant must pass `variantProblems` — keys it may hold, tools the agent lists, aliases the
 * tool's schema allows, limits no higher than the agent may use, the merged agent as the agents file
 * checks it (400 VALIDATION_FAILED naming each).
 */
export function checkVariant(
  ctx: ApiContext,
  principal: Principal,
  agent: string,
  variant: RunVariant | undefined,
): void {
  if (!variant) return;
  if (!principal.variants)
    throw new ApiError(
      'FORBIDDEN',
      principal.agents
        ? 'this key may not start runs with a variant: it is limited to some agents, and such a key needs `variants: true` in the API keys configuration (API_VARIANT_KEYS)'
        : 'this key may not start runs with a variant: the API keys configuration (API_VARIANT_KEYS) does not allow it variants',
    );
  const { allowedModels } = ctx.options;
  const { model, fallback = [] } = variant.overrides;
  const models = [
    ...(model === undefined ? [] : [['model', model] as const]),
    ...fallback.map((m) => ['fallback', m] as const),
  ];
  const refused = models.find(([, m]) => !allowedModels.has(m));
  if (refused) {
    const allowed = [...allowedModels];
    throw new ApiError(
      'MODEL_NOT_ALLOWED',
      `variant "${variant.name}": overrides.${refused[0]} "${refused[1]}" is not a declared model; allowed: ${allowed.join(', ')}`,
      [{ in: 'body', path: `/variant/overrides/${refused[0]}`, allowed }],
    );
  }
  const problems = variantProblems(
    {
      agents: ctx.deps.agents,
      parametersOf: (tool) => ctx.deps.runner.catalog.get(tool)?.parameters,
      ...(ctx.deps.runner.variantCeilings ? { ceilings: ctx.deps.runner.variantCeilings() } : {}),
    },
    agent,
    variant,
  );
  if (problems.length === 0) return;
  throw new ApiError(
    'VALIDATION_FAILED',
    `variant "${variant.name}": ${problems.join('; ')}`,
    problems.map((problem) => ({ in: 'body', path: '/variant/overrides', problem })),
  );
}
