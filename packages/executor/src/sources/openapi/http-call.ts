import { ToolError } from '@agent-reach/protocol';
import { constants } from '@agent-reach/shared';
import type { OperationPlan, ParameterPlan } from './operation.js';

/** Where an operation's calls go and how they authenticate (the secret already read from the environment). */
export interface CallTarget {
  /** Base URL without a trailing slash. */
  readonly baseUrl: string;
  readonly auth?:
    | { readonly type: 'bearer'; readonly secret: string }
    | { readonly type: 'header' | 'query'; readonly name: string; readonly secret: string };
}

/** 4xx answers that say the tool itself is misconfigured (credentials, method, media type), not the arguments. */
const TOOL_FAULT_STATUSES = new Set([401, 403, 405, 406, 407, 415]);
/** 4xx answers worth asking again: a timeout, too early, too many requests. */
const TRANSIENT_STATUSES = new Set([408, 425, 429]);

/**
 * Calls the operation with the tool's (validated) arguments under `signal`, and returns what the model
 * gets: the parsed JSON body of a 2xx answer, its text when it is not JSON, `{ status }` when it is empty.
 * Failures throw a ToolError: 408/425/429/5xx and network errors are `transient` (with the answer's
 * Retry-After); 401/403/405/406/407/415 are `execution_error`; other 4xx are `invalid_arguments`. Errors
 * carry the status and an excerpt of the body, never the query string (it may hold a credential).
 */
export async function callOperation(
  plan: OperationPlan,
  target: CallTarget,
  args: Record<string, unknown>,
  signal: AbortSignal,
): Promise<unknown> {
  let path = plan.path;
  const query = new URLSearchParams();
  const headers: Record<string, string> = { accept: 'application/json, text/plain;q=0.9, */*;q=0.8' };
  for (const p of plan.parameters) {
    const value = args[p.arg];
    if (value === undefined) continue;
    if (p.in === 'path') path = path.split(`{${p.name}}`).join(encodeURIComponent(simple(p, value)));
    else if (p.in === 'header') headers[p.name.toLowerCase()] = simple(p, value);
    else for (const [k, v] of queryPairs(p, value)) query.append(k, v);
  }
  let body: string | undefined;
  if (plan.bodyMediaType !== undefined && args.body !== undefined) {
    body = JSON.stringify(args.body);
    headers['content-type'] = plan.bodyMediaType;
  }
  const auth = target.auth;
  if (auth?.type === 'bearer') headers.authorization = `Bearer ${auth.secret}`;
  else if (auth?.type === 'header') headers[auth.name.toLowerCase()] = auth.secret;
  else if (auth?.type === 'query') query.set(auth.name, auth.secret);
  const where = `${plan.method} ${path}`;
  const search = query.size > 0 ? `?${query.toString()}` : '';
  let response: Response;
  let text: { text: string; cut: boolean };
  try {
    response = await fetch(`${target.baseUrl}${path}${search}`, {
      method: plan.method,
      headers,
      ...(body === undefined ? {} : { body }),
      signal,
    });
    text = await readCapped(response, constants.OPENAPI_MAX_RESPONSE_BYTES);
  } catch (err) {
    // The attempt's timeout (or the executor stopping) aborted it: that outcome is already decided.
    if (signal.aborted) throw err;
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    throw new ToolError(
      'transient',
      `${where}: no answer from ${new URL(target.baseUrl).origin}: ${cause?.code ?? cause?.message ?? (err as Error).message}`,
      { cause: err },
    );
  }
  if (response.status >= 200 && response.status < 300) return success(response, text);
  throw httpError(response, text.text, where);
}

