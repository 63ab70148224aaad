import type { FastifyInstance } from 'fastify';
import { MAX_JSON_BODY_DEPTH } from './constants.js';
import { ApiError } from './errors.js';

/**
 * The JSON body parser of every route, Fastify's own (prototype poisoning refused) with one change: an
 * empty body with `Content-Type: application/json` is no body, as many clients send on a POST that takes
 * none (cancel a run or a workflow, create a session with a generated id, log out). A route whose body
 * schema requires fields still refuses an empty body (`MALFORMED_JSON`), as before. A body that nests
 * objects and arrays deeper than `MAX_JSON_BODY_DEPTH` is refused (400 `VALIDATION_FAILED`) before it is
 * parsed: every recursive walk after it (schemas, serializing it to store it) would overflow the stack on
 * a few thousand levels and answer 500.
 */
export function registerJsonBodyParser(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (body === '' && !requiresBody(request.routeOptions.schema?.body)) {
      done(null, undefined);
      return;
    }
    if (nestingOver(body as string, MAX_JSON_BODY_DEPTH)) {
      const problem = `the body nests objects and arrays more than ${MAX_JSON_BODY_DEPTH} levels deep`;
      done(new ApiError('VALIDATION_FAILED', problem, [{ in: 'body', path: '/', problem }]), undefined);
      return;
    }
    // Fastify's parser answers through `done`; it returns nothing to wait for.
    void parseJson(request, body as string, done);
  });
}

/** Whether a route's body schema needs a body: it is declared and requires at least one field. */
function requiresBody(schema: unknown): boolean {
  const required = (schema as { required?: unknown } | undefined)?.required;
  return Array.isArray(required) && required.length > 0;
}

/** Whether JSON text opens more than `max` objects and arrays inside each other (strings skipped). */
function nestingOver(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // a backslash escapes the next character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}
