import { APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import { withCauses } from './llm.js';
import { StreamIncomplete } from './stream-completion.js';
import { FleetLimitsUnavailable } from './provider-fleet-gate.js';

/**
 * Why a request to a model provider failed, as far as retrying and falling back care:
 * - `connection_refused`, `connection_reset`, `dns`, `tls`: the provider could not be reached;
 * - `auth` (401/403: the key), `not_found` (404: the model or the base URL's path);
 * - `timeout`, `rate_limit` (429), `server_error` (5xx, 408, 409), `stream` (a stream cut mid-answer),
 *   `connection` (any other connection failure): what another attempt may cure;
 * - `request`: another 4xx, about the request itself: not the provider's fault, never retried nor fallen back.
 */
export type ProviderFailureKind =
  | 'connection_refused'
  | 'connection_reset'
  | 'dns'
  | 'tls'
  | 'connection'
  | 'auth'
  | 'not_found'
  | 'timeout'
  | 'rate_limit'
  | 'server_error'
  | 'stream'
  | 'request';

/** Failures no retry cures: the provider's configuration is wrong (its host, TLS, key, model), or the request. */
const NEVER_RETRIED: ReadonlySet<ProviderFailureKind> = new Set([
  'dns',
  'tls',
  'auth',
  'not_found',
  'request',
]);

/**
 * Whether the last model of a turn tries again after this failure (within its `max_retries`): what another
 * attempt may cure, and a refused or reset connection (a provider that restarts), but never what only a
 * change of configuration cures.
 */
export function retriedWithoutFallback(kind: ProviderFailureKind): boolean {
  return !NEVER_RETRIED.has(kind);
}

/** Whether a failure of this kind counts on the provider's breaker (a missing model is not the provider's). */
export function countsOnBreaker(kind: ProviderFailureKind): boolean {
  return kind !== 'not_found' && kind !== 'request';
}

/** Whether a failure of this kind sends the turn to its next model (all but a bad request). */
export function fallsBack(kind: ProviderFailureKind): boolean {
  return kind !== 'request';
}

const TLS_CODE = /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|ERR_OSSL_)/;

/** The `code` of an error or of one of its causes (`ECONNREFUSED`, `ENOTFOUND`, …). */
function codesOf(err: unknown): string[] {
  const codes: string[] = [];
  let at: unknown = err;
  for (let depth = 0; at !== null && typeof at === 'object' && depth < 5; depth += 1) {
    const code = (at as { code?: unknown }).code;
    if (typeof code === 'string') codes.push(code);
    // AggregateError (happy eyeballs: one error per address) holds its causes in `errors`.
    const inner = (at as { errors?: unknown }).errors;
    if (Array.isArray(inner)) codes.push(...inner.flatMap(codesOf));
    at = (at as { cause?: unknown }).cause;
  }
  return codes;
}

/**
 * What kind of provider failure an error is; undefined for a cancelled call, which is the caller's.
 */
export function classifyFailure(err: unknown): ProviderFailureKind | undefined {
  if (err instanceof APIUserAbortError) return undefined;
  // Redis failed under the fleet-wide limits: not the provider's failure.
  if (err instanceof FleetLimitsUnavailable) return undefined;
  if (err instanceof Error && err.name === 'AbortError') return undefined;
  if (err instanceof APIConnectionTimeoutError) return 'timeout';
  if (err instanceof StreamIncomplete) return err.stalled ? 'timeout' : 'stream';
  if (err instanceof APIError && typeof err.status === 'number') {
    const s = err.status;
    if (s === 401 || s === 403) return 'auth';
    if (s === 404) return 'not_found';
    if (s === 429) return 'rate_limit';
    if (s >= 500 || s === 408 || s === 409) return 'server_error';
    return 'request';
  }
  const codes = codesOf(err);
  if (codes.includes('ECONNREFUSED')) return 'connection_refused';
  if (codes.some((c) => c === 'ENOTFOUND' || c === 'EAI_AGAIN' || c === 'EAI_NONAME')) return 'dns';
  if (codes.some((c) => TLS_CODE.test(c))) return 'tls';
  if (codes.some((c) => c === 'ECONNRESET' || c === 'EPIPE' || c === 'UND_ERR_SOCKET'))
    return 'connection_reset';
  if (codes.some((c) => c === 'ETIMEDOUT' || c === 'UND_ERR_CONNECT_TIMEOUT')) return 'timeout';
  // A stream broken mid-answer by anything else (a chunk that is not JSON, a socket closed).
  return 'connection';
}