/** The body of a 2xx answer as the model gets it. */
function success(response: Response, body: { text: string; cut: boolean }): unknown {
  if (body.text === '') return { status: response.status };
  if (body.cut)
    return {
      status: response.status,
      truncated: true,
      body_text: body.text,
      notice: `the answer was larger than ${constants.OPENAPI_MAX_RESPONSE_BYTES} bytes and was cut`,
    };
  if (/\bjson\b/i.test(response.headers.get('content-type') ?? '')) {
    try {
      return JSON.parse(body.text) as unknown;
    } catch {
      return body.text;
    }
  }
  return body.text;
}

function httpError(response: Response, body: string, where: string): ToolError {
  const { status } = response;
  const excerpt = body.replace(/\s+/g, ' ').trim().slice(0, constants.OPENAPI_ERROR_EXCERPT_CHARS);
  const message = `HTTP ${status}${response.statusText ? ` ${response.statusText}` : ''} from ${where}${excerpt ? `: ${excerpt}` : ''}`;
  if (status >= 500 || TRANSIENT_STATUSES.has(status)) {
    const retryAfterMs = retryAfter(response.headers.get('retry-after'));
    return new ToolError('transient', message, {
      status,
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    });
  }
  if (status >= 400 && !TOOL_FAULT_STATUSES.has(status))
    return new ToolError('invalid_arguments', message, { status });
  return new ToolError('execution_error', message, { status });
}

/**
 * A Retry-After header (seconds, or an HTTP date) in ms. One longer than OPENAPI_MAX_RETRY_AFTER_MS is
 * infinite: no attempt is made before the call's deadline, the model gets the error.
 */
export function retryAfter(header: string | null): number | undefined {
  if (header === null) return undefined;
  const trimmed = header.trim();
  const ms = /^\d+$/.test(trimmed) ? Number(trimmed) * 1000 : Date.parse(trimmed) - Date.now();
  if (!Number.isFinite(ms)) return undefined;
  return ms > constants.OPENAPI_MAX_RETRY_AFTER_MS ? Number.POSITIVE_INFINITY : Math.max(0, ms);
}

/** Reads at most `max` bytes of the body; the rest is not downloaded. */
export async function readCapped(response: Response, max: number): Promise<{ text: string; cut: boolean }> {
  if (!response.body) return { text: '', cut: false };
  const chunks: Uint8Array[] = [];
  let size = 0;
  let cut = false;
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    const room = max - size;
    if (value.byteLength > room) {
      chunks.push(value.subarray(0, room));
      size = max;
      cut = true;
      await reader.cancel().catch(() => undefined);
      break;
    }
    chunks.push(value);
    size += value.byteLength;
  }
  return { text: Buffer.concat(chunks, size).toString('utf8'), cut };
}

/** A path or header value in the `simple` style. */
function simple(p: ParameterPlan, value: unknown): string {
  if (p.json) return JSON.stringify(value);
  if (Array.isArray(value)) return value.map(String).join(',');
  if (typeof value === 'object' && value !== null)
    return Object.entries(value)
      .map(([k, v]) => (p.explode ? `${k}=${String(v)}` : `${k},${String(v)}`))
      .join(',');
  return String(value);
}

/** A query parameter's name/value pairs in its style (`form`, `spaceDelimited`, `pipeDelimited`, `deepObject`). */
function queryPairs(p: ParameterPlan, value: unknown): Array<[string, string]> {
  if (p.json) return [[p.name, JSON.stringify(value)]];
  if (Array.isArray(value)) {
    if (p.explode) return value.map((v) => [p.name, String(v)]);
    const sep = p.style === 'spaceDelimited' ? ' ' : p.style === 'pipeDelimited' ? '|' : ',';
    return [[p.name, value.map(String).join(sep)]];
  }
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value);
    if (p.style === 'deepObject') return entries.map(([k, v]) => [`${p.name}[${k}]`, String(v)]);
    if (p.explode) return entries.map(([k, v]) => [k, String(v)]);
    return [[p.name, entries.flatMap(([k, v]) => [k, String(v)]).join(',')]];
  }
  return [[p.name, String(value)]];
}
