import { AgentReachApiError } from './errors.js';
import type { ResolvedClientOptions } from './options.js';
import { parseSse } from './sse.js';
import type { StreamOptions } from './client-api.js';

/** What every request of one client shares: where it goes, how it authenticates, how it is sent. */
export interface ClientContext {
  base: string;
  fetch: typeof fetch;
  auth: { authorization: string };
}

export function clientContext(o: ResolvedClientOptions): ClientContext {
  return { base: o.baseUrl, fetch: o.fetch, auth: { authorization: `Bearer ${o.apiKey}` } };
}

export interface RequestInit {
  body?: unknown;
  headers?: Record<string, string> | undefined;
  signal?: AbortSignal;
}

/** One HTTP request; a request that never got an answer rejects with a NETWORK error. */
export async function send(
  ctx: ClientContext,
  method: string,
  path: string,
  init: RequestInit = {},
): Promise<Response> {
  try {
    return await ctx.fetch(`${ctx.base}${path}`, {
      method,
      headers: {
        ...ctx.auth,
        ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
        ...init.headers,
      },
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
      ...(init.signal ? { signal: init.signal } : {}),
    });
  } catch (err) {
    if (init.signal?.aborted) throw err;
    throw new AgentReachApiError({
      status: 0,
      code: 'NETWORK',
      message: `cannot reach ${ctx.base}`,
      cause: err,
    });
  }
}

/** A JSON request: the parsed answer, or an {@link AgentReachApiError} for an error answer. */
export async function call<T>(
  ctx: ClientContext,
  method: string,
  path: string,
  init: RequestInit = {},
): Promise<T> {
  const res = await send(ctx, method, path, {
    ...init,
    headers: { accept: 'application/json', ...init.headers },
  });
  const body = parseJson(await res.text());
  if (!res.ok) throw AgentReachApiError.fromResponse(res.status, body);
  return body as T;
}

/** The JSON value of a text, or undefined for an empty or non-JSON one. */
function parseJson(text: string): unknown {
  try {
    return text ? (JSON.parse(text) as unknown) : undefined;
  } catch {
    return undefined;
  }
}

/** A list filter as a query string (`?a=1&b=2`, or nothing). */
export function query(f: object): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(f)) if (v !== undefined) q.set(k, String(v));
  const qs = q.toString();
  return qs ? `?${qs}` : '';
}

/** The `idempotency-key` header for a key, if there is one. */
export function idempotencyHeaders(key: string | undefined): Pick<RequestInit, 'headers'> {
  return key ? { headers: { 'idempotency-key': key } } : {};
}

/** An SSE route's messages with ids (heartbeat comments skipped). */
export async function* stream<E>(ctx: ClientContext, path: string, o: StreamOptions = {}): AsyncGenerator<E> {
  const res = await send(ctx, 'GET', path, {
    headers: { accept: 'text/event-stream', ...(o.lastEventId ? { 'last-event-id': o.lastEventId } : {}) },
    ...(o.signal ? { signal: o.signal } : {}),
  });
  if (!res.ok || !res.body) {
    const text = await res.text().catch(() => '');
    throw AgentReachApiError.fromResponse(res.status, parseJson(text));
  }
  for await (const m of parseSse(res.body)) {
    if (m.event === 'answer_delta') {
      if (o.answerDeltas) yield { id: m.id ?? '', type: m.event, data: JSON.parse(m.data) as unknown } as E;
      continue;
    }
    if (m.id === undefined) continue;
    yield { id: m.id, type: m.event, data: JSON.parse(m.data) as unknown } as E;
  }
}
