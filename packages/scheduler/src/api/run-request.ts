import type { RunCallback } from '@agent-reach/protocol';
import { outputSchemaProblems } from '@agent-reach/shared';
import { CallbackRefused } from '../callbacks/callback-address.js';
import { checkCallbackRequest } from '../callbacks/callback-config.js';
import { countTokens } from '../agent-loop/tokens.js';
import { ApiError } from './errors.js';
import type { ApiContext } from './options.js';

/**
 * Checks what a run request asks for beyond its schema, before anything is stored: the model must be one
 * of the allowed models (400 MODEL_NOT_ALLOWED naming them) and the input at most the token limit
 * (400 INPUT_TOO_LONG), and an output schema one the scheduler can use (400 VALIDATION_FAILED naming the
 * problem: not a JSON Schema object, a keyword it does not know, …). The schema has already capped the input by characters, so counting its tokens
 * is bounded.
 */
export function checkRunRequest(
  ctx: ApiContext,
  req: { input: string; model?: string | undefined; output_schema?: unknown },
): void {
  const { allowedModels, maxInputTokens } = ctx.options;
  if (req.output_schema !== undefined) {
    const problems = outputSchemaProblems(req.output_schema);
    if (problems.length > 0)
      throw new ApiError(
        'VALIDATION_FAILED',
        `output_schema ${problems.join('; ')}`,
        problems.map((problem) => ({ in: 'body', path: '/output_schema', problem })),
      );
  }
  if (req.model !== undefined && !allowedModels.has(req.model)) {
    const allowed = [...allowedModels];
    throw new ApiError(
      'MODEL_NOT_ALLOWED',
      `model "${req.model}" is not allowed; allowed: ${allowed.join(', ')} (or no model, for the default)`,
      [{ in: 'body', path: '/model', allowed }],
    );
  }
  // A token is at least one UTF-8 byte: an input of no more bytes than the limit needs no counting.
  if (Buffer.byteLength(req.input, 'utf8') <= maxInputTokens) return;
  const tokens = countTokens(req.input);
  if (tokens > maxInputTokens)
    throw new ApiError(
      'INPUT_TOO_LONG',
      `input has ${tokens} tokens; at most ${maxInputTokens} are accepted`,
      [{ in: 'body', path: '/input', tokens, limit: maxInputTokens }],
    );
}

/**
 * Checks what a caller grants (`grants` of a run request or a session): only tools the agent lists may
 * be granted (403 FORBIDDEN naming the first that is not, and those that may). The executor still runs
 * a granted tool only for an agent that reaches it.
 */
export function checkGrants(ctx: ApiContext, agent: string, grants: readonly string[] | undefined): void {
  if (!grants || grants.length === 0) return;
  const reachable = ctx.deps.agents.reachable(agent);
  const outside = grants.find((tool) => !reachable.has(tool));
  if (outside === undefined) return;
  throw new ApiError(
    'FORBIDDEN',
    `may not grant "${outside}": agent "${agent}" does not list it; grantable: ${[...reachable].join(', ')}`,
    [{ in: 'body', path: '/grants', tool: outside }],
  );
}

/**
 * Checks a run's callback at the door (400 VALIDATION_FAILED naming the problem): callbacks configured,
 * a signing secret for the caller's key, and a URL whose host does not resolve to a loopback, private or
 * link-local address unless the operator allows it. The sender checks the address again at each attempt.
 */
export async function checkCallback(
  ctx: ApiContext,
  callback: RunCallback | undefined,
  key: string,
): Promise<void> {
  if (!callback) return;
  const refuse = (problem: string) =>
    new ApiError('VALIDATION_FAILED', problem, [{ in: 'body', path: '/callback/url', problem }]);
  const config = ctx.deps.callbacks?.config;
  if (!config) throw refuse('callbacks are not enabled on this server');
  try {
    await checkCallbackRequest(config, callback, key);
  } catch (err) {
    if (err instanceof CallbackRefused) throw refuse(err.message);
    throw err;
  }
}
