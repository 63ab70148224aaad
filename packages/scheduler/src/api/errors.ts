import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { Socket } from 'node:net';
import { API_ERRORS, type ApiErrorCode } from '@agent-reach/protocol';
import { type Logger } from '@agent-reach/shared';
import { UNAVAILABLE_RETRY_AFTER_S } from './constants.js';
import { ARCHIVE_UNAVAILABLE_RETRY_AFTER_S } from '@agent-reach/archive';
import { archiveUnavailable, redisUnavailable } from './unavailable.js';

/** The body of every error response. */
export interface ApiErrorBody {
  error: { code: ApiErrorCode; message: string; details?: unknown[] };
}

/**
 * An error a route throws to answer with a stable code. Its status and default message come from the
 * protocol's `API_ERRORS` table; `statusCode` is given only where a more precise status fits.
 */
export class ApiError extends Error {
  readonly statusCode: number;
  constructor(
    readonly code: ApiErrorCode,
    message: string = API_ERRORS[code].message,
    readonly details?: unknown[],
    statusCode: number = API_ERRORS[code].status,
    /** Seconds after which a retry may succeed, sent as `Retry-After`. */
    readonly retryAfterS?: number,
  ) {
    super(message);
    this.name = 'ApiError';
    this.statusCode = statusCode;
  }

  toBody(): ApiErrorBody {
    return {
      error: { code: this.code, message: this.message, ...(this.details ? { details: this.details } : {}) },
    };
  }
}

export const notFound = (what: string) => new ApiError('NOT_FOUND', `${what} not found`);

/** Sends an error straight from a hook (where a thrown error would reach a plugin's own handler). */
export function sendError(reply: FastifyReply, error: ApiError): FastifyReply {
  return reply.code(error.statusCode).type('application/json; charset=utf-8').send(error.toBody());
}

/** Fastify's own errors mapped to the API's codes: bad input is a 4xx with a stable code, never a 500. */
export function toApiError(error: FastifyError | ApiError | Error): ApiError {
  if (error instanceof ApiError) return error;
  const e = error as FastifyError;
  if (e.validation) {
    const details = e.validation.map((v) => ({
      in: e.validationContext ?? 'request',
      path: v.instancePath || '/',
      message: describeFailure(v),
      ...(v.keyword === 'additionalProperties'
        ? { property: (v.params as { additionalProperty?: string }).additionalProperty }
        : {}),
    }));
    const first = details[0];
    const message = first ? `${first.in}${first.path === '/' ? '' : first.path} ${first.message}` : e.message;
    // A run's input over its character cap has a code of its own (the token cap answers the same one).
    const tooLong = e.validation.find((v) => v.keyword === 'maxLength' && v.instancePath === '/input');
    if (e.validationContext === 'body' && tooLong)
      return new ApiError('INPUT_TOO_LONG', `body/input ${describeFailure(tooLong)}`, details);
    return new ApiError('VALIDATION_FAILED', message, details);
  }
  switch (e.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new ApiError('MALFORMED_JSON');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ApiError('MALFORMED_JSON', 'the body is empty but Content-Type says JSON');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError('BODY_TOO_LARGE');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError(
        'VALIDATION_FAILED',
        'the body must be JSON (Content-Type: application/json)',
        undefined,
        415,
      );
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ApiError('VALIDATION_FAILED', 'the body does not match its Content-Length');
    case 'FST_ERR_BAD_URL':
      return new ApiError('VALIDATION_FAILED', 'the URL is malformed');
    default:
      break;
  }
  const archive = archiveUnavailable(error);
  if (archive)
    return new ApiError(
      'UNAVAILABLE',
      `${archive}; retry later`,
      undefined,
      503,
      ARCHIVE_UNAVAILABLE_RETRY_AFTER_S,
    );
  const unavailable = redisUnavailable(error);
  if (unavailable) return new ApiError('UNAVAILABLE', `${unavailable}; retry later`);
  const status = e.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    if (status === 413) return new ApiError('BODY_TOO_LARGE');
    if (status === 429) return new ApiError('RATE_LIMITED');
    if (status === 404) return new ApiError('NOT_FOUND');
    return new ApiError('VALIDATION_FAILED', e.message || undefined, undefined, status);
  }
  return new ApiError('INTERNAL');
}

/** An ajv failure in words; a pattern names the pattern and, when the schema has one, what it means. */
function describeFailure(v: {
  keyword: string;
  message?: string | undefined;
  params: Record<string, unknown>;
  parentSchema?: { description?: unknown } | undefined;
}): string {
  // A field the schema does not know is named, so the caller sees which one without reading details.
  if (v.keyword === 'additionalProperties')
    return `${v.message ?? 'is invalid'} "${String(v.params.additionalProperty)}"`;
  if (v.keyword !== 'pattern') return v.message ?? 'is invalid';
  const what = typeof v.parentSchema?.description === 'string' ? ` (${v.parentSchema.description})` : '';
  return `must match the pattern ${String(v.params.pattern)}${what}`;
}

/**
 * The root error handler: one JSON shape for every failure. Redis being unavailable is a 503 with
 * `Retry-After` (logged at `warn`, once per request); other unexpected failures are logged at `error`.
 */
export function errorHandler(log: Logger) {
  return (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const api = toApiError(error);
    const route = request.routeOptions.url;
    if (api.code === 'UNAVAILABLE') {
      if (archiveUnavailable(error))
        log.warn({ err: error, route }, 'request failed: the run archive (PostgreSQL) unavailable');
      else log.warn({ err: error, route }, 'request failed: Redis unavailable');
      reply.header('retry-after', String(UNAVAILABLE_RETRY_AFTER_S));
    } else if (api.statusCode >= 500) log.error({ err: error, route }, 'request failed');
    if (api.retryAfterS !== undefined) reply.header('retry-after', String(api.retryAfterS));
    else log.info({ code: api.code, route }, 'request refused');
    return sendError(reply, api);
  };
}

/** Errors Fastify raises before routing (a malformed URL), answered in the same shape. */
export function frameworkErrors(error: FastifyError, _request: FastifyRequest, reply: FastifyReply): void {
  void sendError(reply, toApiError(error));
}

/** Answers a request Node's HTTP parser refused (malformed HTTP) before Fastify saw it. */
export function clientErrorHandler(err: Error & { code?: string }, socket: Socket): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const tooLarge = err.code === 'HPE_HEADER_OVERFLOW';
  const body = JSON.stringify(
    new ApiError(
      'VALIDATION_FAILED',
      tooLarge ? 'request headers too large' : 'malformed HTTP request',
      undefined,
      tooLarge ? 431 : 400,
    ).toBody(),
  );
  socket.end(
    `HTTP/1.1 ${tooLarge ? '431 Request Header Fields Too Large' : '400 Bad Request'}\r\n` +
      `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `Connection: close\r\n\r\n${body}`,
  );
}
