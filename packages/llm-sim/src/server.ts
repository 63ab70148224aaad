import { setMaxListeners } from 'node:events';
import type { Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { randomBytes } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { invalidRequest, serverError, unknownUrl } from './api-errors.js';
import { builtInNoisy, handleChat, rejected, type ChatResult, type SimState } from './chat-handler.js';
import { DEFAULT_HOST, MAX_BODY_BYTES, NOISY_MODEL } from './constants.js';
import { FaultCounters } from './faults.js';
import { loadScenarios } from './load-scenarios.js';
import { Recorder, recordableHeaders } from './recorder.js';
import { sseData } from './stream-chunks.js';
import { validateScenario } from './scenario-validation.js';
import type { RecordedRequest, Scenario } from './types.js';

/** Options of {@link startLlmSim}; all optional. */
export interface LlmSimOptions {
  /** Port to listen on; 0 picks a free one. Default 0. */
  port?: number;
  /** Host to bind. Default '127.0.0.1'. */
  host?: string;
  /** Folder of scenario files (`*.yaml`, `*.yml`, `*.json`) to load. Default: none. */
  scenariosDir?: string;
  /** Scenarios to serve, added after (and replacing same-named ones from) `scenariosDir`. Default: none. */
  scenarios?: Scenario[];
  /** File to append every recorded request to, one JSON object a line. Default: memory only. */
  recordFile?: string;
}

/** A running simulator. */
export interface LlmSim {
  /** Base URL for an OpenAI client, e.g. `http://127.0.0.1:PORT/v1`. */
  readonly url: string;
  readonly port: number;
  /** Every chat-completions request so far, oldest first (the same array across calls). */
  readonly requests: RecordedRequest[];
  /** Chat requests received and not answered yet: delayed ones, and hung ones until their socket closes. */
  readonly inFlight: number;
  /** Validates a scenario and serves it, replacing one with the same name. */
  addScenario(scenario: Scenario): void;
  /** Empties {@link LlmSim.requests} in place. */
  clearRequests(): void;
  /** Stops listening; cuts hung requests and simulated delays short instead of waiting for them. */
  close(): Promise<void>;
}

/** {@link LlmSimOptions} with every default filled in. */
export interface ResolvedLlmSimOptions {
  port: number;
  host: string;
  scenariosDir: string | undefined;
  scenarios: Scenario[];
  recordFile: string | undefined;
}

export function resolveLlmSimOptions(o: LlmSimOptions = {}): ResolvedLlmSimOptions {
  return {
    port: o.port ?? 0,
    host: o.host ?? DEFAULT_HOST,
    scenariosDir: o.scenariosDir,
    scenarios: o.scenarios ?? [],
    recordFile: o.recordFile,
  };
}

/** What the routes of one simulator share. */
interface SimContext {
  state: SimState;
  recorder: Recorder;
  /** Sockets of hung answers, cut on close. */
  hung: Set<Socket>;
  /** Aborted on close: delayed answers and streams stop waiting. */
  closing: AbortController;
  /** Chat requests received and not answered yet. */
  inFlight: number;
  /** When the simulator started, in epoch seconds (its models' `created`). */
  createdS: number;
}

/** Marks a body that was not valid JSON, so the route can answer and record it like any bad request. */
class UnparsableBody {
  constructor(readonly reason: string) {}
}

function urlHost(host: string): string {
  if (host === '0.0.0.0') return '127.0.0.1';
  if (host === '::') return '[::1]';
  return host.includes(':') ? `[${host}]` : host;
}

/** Starts an OpenAI-compatible chat-completions server that plays scripted scenarios. */
export async function startLlmSim(opts: LlmSimOptions = {}): Promise<LlmSim> {
  const options = resolveLlmSimOptions(opts);
  const closing = new AbortController();
  // Every delayed answer listens on this one signal; hundreds may wait at once.
  setMaxListeners(0, closing.signal);
  const ctx: SimContext = {
    state: { scenarios: initialScenarios(options), counters: new FaultCounters() },
    recorder: new Recorder(options.recordFile),
    hung: new Set<Socket>(),
    closing,
    inFlight: 0,
    createdS: Math.floor(Date.now() / 1000),
  };
  const app = createApp(ctx);
  await app.listen({ port: options.port, host: options.host });
  const port = (app.server.address() as AddressInfo).port;
  return {
    url: `http://${urlHost(options.host)}:${port}/v1`,
    port,
    requests: ctx.recorder.requests,
    get inFlight() {
      return ctx.inFlight;
    },
    addScenario(scenario: Scenario) {
      const valid = validateScenario(scenario, 'addScenario()');
      ctx.state.scenarios.set(valid.name, valid);
    },
    clearRequests: () => ctx.recorder.clear(),
    async close() {
      closing.abort();
      for (const socket of ctx.hung) socket.destroy();
      await app.close();
    },
  };
}

/** The scenarios of `scenariosDir`, then those passed in (replacing same-named ones). */
function initialScenarios(options: ResolvedLlmSimOptions): Map<string, Scenario> {
  const scenarios = new Map<string, Scenario>();
  if (options.scenariosDir !== undefined) {
    for (const s of loadScenarios(options.scenariosDir)) scenarios.set(s.name, s);
  }
  options.scenarios.forEach((s, i) => {
    const scenario = validateScenario(s, `options.scenarios[${i}]`);
    scenarios.set(scenario.name, scenario);
  });
  return scenarios;
}

function createApp(ctx: SimContext): FastifyInstance {
  // A simulator must never keep its owner waiting on close: every connection is cut, busy or idle.
  const app = Fastify({ logger: false, bodyLimit: MAX_BODY_BYTES, forceCloseConnections: true });
  app.removeAllContentTypeParsers();
  // Like the real API, any content type is read as JSON; bad JSON is answered by the route.
  app.addContentTypeParser('*', { parseAs: 'string' }, (_req, text, done) => {
    try {
      done(null, JSON.parse(text as string));
    } catch (err) {
      done(null, new UnparsableBody((err as Error).message));
    }
  });
  app.addHook('onRequest', async (_req, reply) => {
    reply.header('x-request-id', `req_${randomBytes(16).toString('hex')}`);
  });
  app.setNotFoundHandler((req, reply) => {
    const { status, body } = unknownUrl(req.method, req.url);
    return reply.code(status).send(body);
  });
  app.setErrorHandler((err: { statusCode?: number; message: string }, _req, reply) => {
    const status = err.statusCode ?? 500;
    const answer = status >= 400 && status < 500 ? invalidRequest(err.message) : serverError(500);
    return reply.code(status >= 400 && status < 500 ? status : 500).send(answer.body);
  });
  addModelRoutes(app, ctx);
  app.post('/v1/chat/completions', (req, reply) => answer(ctx, req, reply));
  return app;
}

/** `GET /v1/models` and `/v1/models/:id`: one model per scenario. */
function addModelRoutes(app: FastifyInstance, ctx: SimContext): void {
  const modelEntry = (id: string) => ({ id, object: 'model', created: ctx.createdS, owned_by: 'llm-sim' });
  app.get('/v1/models', async () => ({
    object: 'list',
    data: [...new Set([...ctx.state.scenarios.keys(), NOISY_MODEL])].map(modelEntry),
  }));
  app.get<{ Params: { id: string } }>('/v1/models/:id', async (req, reply) => {
    if (ctx.state.scenarios.has(req.params.id) || builtInNoisy(req.params.id))
      return modelEntry(req.params.id);
    const message = `The model '${req.params.id}' does not exist or you do not have access to it.`;
    return reply
      .code(404)
      .send({ error: { message, type: 'invalid_request_error', param: 'model', code: 'model_not_found' } });
  });
}

async function answer(ctx: SimContext, req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  ctx.inFlight += 1;
  try {
    return await act(ctx, req, reply);
  } finally {
    ctx.inFlight -= 1;
  }
}

async function act(ctx: SimContext, req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const at = new Date().toISOString();
  const unparsable = req.body instanceof UnparsableBody ? req.body : undefined;
  const result: ChatResult = unparsable
    ? rejected(invalidRequest(`the request body is not valid JSON: ${unparsable.reason}`))
    : handleChat(ctx.state, req.headers, req.body);
  const entry: Omit<RecordedRequest, 'status' | 'response'> = {
    at,
    scenario: result.scenario,
    turn: result.turn,
    headers: recordableHeaders(req.headers),
    body: unparsable ? undefined : req.body,
    ...(result.faults.length > 0 ? { faults: result.faults } : {}),
    ...(result.warnings.length > 0 ? { warnings: result.warnings } : {}),
    ...(result.mistakes ? { mistakes: result.mistakes } : {}),
  };
  if (result.delayMs > 0)
    await sleep(result.delayMs, undefined, { signal: ctx.closing.signal }).catch(() => {});
  const action = result.action;
  if (action.kind === 'reply' && !ctx.closing.signal.aborted) {
    ctx.recorder.record({ ...entry, status: action.status, response: action.body });
    return reply
      .code(action.status)
      .headers(action.headers ?? {})
      .send(action.body);
  }
  if (action.kind === 'stream' && !ctx.closing.signal.aborted) {
    ctx.recorder.record({ ...entry, status: 200, response: action.body });
    reply.hijack();
    await streamChunks(ctx, req, reply, action);
    return reply;
  }
  ctx.recorder.record({ ...entry, status: null, response: null });
  reply.hijack();
  if (action.kind === 'hang' && !ctx.closing.signal.aborted) hang(ctx, req.raw.socket);
  else req.raw.socket.destroy();
  return reply;
}

/** Leaves the request unanswered (in flight) until its socket closes, or the simulator does. */
function hang(ctx: SimContext, socket: Socket): void {
  ctx.hung.add(socket);
  ctx.inFlight += 1;
  socket.once('close', () => {
    ctx.hung.delete(socket);
    ctx.inFlight -= 1;
  });
}

/** Writes the chunks as server-sent events, breaking the stream where its fault says. */
async function streamChunks(
  ctx: SimContext,
  req: FastifyRequest,
  reply: FastifyReply,
  action: Extract<ChatResult['action'], { kind: 'stream' }>,
): Promise<void> {
  const res = reply.raw;
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-request-id': String(reply.getHeader('x-request-id') ?? ''),
  });
  const fault = action.fault;
  for (const [i, chunk] of action.chunks.entries()) {
    if (fault !== undefined && i === fault.afterChunks) {
      if (fault.type === 'stream_malformed') {
        res.write(`data: {"id":"${chunk.id}","object":"chat.completion.chunk","choices":[{"delta":{"con\n\n`);
        continue;
      }
      if (fault.type === 'stream_cut') req.raw.socket.destroy();
      else hang(ctx, req.raw.socket);
      return;
    }
    res.write(sseData(chunk));
    // Each chunk leaves in its own write, as a model's tokens do.
    await new Promise((resolve) => setImmediate(resolve));
    if (ctx.closing.signal.aborted || res.destroyed) return;
  }
  res.end(sseData('[DONE]'));
}
