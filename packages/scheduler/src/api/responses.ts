import type { TSchema } from '@sinclair/typebox';
import { ErrorResponse } from '@agent-reach/protocol';

/** A route's responses plus the error shape for every 4xx and 5xx. */
export const responses = (ok: Record<number, TSchema | Record<string, unknown>>) => ({
  ...ok,
  '4xx': ErrorResponse,
  '5xx': ErrorResponse,
});
