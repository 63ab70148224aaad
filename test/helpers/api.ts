import type { Keys } from '@agent-reach/protocol';
import { createLogger, loadAgents, type RedisClient } from '@agent-reach/shared';
import { TEST_AGENTS } from './processes.js';
import {
  SessionStore,
  startApiServer,
  type ApiServerDeps,
  type ApiServerOptions,
  type RunControl,
} from '@agent-reach/scheduler';
import { ToolCatalog } from '@agent-reach/scheduler/internal';
import { createClient } from '@agent-reach/client';
import { waitFor } from './redis.js';
import { startRunsHarness } from './runs.js';

/** A key for every agent, and one limited to `weather_only`. */
export const FULL_KEY = 'full-key-0123456789abcdef';
export const LIMITED_KEY = 'limited-key-0123456789abcdef';
export const TEST_API_KEYS = [
  { key: FULL_KEY, name: 'tester' },
  { key: LIMITED_KEY, name: 'weather-desk', agents: ['weather_only'] },
];

/** The llm-sim scenarios API tests name as `model`: the harness's API allows exactly these. */
export const TEST_MODELS = ['echo', 'approval', 'weather-then-answer', 'remember'];

export interface ApiResponse {
  status: number;
  headers: Headers;
  text: string;
  /** The body parsed as JSON, when it is JSON. */
  json: any;
}

/** Sends a request with `fetch`; `key: null` sends no Authorization header; `raw` is sent as the body verbatim. */
export async function request(
  baseUrl: string,
  method: string,
  path: string,
  init: { key?: string | null; body?: unknown; raw?: string; headers?: Record<string, string> } = {},
): Promise<ApiResponse> {
  const key = init.key === undefined ? FULL_KEY : init.key;
  const body = init.raw ?? (init.body === undefined ? undefined : JSON.stringify(init.body));
  const res = await fetch(`${baseUrl}${path}`, {
    method,
    headers: {
      ...(key === null ? {} : { authorization: `Bearer ${key}` }),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...init.headers,
    },
    ...(body === undefined ? {} : { body }),
  });
  const text = await res.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

/**
 * The runs harness (llm-sim, an executor and a scheduler in this process, on a prefix of their own)
 * plus the HTTP API on a free port, a client with the full key, and `call` for raw requests.
 */
export async function startApiHarness(
  options: Partial<ApiServerOptions> = {},
  env: Record<string, string> = {},
) {
  const h = await startRunsHarness({ RUN_RETENTION_S: '600', RUN_RETENTION_COUNT: '1000', ...env });
  const scheduler = h.schedulers[0]!;
  const deps: ApiServerDeps = {
    control: h.control,
    workflows: scheduler.workflows,
    sessions: new SessionStore(h.producer, h.keys, 600),
    runner: scheduler.runner,
    agents: loadAgents(h.config.agentsFile),
    redis: h.producer,
    keys: h.keys,
    metricsRegistry: scheduler.metricsRegistry,
    logger: createLogger('api-test', { level: 'silent' }),
  };
  const api = await startApiServer(deps, {
    apiKeys: TEST_API_KEYS,
    port: 0,
    host: '127.0.0.1',
    allowedModels: TEST_MODELS,
    ...options,
  });
  return {
    ...h,
    deps,
    api,
    url: api.url,
    client: createClient({ baseUrl: api.url, apiKey: FULL_KEY }),
    call: (method: string, path: string, init?: Parameters<typeof request>[3]) =>
      request(api.url, method, path, init),
    /** Starts one more API server on the same deps (other options, e.g. a tiny rate limit; other deps). */
    async extraServer(extra: Partial<ApiServerOptions>, depsOverride: Partial<ApiServerDeps> = {}) {
      return startApiServer(
        { ...deps, ...depsOverride },
        { apiKeys: TEST_API_KEYS, port: 0, host: '127.0.0.1', allowedModels: TEST_MODELS, ...extra },
      );
    },
    async close() {
      await api.close();
      await h.close();
    },
  };
}

export type ApiHarness = Awaited<ReturnType<typeof startApiHarness>>;

/**
 * What the API needs when no scheduler runs in the test: the test agents, a catalog read on `catalog`
 * (default: `redis`), and no breaker open.
 */
export function bareApiDeps(
  control: RunControl,
  redis: RedisClient,
  keys: Keys,
  catalog: RedisClient = redis,
): ApiServerDeps {
  return {
    control,
    sessions: new SessionStore(redis, keys, 600),
    runner: {
      catalog: new ToolCatalog(catalog, keys),
      breakers: { all: async () => [] } as unknown as ApiServerDeps['runner']['breakers'],
    },
    agents: loadAgents(TEST_AGENTS),
    redis,
    keys,
    logger: createLogger('api-test', { level: 'silent' }),
  };
}

/** Creates session `sessionId` and a run that has finished, for tests that need existing objects. */
export async function seedSessionAndFinishedRun(h: ApiHarness, sessionId: string): Promise<string> {
  await h.call('POST', '/v1/sessions', { body: { session_id: sessionId } });
  const runId = (await h.call('POST', '/v1/runs', { body: { agent: 'test_agent', input: 'hello' } })).json
    .run_id as string;
  await waitFor(async () => (await h.call('GET', `/v1/runs/${runId}`)).json.status === 'succeeded', 15_000);
  return runId;
}

/** The messages of an SSE body, parsed plainly (independent of the client's parser). */
export function sseMessages(
  text: string,
): Array<{ id?: string; event?: string; data?: string; comment?: string }> {
  return text
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const m: { id?: string; event?: string; data?: string; comment?: string } = {};
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) m.comment = line.slice(1).trim();
        else if (line.startsWith('id: ')) m.id = line.slice(4);
        else if (line.startsWith('event: ')) m.event = line.slice(7);
        else if (line.startsWith('data: ')) m.data = line.slice(6);
      }
      return m;
    });
}

