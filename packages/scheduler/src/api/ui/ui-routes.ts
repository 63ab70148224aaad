import type { FastifyInstance, FastifyReply } from 'fastify';
import { Type } from '@sinclair/typebox';
import { DEFAULT_TENANT } from '@agent-reach/protocol';
import { searchRuns } from '../../runs/run-search.js';
import { requirePrincipal } from '../auth.js';
import { UI_APPROVALS_RUNS, UI_CSRF_HEADER, UI_PATH } from '../constants.js';
import { ApiError, sendError } from '../errors.js';
import type { ApiContext } from '../options.js';
import { visibleRuns } from '../session-access.js';
import { overviewReader, recentRuns, toolStats } from './ui-overview.js';
import { UI_ASSETS, UiBundleMissing, uiBundle } from './ui-bundle.js';
import type { UiSessions } from './ui-sessions.js';

const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; " +
  "base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

const SHELL = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Agent-Reach inspector</title>
<link rel="stylesheet" href="${UI_PATH}/app.css">
</head>
<body>
<div id="app"></div>
<script type="module" src="${UI_PATH}/app.js"></script>
</body>
</html>
`;

const LoginBody = Type.Object(
  { key: Type.String({ minLength: 1, maxLength: 512 }) },
  { additionalProperties: false },
);

function secured(reply: FastifyReply): FastifyReply {
  return reply
    .header('content-security-policy', CSP)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('cache-control', 'no-store');
}

/**
 * The run inspector at `/ui`: a page and its bundle (public: they hold no data), a login that turns an
 * API key into a session cookie, and the few reads the pages need beyond `/v1` (approvals waiting,
 * tool error rates, the overview's figures, the playground's models). Its pages call `/v1` with the session cookie, so a limited key sees only its agents.
 */
export function uiRoutes(app: FastifyInstance, ctx: ApiContext, sessions: UiSessions): void {
  const bundle = uiBundle(ctx.log);
  const hide = { hide: true };

  const shell = async (_: unknown, reply: FastifyReply) =>
    secured(reply).type('text/html; charset=utf-8').send(SHELL);
  app.get(UI_PATH, { schema: hide }, shell);
  app.get(`${UI_PATH}/`, { schema: hide }, shell);

  app.get<{ Params: { asset: string } }>(`${UI_PATH}/:asset`, { schema: hide }, async (request, reply) => {
    const { asset } = request.params;
    const type = Object.hasOwn(UI_ASSETS, asset) ? UI_ASSETS[asset] : undefined;
    if (!type) throw new ApiError('NOT_FOUND', `no route GET ${UI_PATH}/${asset}`);
    let body: Buffer;
    try {
      body = await bundle.read(asset);
    } catch (err) {
      // Answered here, not by the error handler: its UNAVAILABLE is Redis's, this is a missing build.
      if (err instanceof UiBundleMissing) return sendError(reply, new ApiError('UNAVAILABLE', err.message));
      throw err;
    }
    return secured(reply).type(type).send(body);
  });

  app.post<{ Body: { key: string } }>(
    `${UI_PATH}/login`,
    { schema: { ...hide, body: LoginBody } },
    async (request, reply) => {
      const principal = ctx.auth.identify(request.body.key);
      if (!principal) throw new ApiError('UNAUTHORIZED', 'that is not a valid API key');
      await sessions.open(reply, request, principal.id);
      ctx.log.info({ key: principal.name }, 'inspector login');
      return reply.code(204).send();
    },
  );

  app.post(`${UI_PATH}/logout`, { schema: hide }, async (request, reply) => {
    // A write like any other: a cross-site form could otherwise end a person's session.
    if (request.headers[UI_CSRF_HEADER] !== '1')
      throw new ApiError('FORBIDDEN', `a request on an inspector session must send ${UI_CSRF_HEADER}: 1`);
    await sessions.close(reply, request);
    return reply.code(204).send();
  });

  app.get(`${UI_PATH}/api/me`, { schema: hide }, async (request) => {
    const principal = requirePrincipal(ctx.auth, request);
    return {
      name: principal.name,
      ...(principal.agents ? { agents: [...principal.agents] } : {}),
      // Without tenants configured, the answer is what it was before them.
      ...(principal.tenants.size === 1 && principal.tenants.has(DEFAULT_TENANT)
        ? {}
        : { tenants: [...principal.tenants] }),
    };
  });

  app.get(`${UI_PATH}/api/approvals`, { schema: hide }, async (request) => {
    const principal = requirePrincipal(ctx.auth, request);
    const page = await searchRuns(ctx.deps.redis, ctx.deps.keys, {
      status: 'awaiting_approval',
      ...(principal.agents ? { agents: principal.agents } : {}),
      tenants: principal.tenants,
      limit: UI_APPROVALS_RUNS,
    });
    const shown = await visibleRuns(ctx, principal, page.runs);
    const loaded = await Promise.all(shown.map((r) => ctx.deps.control.get(r.runId)));
    return {
      approvals: loaded.flatMap((got) => {
        const state = got?.state;
        if (!state || state.status !== 'awaiting_approval') return [];
        return Object.values(state.approvals)
          .filter((a) => !a.decision)
          .map((a) => ({
            run_id: state.runId,
            agent: state.agent,
            input: state.input.slice(0, 300),
            tool_call_id: a.toolCallId,
            tool: a.tool,
            arguments: a.arguments,
            requested_at: a.requestedAt,
            ...(a.grant ? { grant: true } : {}),
          }));
      }),
    };
  });

  // The playground's model picker: exactly the models `POST /v1/runs` accepts as `model`.
  app.get(`${UI_PATH}/api/models`, { schema: hide }, async (request) => {
    requirePrincipal(ctx.auth, request);
    return { models: [...ctx.options.allowedModels].sort() };
  });

  app.get(`${UI_PATH}/api/tool-stats`, { schema: hide }, async (request) =>
    toolStats(await recentRuns(ctx, requirePrincipal(ctx.auth, request))),
  );

  const overview = overviewReader(ctx);
  app.addHook('onClose', async () => {
    await overview.close();
  });
  app.get(`${UI_PATH}/api/overview`, { schema: hide }, async (request) =>
    overview.read(requirePrincipal(ctx.auth, request)),
  );
}
