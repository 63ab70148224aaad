import type { AddressInfo } from 'node:net';
import { TenantQuotas } from '../runs/tenant-quotas.js';
import { createTenantMetrics } from './tenant-admission.js';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import rateLimit from '@fastify/rate-limit';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { ApiKeyTable, authHook, type RoutePolicy } from './auth.js';
import { BOARD_PATH, registerBoard } from './bull-board.js';
import { ApiError, clientErrorHandler, errorHandler, frameworkErrors, sendError } from './errors.js';
import { IdempotencyStore } from './idempotency.js';
import { registerJsonBodyParser } from './json-body.js';
import {
  resolveApiOptions,
  type ApiContext,
  type ApiServerDeps,
  type ApiServerOptions,
  type ResolvedApiOptions,
} from './options.js';
import { agentRoutes } from './routes/agents.js';
import { evalRoutes } from './routes/evals.js';
import { eventRoutes } from './routes/events.js';
import { workflowRoutes } from './routes/workflows.js';
import { createEventStreamer } from './event-stream.js';
import { healthRoutes } from './routes/health.js';
import { mcpRoutes } from './mcp/mcp-routes.js';
import { openAiRoutes } from './openai/openai-routes.js';
import { runRoutes } from './routes/runs.js';
import { callbackRoutes } from './routes/callbacks.js';
import { sessionRoutes } from './routes/sessions.js';
import { scheduleRoutes, startScheduleFirings } from './routes/schedules.js';
import { inboundEventRoutes } from './routes/inbound-events.js';
import { NO_EVENTS } from '../triggers/inbound-events.js';
import { createValidatorCompiler } from './validation.js';
import { DEFAULT_API_HOST, DEFAULT_API_PORT, UI_CSRF_HEADER, UI_PATH } from './constants.js';
import { uiRoutes } from './ui/ui-routes.js';
import { UiSessions } from './ui/ui-sessions.js';

/** Who may call a route, by its URL. */
function policyFor(url: string, o: ResolvedApiOptions): RoutePolicy {
  if (url === '/healthz' || url === '/readyz') return o.openHealth ? 'public' : 'key';
  // Metrics name every tenant and key: an operator's door, unless the operator opened it.
  if (url === '/metrics') return o.openMetrics ? 'public' : 'operator';
  // Signed by their sender: the route checks the signature instead of a key.
  if (url === '/v1/events/:name') return 'public';
  if (url === '/openapi.json' || url === '/docs' || url.startsWith('/docs/')) return 'public';
  if (url === BOARD_PATH || url.startsWith(`${BOARD_PATH}/`)) return 'admin';
  // The inspector's page, bundle, login and logout hold no data; its reads need a key or a session.
  if (url === UI_PATH || (url.startsWith(`${UI_PATH}/`) && !url.startsWith(`${UI_PATH}/api/`)))
    return 'public';
  return 'key';
}

/**
 * The HTTP API as a Fastify instance, routes registered, not listening. Every route is authenticated
 * (but those `policyFor` opens), rate limited per key, validated against its JSON Schemas and answers
 * errors as `{ error: { code, message, details? } }`.
 */
export async function createApiServer(
  deps: ApiServerDeps,
  options: ApiServerOptions,
): Promise<FastifyInstance> {
  const ctx = createApiContext(deps, options);
  const sessions = ctx.options.ui ? new UiSessions(deps.redis, deps.keys) : undefined;
  const app = createFastify(ctx);
  await registerGuards(app, ctx, sessions);
  await registerDocs(app, ctx);
  healthRoutes(app, ctx);
  runRoutes(app, ctx);
  callbackRoutes(app, ctx);
  const streamEvents = createEventStreamer(app, ctx);
  eventRoutes(app, ctx, streamEvents);
  workflowRoutes(app, ctx, streamEvents);
  sessionRoutes(app, ctx);
  agentRoutes(app, ctx);
  evalRoutes(app, ctx);
  const schedules = scheduleRoutes(app, ctx);
  if (deps.triggers?.fireSchedules) startScheduleFirings(app, ctx, schedules);
  await inboundEventRoutes(app, ctx, deps.triggers?.events ?? NO_EVENTS);
  mcpRoutes(app, ctx);
  await openAiRoutes(app, ctx);
  if (ctx.options.board) await registerBoard(app, ctx);
  if (sessions) uiRoutes(app, ctx, sessions);
  return app;
}

/** What every route reads: the options resolved once, the keys, idempotency, quotas and their metrics. */
function createApiContext(deps: ApiServerDeps, options: ApiServerOptions): ApiContext {
  const opts = resolveApiOptions(options);
  const auth = new ApiKeyTable(options.apiKeys);
  const quotas = new TenantQuotas(deps.redis, deps.keys, opts.tenantQuotas);
  const tenants = [...new Set([...auth.tenants, ...quotas.limits.keys()])].sort();
  return {
    deps,
    options: opts,
    auth,
    log: deps.logger.child({ component: 'api' }),
    idempotency: new IdempotencyStore(deps.redis, deps.keys, opts.idempotencyTtlS),
    quotas,
    ...(deps.metricsRegistry ? { metrics: createTenantMetrics(deps.metricsRegistry, quotas, tenants) } : {}),
  };
}

