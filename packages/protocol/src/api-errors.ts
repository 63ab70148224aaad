/**
 * Every error code the HTTP API answers with, its HTTP status and its default message (as Fastify's
 * `createError` table does). Clients branch on the code, never on the message. A route may answer a code
 * with a more precise status (415 for a body that is not JSON is still `VALIDATION_FAILED`).
 */
export const API_ERRORS = {
  UNAUTHORIZED: { status: 401, message: 'a valid API key is required (Authorization: Bearer <key>)' },
  FORBIDDEN: { status: 403, message: 'this key may not do that' },
  NOT_FOUND: { status: 404, message: 'not found' },
  VALIDATION_FAILED: { status: 400, message: 'bad request' },
  BODY_TOO_LARGE: { status: 413, message: 'the body is larger than the server accepts' },
  MALFORMED_JSON: { status: 400, message: 'the body is not valid JSON' },
  RATE_LIMITED: { status: 429, message: 'too many requests' },
  QUOTA_EXCEEDED: { status: 429, message: "the tenant's quota is used up" },
  CONFLICT: { status: 409, message: 'conflicts with an earlier request' },
  UNKNOWN_AGENT: { status: 422, message: 'unknown agent' },
  UNKNOWN_WORKFLOW: { status: 422, message: 'unknown workflow' },
  INVALID_STATE: { status: 409, message: 'the run is not in a state that allows this' },
  MODEL_NOT_ALLOWED: { status: 400, message: 'the model is not allowed' },
  INPUT_TOO_LONG: { status: 400, message: 'the input is longer than the server accepts' },
  UNAVAILABLE: { status: 503, message: 'Redis unavailable; retry later' },
  SIGNATURE_INVALID: { status: 401, message: "the event's signature is missing or does not match" },
  EVENT_STALE: { status: 400, message: "the event's signed timestamp is too far from now" },
  UNKNOWN_EVENT: { status: 404, message: 'no such event is declared' },
  INTERNAL: { status: 500, message: 'internal error' },
} as const satisfies Record<string, { status: number; message: string }>;

export type ApiErrorCode = keyof typeof API_ERRORS;

/** The codes of {@link API_ERRORS}, in its order. */
export const API_ERROR_CODES = Object.keys(API_ERRORS) as ApiErrorCode[];

export function isApiErrorCode(code: unknown): code is ApiErrorCode {
  return typeof code === 'string' && Object.hasOwn(API_ERRORS, code);
}
