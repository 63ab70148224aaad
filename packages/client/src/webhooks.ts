import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Signing and verifying callback deliveries as the Standard Webhooks specification describes them: the
 * headers `webhook-id`, `webhook-timestamp` (seconds) and `webhook-signature` (`v1,<base64 HMAC-SHA256 of
 * "<id>.<timestamp>.<body>">`, several space-separated when a secret is being rotated), with a secret
 * written `whsec_<base64>`. No dependency: node:crypto only.
 */

/** How far a delivery's timestamp may be from the receiver's clock, in seconds (the specification's 5 min). */
export const WEBHOOK_TOLERANCE_S = 300;
/** Prefix of a Standard Webhooks secret; the rest is the key, base64. */
export const WEBHOOK_SECRET_PREFIX = 'whsec_';

/** Why a delivery was refused: branch on the code, never on the message. */
export type WebhookErrorCode =
  | 'WEBHOOK_SECRET_INVALID'
  | 'WEBHOOK_HEADERS_MISSING'
  | 'WEBHOOK_TIMESTAMP_STALE'
  | 'WEBHOOK_SIGNATURE_INVALID'
  | 'WEBHOOK_BODY_INVALID';

export class WebhookVerificationError extends Error {
  constructor(
    readonly code: WebhookErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'WebhookVerificationError';
  }
}

/** What a callback delivery carries (its body, parsed). */
export interface CallbackEvent {
  /** `run.finished`, `run.awaiting_approval` or `workflow.finished`. */
  type: string;
  /** When the event happened, ISO 8601. */
  timestamp: string;
  /** The run (or workflow) it is about: ids, agent, status, reason, metadata. */
  data: Record<string, unknown>;
}

/** Headers as Node's `IncomingHttpHeaders`, a plain record, or a fetch `Headers`. */
export type WebhookHeaders =
  { get(name: string): string | null } | Readonly<Record<string, string | readonly string[] | undefined>>;

/** A new random secret, `whsec_` and 32 random bytes in base64. */
export function generateWebhookSecret(): string {
  return `${WEBHOOK_SECRET_PREFIX}${randomBytes(32).toString('base64')}`;
}

/** The key bytes of a `whsec_…` secret. */
function secretKey(secret: string): Buffer {
  const encoded = secret.startsWith(WEBHOOK_SECRET_PREFIX) ? secret.slice(WEBHOOK_SECRET_PREFIX.length) : '';
  const key = Buffer.from(encoded, 'base64');
  if (!encoded || key.length < 16 || key.toString('base64').replace(/=+$/, '') !== encoded.replace(/=+$/, ''))
    throw new WebhookVerificationError(
      'WEBHOOK_SECRET_INVALID',
      'the secret must be "whsec_" followed by at least 16 bytes in base64',
    );
  return key;
}

/** The `webhook-signature` value of a delivery: `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`. */
export function signWebhook(secret: string, id: string, timestampS: number, body: string): string {
  const mac = createHmac('sha256', secretKey(secret)).update(`${id}.${timestampS}.${body}`).digest('base64');
  return `v1,${mac}`;
}

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof (headers as { get?: unknown }).get === 'function')
    return (headers as { get(n: string): string | null }).get(name) ?? undefined;
  const value = (headers as Record<string, string | readonly string[] | undefined>)[name];
  return Array.isArray(value) ? (value as readonly string[])[0] : (value as string | undefined);
}

/**
 * Checks a delivery and returns its event: the three headers present, the timestamp within `toleranceS`
 * of now, and one of the signatures made with `secret` over the body exactly as received (a string, or
 * the raw bytes). Throws a {@link WebhookVerificationError} naming the problem otherwise.
 */
export function verifyWebhook(
  secret: string,
  headers: WebhookHeaders,
  body: string | Uint8Array,
  options: { toleranceS?: number; nowS?: number } = {},
): CallbackEvent {
  const key = secretKey(secret);
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (!id || !timestamp || !signatures)
    throw new WebhookVerificationError(
      'WEBHOOK_HEADERS_MISSING',
      'webhook-id, webhook-timestamp and webhook-signature are all required',
    );
  const seconds = Number(timestamp);
  const nowS = options.nowS ?? Math.floor(Date.now() / 1000);
  const tolerance = options.toleranceS ?? WEBHOOK_TOLERANCE_S;
  if (!/^\d{1,12}$/.test(timestamp) || Math.abs(nowS - seconds) > tolerance)
    throw new WebhookVerificationError(
      'WEBHOOK_TIMESTAMP_STALE',
      `webhook-timestamp ${timestamp} is more than ${tolerance} s from now (${nowS})`,
    );
  const text = typeof body === 'string' ? body : Buffer.from(body).toString('utf8');
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.${text}`).digest();
  const matches = signatures.split(' ').some((entry) => {
    const [version, mac] = entry.split(',', 2);
    if (version !== 'v1' || !mac) return false;
    const given = Buffer.from(mac, 'base64');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
  if (!matches)
    throw new WebhookVerificationError(
      'WEBHOOK_SIGNATURE_INVALID',
      'no v1 signature of webhook-signature matches the body signed with this secret',
    );
  try {
    return JSON.parse(text) as CallbackEvent;
  } catch {
    throw new WebhookVerificationError('WEBHOOK_BODY_INVALID', 'the signed body is not JSON');
  }
}