/** The Fastify instance: its logger, limits, validator, JSON parser, error handlers and request log. */
function createFastify(ctx: ApiContext): FastifyInstance {
  const { log } = ctx;
  const app = Fastify({
    // A pino Logger is a FastifyBaseLogger; typing it as one keeps FastifyInstance's default generics.
    loggerInstance: log as FastifyBaseLogger,
    // Request lines at debug (onResponse below), not Fastify's two info lines per request.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: ctx.options.bodyLimitBytes,
    trustProxy: ctx.options.trustProxy,
    routerOptions: { maxParamLength: 256 },
    frameworkErrors,
    clientErrorHandler,
  });
  app.setValidatorCompiler(createValidatorCompiler());
  registerJsonBodyParser(app);
  app.setErrorHandler(errorHandler(log));
  app.addHook('onResponse', async (request, reply) => {
    log.debug(
      {
        method: request.method,
        route: request.routeOptions.url,
        statusCode: reply.statusCode,
        ms: reply.elapsedTime,
      },
      'request',
    );
  });
  return app;
}

/** The rate limit, then authentication, on every route registered after this; a 404 for the rest. */
async function registerGuards(
  app: FastifyInstance,
  ctx: ApiContext,
  sessions: UiSessions | undefined,
): Promise<void> {
  const { auth, deps } = ctx;
  await app.register(rateLimit, {
    global: true,
    max: ctx.options.rateLimitPerMinute,
    timeWindow: 60_000,
    redis: deps.redis,
    nameSpace: `${deps.keys.prefix}:ratelimit:`,
    // A Redis hiccup must not turn every request into an error; the route itself will report it.
    skipOnError: true,
    keyGenerator: (request) => {
      const principal = auth.principalOf(request, request.url.startsWith(BOARD_PATH));
      return principal ? `key:${principal.id}` : `ip:${request.ip}`;
    },
    errorResponseBuilder: (_request, context) =>
      new ApiError('RATE_LIMITED', `rate limit exceeded, retry in ${context.after}`),
  });
  // Authentication runs after the rate limit (routes' onRequest hooks run in the order added), so
  // that guessing keys is limited per IP too.
  app.addHook('onRoute', (route) => {
    const policy = policyFor(route.url, ctx.options);
    const hooks =
      route.onRequest === undefined
        ? []
        : Array.isArray(route.onRequest)
          ? route.onRequest
          : [route.onRequest];
    route.onRequest = [...hooks, authHook(auth, policy, sessions, UI_CSRF_HEADER)];
    if (policy === 'public' && route.schema) route.schema = { ...route.schema, security: [] };
  });
  app.setNotFoundHandler({ preHandler: app.rateLimit() }, (request, reply) =>
    sendError(reply, new ApiError('NOT_FOUND', `no route ${request.method} ${request.url.split('?')[0]}`)),
  );
}

/** The OpenAPI document at `/openapi.json`, and Swagger UI at `/docs` unless turned off. */
async function registerDocs(app: FastifyInstance, ctx: ApiContext): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Agent-Reach API',
        version: '1',
        description:
          'Runs of LLM agents whose tool calls execute on a queue-driven executor fleet. Errors: `{ error: { code, message, details? } }`.',
      },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
      tags: OPENAPI_TAGS,
    },
  });
  if (ctx.options.docs) await app.register(swaggerUi, { routePrefix: '/docs' });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}

const OPENAPI_TAGS = [
  { name: 'runs', description: 'start, read, follow, cancel runs; decide approvals' },
  {
    name: 'workflows',
    description: 'several agents collaborating: nodes run as runs once their dependencies finished',
  },
  { name: 'sessions', description: 'history shared by the runs of a conversation' },
  { name: 'agents', description: 'agents, their tools and breaker states' },
  { name: 'schedules', description: 'runs started on a cron expression or an interval' },
  { name: 'events', description: 'signed events from other systems that start runs' },
  { name: 'evals', description: 'reports of agent-reach eval: reach measured per variant, compared' },
  { name: 'mcp', description: 'agents as MCP tools (streamable HTTP)' },
  { name: 'openai', description: 'agents as OpenAI models: chat completions, responses' },
  { name: 'health', description: 'liveness, readiness, metrics' },
];

/** A listening API server. */
export interface ApiServer {
  readonly app: FastifyInstance;
  /** e.g. `http://127.0.0.1:8080` */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

/** Where the API listens: default `0.0.0.0:8080`. */
function resolveListenOptions(o: { port?: number; host?: string }): { port: number; host: string } {
  return { port: o.port ?? DEFAULT_API_PORT, host: o.host ?? DEFAULT_API_HOST };
}

/** Creates the API server and listens (default `0.0.0.0:8080`; `port` 0 picks a free port). */
export async function startApiServer(
  deps: ApiServerDeps,
  options: ApiServerOptions & { port?: number; host?: string },
): Promise<ApiServer> {
  const app = await createApiServer(deps, options);
  await app.listen(resolveListenOptions(options));
  const address = app.server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${host === '0.0.0.0' ? '127.0.0.1' : host === '[::]' ? '[::1]' : host}:${address.port}`;
  deps.logger.info({ url }, 'api listening');
  return { app, url, port: address.port, close: () => app.close() };
}
