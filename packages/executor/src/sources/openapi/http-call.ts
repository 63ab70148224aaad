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
  /** Told the HTTP status of each answer, or `none` when no answer came (for the executor's metrics). */
  readonly observe?: (status: number | 'none') => void;
}

/** 4xx answers that say the tool itself is misconfigured (credentials, method, media type), not the arguments. */
const TOOL_FAULT_STATUSES = new Set([401, 403, 405, 406, 407, 415]);
/** 4xx answers worth asking again: a timeout, too early, too many requests. */
const TRANSIENT_STATUSES = new Set([408, 425, 429]);

/**
 * Calls the operation with the tool's (validated) arguments under `signal`, and returns what the model
 * gets: the parsed JSON body of a 2xx answer, its text when it is not JSON, `{ status }` when it is empty.
 * Failures throw a ToolError: 408/425/429/5xx and network errors are `transient` (with the answer's
 * Retry-After); 401/403/405/406/407/415 and 3xx (redirects are never followed) are `execution_error`;
 * other 4xx are `invalid_arguments`. Errors name the method and path as sent and carry the status and an
 * excerpt of the body, never the query string (it may hold a credential).
 */
export async function callOperation(
  plan: OperationPlan,
  target: CallTarget,
  args: Record<string, unknown>,
  signal: AbortSignal,
): Promise<unknown> {
  const { url, where, init } = buildRequest(plan, target, args);
  let response: Response;
  let text: { text: string; cut: boolean };
  try {
    // A redirect is never followed: the credential goes only to the declared base URL's origin, and an
    // answer from anywhere else must not reach the model as the operation's.
    response = await fetch(url, { ...init, redirect: 'manual', signal });
    text = await readCapped(response, constants.OPENAPI_MAX_RESPONSE_BYTES);
  } catch (err) {
    // The attempt's timeout (or the executor stopping) aborted it: that outcome is already decided.
    if (signal.aborted) throw err;
    target.observe?.('none');
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    throw new ToolError(
      'transient',
      `${where}: no answer from ${url.origin}: ${cause?.code ?? cause?.message ?? (err as Error).message}`,
      { cause: err },
    );
  }
  target.observe?.(response.status);
  if (response.status >= 200 && response.status < 300) return success(response, text);
  if (response.status >= 300 && response.status < 400) throw redirectError(response, where, url);
  throw httpError(response, text.text, where);
}

/** The request one call makes, and how errors name it (method and path as sent, without the query). */
interface PlannedRequest {
  url: URL;
  where: string;
  init: { method: string; headers: Record<string, string>; body?: string };
}

/**
 * The request of a call, or an `invalid_arguments` ToolError for arguments no request can carry: a path
 * parameter that is empty, `.` or `..` (a URL parser folds those into another path), a header value with
 * CR, LF, NUL or a character outside Latin-1. The URL is checked to stay under the base URL.
 */
export function buildRequest(
  plan: OperationPlan,
  target: CallTarget,
  args: Record<string, unknown>,
): PlannedRequest {
  let path = plan.path;
  const query = new URLSearchParams();
  const headers: Record<string, string> = { accept: 'application/json, text/plain;q=0.9, */*;q=0.8' };
  for (const p of plan.parameters) {
    const value = args[p.arg];
    if (value === undefined) continue;
    if (p.in === 'path') path = path.split(`{${p.name}}`).join(pathSegment(p, value));
    else if (p.in === 'header') headers[p.name.toLowerCase()] = headerValue(p, value);
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
  const search = query.size > 0 ? `?${query.toString()}` : '';
  const url = new URL(`${target.baseUrl}${path}${search}`);
  const base = new URL(target.baseUrl);
  const basePath = base.pathname.replace(/\/+$/, '');
  if (url.origin !== base.origin || !(url.pathname === basePath || url.pathname.startsWith(`${basePath}/`)))
    throw new ToolError(
      'execution_error',
      `${plan.method} ${url.pathname}: the request would leave the base URL ${base.origin}${basePath}; it was not sent`,
    );
  return {
    url,
    where: `${plan.method} ${url.pathname}`,
    init: { method: plan.method, headers, ...(body === undefined ? {} : { body }) },
  };
}

/** A path parameter as one encoded segment; a value a URL parser would fold into another path is refused. */
function pathSegment(p: ParameterPlan, value: unknown): string {
  const text = simple(p, value);
  if (text === '' || text === '.' || text === '..')
    throw new ToolError(
      'invalid_arguments',
      `path parameter "${p.arg}" cannot be ${JSON.stringify(text)}: it must name one path segment; no request was made`,
      { field: `/${p.arg}` },
    );
  return encodeURIComponent(text);
}

/** A header parameter's value; one that cannot be an HTTP header value is refused. */
function headerValue(p: ParameterPlan, value: unknown): string {
  const text = simple(p, value);
  // eslint-disable-next-line no-control-regex -- control characters are what is refused here
  if (/[\r\n\0]|[^\u0000-\u00ff]/.test(text))
    throw new ToolError(
      'invalid_arguments',
      `header parameter "${p.arg}" cannot hold a line break, NUL or a character outside Latin-1; no request was made`,
      { field: `/${p.arg}` },
    );
  return text;
}

/** A 3xx answer: not followed (the credential stays with the base URL's origin), and said so. */
function redirectError(response: Response, where: string, url: URL): ToolError {
  const location = response.headers.get('location');
  let to = '';
  if (location !== null) {
    try {
      const next = new URL(location, url);
      // Only the origin and path: a query string may hold anything.
      to = ` to ${next.origin === url.origin ? '' : next.origin}${next.pathname}`;
    } catch {
      to = ' to an unreadable location';
    }
  }
  return new ToolError(
    'execution_error',
    `HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ''} from ${where}: a redirect${to} that was not followed (an HTTP tool sends requests only to its base URL)`,
    { status: response.status },
  );
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