/** How a kind reads in an error message. */
const KIND_TEXT: Record<ProviderFailureKind, string> = {
  connection_refused: 'connection refused',
  connection_reset: 'connection reset',
  dns: 'host name not found',
  tls: 'TLS failure',
  connection: 'connection failed',
  auth: 'API key refused',
  not_found: 'model or URL not found',
  timeout: 'timed out',
  rate_limit: 'rate limited',
  server_error: 'server error',
  stream: 'stream broken mid-answer',
  request: 'request refused',
};

/** A base URL without what may be secret in it: user, password, query and fragment. */
export function publicUrl(url: string | undefined): string {
  if (url === undefined) return 'https://api.openai.com/v1';
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname.replace(/\/$/, '')}`;
  } catch {
    return '(an invalid URL)';
  }
}

/** Where a model lives, for naming it in errors. */
export interface ModelPlace {
  provider: string;
  /** The model as its provider knows it. */
  model: string;
  baseUrl: string;
  /** The variable the provider's API key is read from, when there is one. */
  keyEnv?: string;
  /** The file the provider is declared in (absent for the default provider). */
  file?: string;
}

/**
 * A request to a model provider that failed: names the provider, the model, the base URL (without
 * secrets), the kind of failure and, for a refused key, the variable to check. `status` is the HTTP
 * status when there was one; `attempts` how many requests this provider was sent.
 */
export class ModelCallFailed extends Error {
  readonly status: number | undefined;
  readonly place: ModelPlace;

  constructor(
    readonly kind: ProviderFailureKind,
    place: ModelPlace,
    cause: unknown,
    readonly attempts: number,
  ) {
    super(describeFailure(kind, place, cause, attempts), { cause });
    this.name = 'ModelCallFailed';
    this.place = place;
    const status = (cause as { status?: unknown } | undefined)?.status;
    this.status = typeof status === 'number' ? status : undefined;
  }
}

function describeFailure(kind: ProviderFailureKind, p: ModelPlace, cause: unknown, attempts: number): string {
  const where = `provider "${p.provider}" (model ${p.model}, ${p.baseUrl})`;
  const tries = attempts > 1 ? ` after ${attempts} attempts` : '';
  return `${where}: ${KIND_TEXT[kind]}${tries}: ${scrub(withCauses(cause)).slice(0, 500)}${hint(kind, p)}`;
}

/** A cause's text without the secrets a URL in it may hold (`user:password@`, its query). */
function scrub(text: string): string {
  return text.replace(/(https?:\/\/)(?:[^\s/@]*@)?([^\s?#]*)(?:[?#][^\s)]*)?/g, '$1$2');
}

/** What to check, for the failures only a change of configuration cures. */
function hint(kind: ProviderFailureKind, p: ModelPlace): string {
  const declared = p.file ? ` in ${p.file}` : '';
  if (kind === 'auth')
    return p.keyEnv
      ? `; check the key in ${p.keyEnv}`
      : `; the provider has no api_key_env${declared}: declare the variable holding its key`;
  if (kind === 'not_found')
    return `; check that the provider serves model "${p.model}" and that base_url${declared} ends where its /chat/completions starts`;
  if (kind === 'dns' || kind === 'tls' || kind === 'connection_refused')
    return `; check base_url${p.file ? declared : ' (OPENAI_BASE_URL)'}`;
  return '';
}