/** An SSE response read as it arrives: `text` grows, `ended` resolves when the server closes it. */
export async function openEventStream(
  baseUrl: string,
  runId: string,
  init: { key?: string; lastEventId?: string } = {},
) {
  const controller = new AbortController();
  const res = await fetch(`${baseUrl}/v1/runs/${runId}/events`, {
    headers: {
      authorization: `Bearer ${init.key ?? FULL_KEY}`,
      ...(init.lastEventId ? { 'last-event-id': init.lastEventId } : {}),
    },
    signal: controller.signal,
  });
  const stream = { status: res.status, contentType: res.headers.get('content-type'), text: '' };
  const decoder = new TextDecoder();
  const ended = (async () => {
    if (!res.body) return;
    try {
      for await (const chunk of res.body)
        stream.text += decoder.decode(chunk as Uint8Array, { stream: true });
    } catch {
      // aborted by close()
    }
  })();
  return {
    stream,
    ended,
    messages: () => sseMessages(stream.text).filter((m) => m.id !== undefined),
    comments: () => sseMessages(stream.text).filter((m) => m.comment !== undefined),
    close: () => controller.abort(),
  };
}

/** A run parked on a call that waits for a person: its id, the call and its trace. */
export interface ParkedRun {
  runId: string;
  toolCallId: string;
  traceId: string;
}

/**
 * Starts a run with `key` at `path` (`/v1/runs`, or a session's messages) whose model (`approval`) asks
 * for a call that needs a person, and waits for it to park.
 */
export async function startParkedRun(
  h: ApiHarness,
  key: string,
  path: string,
  body: Record<string, unknown>,
): Promise<ParkedRun> {
  const posted = await h.call('POST', path, { key, body: { ...body, model: 'approval' } });
  if (posted.status !== 201) throw new Error(`POST ${path} answered ${posted.status}: ${posted.text}`);
  const runId = posted.json.run_id as string;
  const run = await waitFor(
    async () => {
      const r = (await h.call('GET', `/v1/runs/${runId}`, { key })).json;
      return r.status === 'awaiting_approval' ? r : undefined;
    },
    15_000,
    'the run to park',
  );
  return { runId, toolCallId: run.pending_approvals[0].tool_call_id, traceId: run.trace_id };
}

/** Every door that shows or changes one run: read, follow, cancel, decide (method, path, body). */
export function runDoors({ runId, toolCallId }: ParkedRun) {
  return [
    ['GET', `/v1/runs/${runId}`, undefined],
    ['GET', `/v1/runs/${runId}/events`, undefined],
    ['POST', `/v1/runs/${runId}/cancel`, undefined],
    ['POST', `/v1/runs/${runId}/approvals`, { tool_call_id: toolCallId, decision: 'approve' }],
  ] as const;
}
