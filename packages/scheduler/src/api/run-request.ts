import { countTokens } from '../agent-loop/tokens.js';
import { ApiError } from './errors.js';
import type { ApiContext } from './options.js';

/**
 * Checks what a run request asks for beyond its schema, before anything is stored: the model must be one
 * of the allowed models (400 MODEL_NOT_ALLOWED naming them) and the input at most the token limit
 * (400 INPUT_TOO_LONG). The schema has already capped the input by characters, so counting its tokens
 * is bounded.
 */
export function checkRunRequest(ctx: ApiContext, req: { input: string; model?: string | undefined }): void {
  const { allowedModels, maxInputTokens } = ctx.options;
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
