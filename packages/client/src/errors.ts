import { API_ERROR_CODES, isApiErrorCode, type ApiErrorCode } from '@agent-reach/protocol';

/** The codes the Agent-Reach API answers errors with (see its README); branch on these, not on messages. */
export { API_ERROR_CODES };
export type { ApiErrorCode };

/**
 * Codes of the client itself: `NETWORK` (no HTTP answer), `TIMEOUT` (`waitForRun` gave up),
 * `UNEXPECTED_RESPONSE` (an answer that is not the API's error shape, e.g. from a proxy),
 * `REDIS_UNAVAILABLE` (`enqueueRun` could not reach Redis).
 */
export type ClientErrorCode =
  ApiErrorCode | 'NETWORK' | 'TIMEOUT' | 'UNEXPECTED_RESPONSE' | 'REDIS_UNAVAILABLE';

/** An error answer of the API (or a failure to get one). `status` is 0 when there was no HTTP answer. */
export class AgentReachApiError extends Error {
  readonly status: number;
  readonly code: ClientErrorCode;
  readonly details: unknown[] | undefined;

  constructor(init: {
    status: number;
    code: ClientErrorCode;
    message: string;
    details?: unknown[];
    cause?: unknown;
  }) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = 'AgentReachApiError';
    this.status = init.status;
    this.code = init.code;
    this.details = init.details;
  }

  /** The error an HTTP answer carries: its `{ error: { code, message, details } }`, or its status. */
  static fromResponse(status: number, body: unknown): AgentReachApiError {
    const e = (body as { error?: { code?: unknown; message?: unknown; details?: unknown } } | undefined)
      ?.error;
    const known = isApiErrorCode(e?.code);
    return new AgentReachApiError({
      status,
      code: known ? (e?.code as ApiErrorCode) : 'UNEXPECTED_RESPONSE',
      message: typeof e?.message === 'string' ? e.message : `HTTP ${status}`,
      ...(Array.isArray(e?.details) ? { details: e.details as unknown[] } : {}),
    });
  }
}
