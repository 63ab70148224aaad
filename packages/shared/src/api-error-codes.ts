// No imports: the client's HTTP entry point inlines this file and must stay free of runtime dependencies.

/** Every error code the HTTP API answers with. Clients branch on these, never on the message. */
export const API_ERROR_CODES = [
  'UNAUTHORIZED',
  'FORBIDDEN',
  'NOT_FOUND',
  'VALIDATION_FAILED',
  'BODY_TOO_LARGE',
  'MALFORMED_JSON',
  'RATE_LIMITED',
  'CONFLICT',
  'UNKNOWN_AGENT',
  'INVALID_STATE',
  'MODEL_NOT_ALLOWED',
  'INPUT_TOO_LONG',
  'UNAVAILABLE',
  'INTERNAL',
] as const;
export type ApiErrorCode = (typeof API_ERROR_CODES)[number];
