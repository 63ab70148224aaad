/** The error body the OpenAI API sends, `{ error: { message, type, param, code } }`. */
export interface ApiErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

/** A non-200 answer: status, OpenAI-shaped body and extra headers. */
export interface ErrorReply {
  status: number;
  body: ApiErrorBody;
  headers?: Record<string, string>;
}

function reply(status: number, type: string, message: string, param: string | null, code: string | null) {
  return { status, body: { error: { message, type, param, code } } };
}

/** HTTP 400 `invalid_request_error`, naming the offending parameter. */
export function invalidRequest(
  message: string,
  param: string | null = null,
  code: string | null = null,
): ErrorReply {
  return reply(400, 'invalid_request_error', message, param, code);
}

/** HTTP 404 `model_not_found`, as the API answers an unknown model. */
export function modelNotFound(message: string): ErrorReply {
  return reply(404, 'invalid_request_error', message, 'model', 'model_not_found');
}

/** HTTP 404 for a route the simulator does not serve. */
export function unknownUrl(method: string, url: string): ErrorReply {
  return reply(404, 'invalid_request_error', `Unknown request URL: ${method} ${url}.`, null, 'unknown_url');
}

/**
 * HTTP 429 as the API answers a request-rate limit, with `retry-after` (whole seconds, rounded up),
 * `retry-after-ms` (which the official SDKs prefer) and rate-limit headers.
 */
export function rateLimited(model: string, retryAfterS: number): ErrorReply {
  const message =
    `Rate limit reached for ${model} (simulated by llm-sim) on requests per min (RPM). ` +
    `Please try again in ${retryAfterS}s.`;
  return {
    ...reply(429, 'requests', message, null, 'rate_limit_exceeded'),
    headers: {
      'retry-after': String(Math.ceil(retryAfterS)),
      'retry-after-ms': String(Math.round(retryAfterS * 1000)),
      'x-ratelimit-remaining-requests': '0',
      'x-ratelimit-reset-requests': `${retryAfterS}s`,
    },
  };
}

/** HTTP 5xx `server_error`, as the API answers an internal failure. */
export function serverError(status: number): ErrorReply {
  const message =
    'The server had an error while processing your request. Sorry about that! (simulated by llm-sim)';
  return reply(status, 'server_error', message, null, null);
}
