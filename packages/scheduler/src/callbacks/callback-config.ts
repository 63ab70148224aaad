import { AgentReachError } from '@agent-reach/protocol';
import { CallbackRefused, checkCallbackUrl } from './callback-address.js';
import {
  DEFAULT_CALLBACK_BACKOFF_MS,
  DEFAULT_CALLBACK_CONCURRENCY,
  DEFAULT_CALLBACK_MAX_ATTEMPTS,
  DEFAULT_CALLBACK_RETENTION_S,
  DEFAULT_CALLBACK_TIMEOUT_MS,
} from './constants.js';

/** The name in `CALLBACK_SECRETS` whose secret signs runs of keys without one of their own. */
export const FALLBACK_SECRET_NAME = '*';

/** How callbacks are signed, sent and refused, resolved once from the environment and frozen. */
export interface CallbackConfig {
  /** Signing secrets (`whsec_…`) by API key name; `*` for runs of any other key or none (`enqueueRun`). */
  readonly secrets: ReadonlyMap<string, string>;
  /** Hosts (names or addresses, lower case) a callback may reach even on a loopback or private address. */
  readonly allowedHosts: ReadonlySet<string>;
  readonly maxAttempts: number;
  /** Wait before the second attempt, in ms; doubling after. */
  readonly backoffMs: number;
  /** Longest one attempt may take, in ms. */
  readonly timeoutMs: number;
  readonly concurrency: number;
  /** How long ended deliveries and their state are kept, in s. */
  readonly retentionS: number;
}

const SECRET_PATTERN = /^whsec_[A-Za-z0-9+/]{22,}={0,2}$/;

/**
 * Reads `CALLBACK_SECRETS` (`name=whsec_…` comma-separated), `CALLBACK_ALLOWED_HOSTS` (comma-separated),
 * `CALLBACK_MAX_ATTEMPTS`, `CALLBACK_BACKOFF_MS`, `CALLBACK_TIMEOUT_MS`, `CALLBACK_CONCURRENCY`. Every
 * problem is reported at once (CONFIG_INVALID); a secret is never part of a message.
 */
export function resolveCallbackConfig(
  env: Readonly<Record<string, string | undefined>> = {},
  retentionS: number = DEFAULT_CALLBACK_RETENTION_S,
): CallbackConfig {
  const problems: string[] = [];
  const secrets = new Map<string, string>();
  for (const [i, entry] of list(env.CALLBACK_SECRETS).entries()) {
    const at = entry.indexOf('=');
    const name = at > 0 ? entry.slice(0, at).trim() : '';
    const secret = at > 0 ? entry.slice(at + 1).trim() : '';
    if (!name || !SECRET_PATTERN.test(secret))
      problems.push(
        `CALLBACK_SECRETS: entry ${i + 1} must be <key name or *>=whsec_<base64 of 16 or more bytes>`,
      );
    else if (secrets.has(name)) problems.push(`CALLBACK_SECRETS: "${name}" is named twice`);
    else secrets.set(name, secret);
  }
  const int = (name: string, fallback: number, min: number, max: number) => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min || n > max) {
      problems.push(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
      return fallback;
    }
    return n;
  };
  const config: CallbackConfig = {
    secrets,
    allowedHosts: new Set(list(env.CALLBACK_ALLOWED_HOSTS).map((h) => h.toLowerCase())),
    maxAttempts: int('CALLBACK_MAX_ATTEMPTS', DEFAULT_CALLBACK_MAX_ATTEMPTS, 1, 100),
    backoffMs: int('CALLBACK_BACKOFF_MS', DEFAULT_CALLBACK_BACKOFF_MS, 1, 3_600_000),
    timeoutMs: int('CALLBACK_TIMEOUT_MS', DEFAULT_CALLBACK_TIMEOUT_MS, 100, 120_000),
    concurrency: int('CALLBACK_CONCURRENCY', DEFAULT_CALLBACK_CONCURRENCY, 1, 1000),
    retentionS,
  };
  if (problems.length > 0)
    throw new AgentReachError('CONFIG_INVALID', problems.join('\n'), { details: problems });
  return Object.freeze(config);
}

/** The secret that signs the callbacks of runs started with API key `key` (undefined: none configured). */
export function secretFor(config: CallbackConfig, key: string | undefined): string | undefined {
  return (
    (key === undefined ? undefined : config.secrets.get(key)) ?? config.secrets.get(FALLBACK_SECRET_NAME)
  );
}

function list(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

/**
 * Checks a callback a caller asks for, before anything is stored: a URL the policy lets it reach (see
 * `checkCallbackUrl`) and a secret to sign it with for the caller's key. Throws `CallbackRefused`.
 */
export async function checkCallbackRequest(
  config: CallbackConfig,
  callback: { url: string },
  key: string | undefined,
): Promise<void> {
  if (secretFor(config, key) === undefined)
    throw new CallbackRefused(
      `no callback signing secret is configured for API key "${key ?? '(none)'}": an operator names one in CALLBACK_SECRETS`,
    );
  await checkCallbackUrl(callback.url, config.allowedHosts);
}
