import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from '@agent-reach/shared';
import { UNAVAILABLE_RETRY_AFTER_S } from '../constants.js';
import { type ApiError, toApiError } from '../errors.js';

/** The `type` of an OpenAI error object. */
export type OpenAiErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'rate_limit_error'
  | 'server_error';

/** An error of the OpenAI-compatible door, answered as OpenAI answers: `{ error: { message, type, param, code } }`. */
export class OpenAiError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
    readonly type: OpenAiErrorType,
    readonly param: string | null,
    readonly code: string | null,
  ) {
    super(message);
    this.name = 'OpenAiError';
  }

  toBody() {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

/** A request field the door does not take: 400 naming it. */
export const badParam = (param: string, message: string, code = 'invalid_value') =>
  new OpenAiError(400, message, 'invalid_request_error', param, code);

/** A field of the OpenAI API this door does not implement: 400 naming it. */
export const unsupportedParam = (param: string, why = 'is not supported by this server') =>
  badParam(param, `${param} ${why}`, 'unsupported_parameter');

/** An unknown model, or one the key may not use: the same 404 either way, so a key learns nothing of others' agents. */
export const modelNotFound = (model: string) =>
  new OpenAiError(
    404,
    `The model \`${model}\` does not exist or you do not have access to it.`,
    'invalid_request_error',
    'model',
    'model_not_found',
  );

const typeOf = (status: number): OpenAiErrorType =>
  status === 401
    ? 'authentication_error'
    : status === 403
      ? 'permission_error'
      : status === 404
        ? 'not_found_error'
        : status === 429
          ? 'rate_limit_error'
          : status >= 500
            ? 'server_error'
            : 'invalid_request_error';

/** An API error (a refusal of the shared run code, a Redis outage) in OpenAI's shape; its code, lower case. */
export function fromApiError(error: ApiError): OpenAiError {
  const first = error.details?.[0] as { path?: string; property?: string } | undefined;
  const path = first?.property ?? first?.path?.replace(/^\//, '').replace(/\//g, '.');
  return new OpenAiError(
    error.statusCode,
    error.message,
    typeOf(error.statusCode),
    path ? path : null,
    error.code.toLowerCase(),
  );
}

export function sendOpenAiError(reply: FastifyReply, error: OpenAiError): FastifyReply {
  return reply.code(error.statusCode).type('application/json; charset=utf-8').send(error.toBody());
}

/** The error handler of the door's routes: every failure in OpenAI's shape. */
export function openAiErrorHandler(log: Logger) {
  return (error: FastifyError | OpenAiError, request: FastifyRequest, reply: FastifyReply) => {
    const openAi = error instanceof OpenAiError ? error : fromApiError(toApiError(error));
    const route = request.routeOptions.url;
    if (openAi.code === 'unavailable') reply.header('retry-after', String(UNAVAILABLE_RETRY_AFTER_S));
    if (openAi.statusCode >= 500) log.error({ err: error, route }, 'request failed');
    else log.info({ code: openAi.code, route }, 'request refused');
    return sendOpenAiError(reply, openAi);
  };
}
