import type { FastifyInstance } from 'fastify';

/**
 * The JSON body parser of every route, Fastify's own (prototype poisoning refused) with one change: an
 * empty body with `Content-Type: application/json` is no body, as many clients send on a POST that takes
 * none (cancel a run or a workflow, create a session with a generated id, log out). A route whose body
 * schema requires fields still refuses an empty body (`MALFORMED_JSON`), as before.
 */
export function registerJsonBodyParser(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (body === '' && !requiresBody(request.routeOptions.schema?.body)) {
      done(null, undefined);
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
