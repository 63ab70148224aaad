import { setMaxListeners } from 'node:events';
import type { Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { randomBytes } from 'node:crypto';
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import { invalidRequest, serverError, unknownUrl } from './api-errors.js';
import { handleChat, rejected, type ChatResult, type SimState } from './chat-handler.js';
import { DEFAULT_HOST, MAX_BODY_BYTES } from './constants.js';
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

type ResolvedOptions = Required<Pick<LlmSimOptions, 'port' | 'host'>> & LlmSimOptions;

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
  const options: ResolvedOptions = { ...opts, port: opts.port ?? 0, host: opts.host ?? DEFAULT_HOST };
  const state: SimState = { scenarios: new Map(), counters: new FaultCounters() };
  if (options.scenariosDir !== undefined) {
    for (const s of loadScenarios(options.scenariosDir)) state.scenarios.set(s.name, s);
  }
  (options.scenarios ?? []).forEach((s, i) => {
    const scenario = validateScenario(s, `options.scenarios[${i}]`);
    state.scenarios.set(scenario.name, scenario);
  });
  const recorder = new Recorder(options.recordFile);
  const hung = new Set<Socket>();
  const closing = new AbortController();
  // Every delayed answer listens on this one signal; hundreds may wait at once.
  setMaxListeners(0, closing.signal);
  const createdS = Math.floor(Date.now() / 1000);

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

  const modelEntry = (id: string) => ({ id, object: 'model', created: createdS, owned_by: 'llm-sim' });
  app.get('/v1/models', async () => ({ object: 'list', data: [...state.scenarios.keys()].map(modelEntry) }));
  app.get<{ Params: { id: string } }>('/v1/models/:id', async (req, reply) => {
    if (state.scenarios.has(req.params.id)) return modelEntry(req.params.id);
    const message = `The model '${req.params.id}' does not exist or you do not have access to it.`;
    return reply
      .code(404)
      .send({ error: { message, type: 'invalid_request_error', param: 'model', code: 'model_not_found' } });
  });

  let inFlight = 0;
  async function answer(req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    inFlight += 1;
    try {
      return await act(req, reply);
    } finally {
      inFlight -= 1;
    }
  }

  async function act(req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const at = new Date().toISOString();
    const unparsable = req.body instanceof UnparsableBody ? req.body : undefined;
    const result: ChatResult = unparsable
      ? rejected(invalidRequest(`the request body is not valid JSON: ${unparsable.reason}`))
      : handleChat(state, req.headers, req.body);
    const entry: Omit<RecordedRequest, 'status' | 'response'> = {
      at,
      scenario: result.scenario,
      turn: result.turn,
      headers: recordableHeaders(req.headers),
      body: unparsable ? undefined : req.body,
      ...(result.faults.length > 0 ? { faults: result.faults } : {}),
      ...(result.warnings.length > 0 ? { warnings: result.warnings } : {}),
    };
    if (result.delayMs > 0)
      await sleep(result.delayMs, undefined, { signal: closing.signal }).catch(() => {});
    const action = result.action;
    if (action.kind === 'reply' && !closing.signal.aborted) {
      recorder.record({ ...entry, status: action.status, response: action.body });
      return reply
        .code(action.status)
        .headers(action.headers ?? {})
        .send(action.body);
    }
    if (action.kind === 'stream' && !closing.signal.aborted) {
      recorder.record({ ...entry, status: 200, response: action.body });
      reply.hijack();
      await streamChunks(req, reply, action);
      return reply;
    }
    recorder.record({ ...entry, status: null, response: null });
    reply.hijack();
    const socket = req.raw.socket;
    if (action.kind === 'hang' && !closing.signal.aborted) {
      hung.add(socket);
      inFlight += 1;
      socket.once('close', () => {
        hung.delete(socket);
        inFlight -= 1;
      });
    } else {
      socket.destroy();
    }
    return reply;
  }
  /** Writes the chunks as server-sent events, breaking the stream where its fault says. */
  async function streamChunks(
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
          res.write(
            `data: {"id":"${chunk.id}","object":"chat.completion.chunk","choices":[{"delta":{"con\n\n`,
          );
          continue;
        }
        if (fault.type === 'stream_cut') {
          req.raw.socket.destroy();
          return;
        }
        const socket = req.raw.socket;
        hung.add(socket);
        inFlight += 1;
        socket.once('close', () => {
          hung.delete(socket);
          inFlight -= 1;
        });
        return;
      }
      res.write(sseData(chunk));
      // Each chunk leaves in its own write, as a model's tokens do.
      await new Promise((resolve) => setImmediate(resolve));
      if (closing.signal.aborted || res.destroyed) return;
    }
    res.end(sseData('[DONE]'));
  }
  app.post('/v1/chat/completions', answer);

  await app.listen({ port: options.port, host: options.host });
  const port = (app.server.address() as AddressInfo).port;
  return {
    url: `http://${urlHost(options.host)}:${port}/v1`,
    port,
    requests: recorder.requests,
    get inFlight() {
      return inFlight;
    },
    addScenario(scenario: Scenario) {
      const valid = validateScenario(scenario, 'addScenario()');
      state.scenarios.set(valid.name, valid);
    },
    clearRequests: () => recorder.clear(),
    async close() {
      closing.abort();
      for (const socket of hung) socket.destroy();
      await app.close();
    },
  };
}
