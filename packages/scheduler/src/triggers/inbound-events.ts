import { readFileSync } from 'node:fs';
import { timingSafeEqual, createHmac } from 'node:crypto';
import { parse } from 'yaml';
import { AgentReachError, DEFAULT_TENANT, NAME_PATTERN, TENANT_PATTERN } from '@agent-reach/protocol';
import { signedHeaders } from '../callbacks/callback-sender.js';
import {
  DEFAULT_EVENT_DEDUP_TTL_S,
  DEFAULT_EVENT_MAX_BODY_BYTES,
  EVENT_TIMESTAMP_TOLERANCE_S,
} from './constants.js';

/** How the sender of an event signs it. */
export type EventSignature =
  /** Standard Webhooks: `webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64>`. */
  | { scheme: 'standard_webhooks'; secret: string }
  /** An HMAC-SHA256 of the body in a header, as GitHub sends `X-Hub-Signature-256: sha256=<hex>`. */
  | { scheme: 'hmac_sha256'; secret: string; header: string; prefix: string; idHeader?: string };

/**
 * A run (of `agent`) or a workflow (`workflow`, of the workflows file) an event starts, its input and
 * metadata as templates over `payload`.
 */
export interface EventRun {
  agent?: string;
  workflow?: string;
  input: string;
  metadata?: Record<string, string>;
  model?: string;
}

export interface InboundEvent {
  name: string;
  signature: EventSignature;
  /** The tenant its runs are created in. Default `default`. */
  tenant: string;
  runs: EventRun[];
}

/** The events file resolved: events by name, and the limits every event shares. */
export interface InboundEventsConfig {
  readonly events: ReadonlyMap<string, InboundEvent>;
  readonly maxBodyBytes: number;
  readonly dedupTtlS: number;
  readonly toleranceS: number;
}

/** A config without events: every `POST /v1/events/:name` is a 404. */
export const NO_EVENTS: InboundEventsConfig = Object.freeze({
  events: new Map(),
  maxBodyBytes: DEFAULT_EVENT_MAX_BODY_BYTES,
  dedupTtlS: DEFAULT_EVENT_DEDUP_TTL_S,
  toleranceS: EVENT_TIMESTAMP_TOLERANCE_S,
});

const SECRET_PATTERN = /^whsec_[A-Za-z0-9+/]{22,}={0,2}$/;

/**
 * Reads the events file (`EVENTS_FILE`): a missing file declares no events, as the other optional files;
 * one that exists is checked in full and every problem reported at once (CONFIG_INVALID), secrets read
 * from the environment variables it names (never written in the file, never in a message).
 *
 * ```yaml
 * events:
 *   order.created:
 *     signature: { scheme: standard_webhooks, secret_env: ORDERS_WEBHOOK_SECRET }
 *     runs:
 *       - agent: summariser
 *         input: "Summarise order {{payload.order.id}}"
 * ```
 */
export function loadInboundEvents(
  file: string | undefined,
  env: Readonly<Record<string, string | undefined>>,
  /** Told when the file named does not exist (a scheduler logs it, as for the other optional files). */
  missing: (file: string) => void = () => undefined,
): InboundEventsConfig {
  if (!file) return NO_EVENTS;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      missing(file);
      return NO_EVENTS;
    }
    throw new AgentReachError(
      'CONFIG_INVALID',
      `EVENTS_FILE ${file} cannot be read: ${(err as Error).message}`,
    );
  }
  const problems: string[] = [];
  const doc = parse(text) as { events?: Record<string, unknown>; max_body_bytes?: unknown } | null;
  const events = new Map<string, InboundEvent>();
  for (const [name, raw] of Object.entries(doc?.events ?? {})) {
    const event = eventOf(name, raw, env, (p) => problems.push(`events.${name}${p}`));
    if (event) events.set(name, event);
  }
  const maxBodyBytes = doc?.max_body_bytes ?? DEFAULT_EVENT_MAX_BODY_BYTES;
  if (!Number.isInteger(maxBodyBytes) || (maxBodyBytes as number) < 1)
    problems.push('max_body_bytes must be a positive integer');
  if (problems.length > 0)
    throw new AgentReachError('CONFIG_INVALID', `EVENTS_FILE ${file}: ${problems.join('; ')}`);
  return Object.freeze({
    events,
    maxBodyBytes: maxBodyBytes as number,
    dedupTtlS: DEFAULT_EVENT_DEDUP_TTL_S,
    toleranceS: EVENT_TIMESTAMP_TOLERANCE_S,
  });
}

type Raw = Record<string, unknown>;
const isObject = (v: unknown): v is Raw => typeof v === 'object' && v !== null && !Array.isArray(v);

function eventOf(
  name: string,
  raw: unknown,
  env: Readonly<Record<string, string | undefined>>,
  problem: (p: string) => void,
): InboundEvent | undefined {
  if (!/^[A-Za-z0-9_.-]{1,100}$/.test(name)) problem(' name must be letters, digits, ".", "_" or "-"');
  if (!isObject(raw)) return void problem(' must be a mapping');
  const signature = signatureOf(raw.signature, env, problem);
  const tenant = raw.tenant ?? DEFAULT_TENANT;
  if (typeof tenant !== 'string' || !TENANT_PATTERN.test(tenant))
    problem(`.tenant must match ${TENANT_PATTERN}`);
  const runs = Array.isArray(raw.runs) ? raw.runs : [];
  if (runs.length === 0) problem('.runs must list at least one run');
  runs.forEach((r: unknown, i) => {
    const named = (field: string) =>
      isObject(r) && typeof r[field] === 'string' && NAME_PATTERN.test(r[field]);
    if (!isObject(r) || named('agent') === named('workflow'))
      problem(`.runs[${i}] must name an agent or a workflow (one of them)`);
    else if (typeof r.input !== 'string' || r.input.length === 0)
      problem(`.runs[${i}].input must be a template`);
  });
  if (!signature) return undefined;
  return { name, signature, tenant: String(tenant), runs: runs as EventRun[] };
}

function signatureOf(
  raw: unknown,
  env: Readonly<Record<string, string | undefined>>,
  problem: (p: string) => void,
): EventSignature | undefined {
  if (!isObject(raw)) return void problem('.signature is required');
  const secretEnv = raw.secret_env;
  const secret = typeof secretEnv === 'string' ? env[secretEnv] : undefined;
  if (typeof secretEnv !== 'string') return void problem('.signature.secret_env must name a variable');
  if (!secret) return void problem(`.signature.secret_env: ${secretEnv} is not set`);
  if (raw.scheme === 'standard_webhooks') {
    if (!SECRET_PATTERN.test(secret)) return void problem(`.signature: ${secretEnv} must be whsec_<base64>`);
    return { scheme: 'standard_webhooks', secret };
  }
  if (raw.scheme === 'hmac_sha256') {
    if (typeof raw.header !== 'string') return void problem('.signature.header must name the header');
    return {
      scheme: 'hmac_sha256',
      secret,
      header: raw.header.toLowerCase(),
      prefix: typeof raw.prefix === 'string' ? raw.prefix : 'sha256=',
      ...(typeof raw.id_header === 'string' ? { idHeader: raw.id_header.toLowerCase() } : {}),
    };
  }
  return void problem('.signature.scheme must be standard_webhooks or hmac_sha256');
}

/** Why an event was refused; `code` is the API's. */
export class EventRefused extends Error {
  constructor(
    readonly code: 'SIGNATURE_INVALID' | 'EVENT_STALE',
    message: string,
  ) {
    super(message);
    this.name = 'EventRefused';
  }
}

const equal = (a: string, b: string) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

/**
 * Verifies an event's signature over its raw body; its id (to deduplicate) when it holds. Standard
 * Webhooks: every header present, the timestamp within `toleranceS` of now (EVENT_STALE otherwise), one
 * `v1,` signature matching. HMAC: the header's `<prefix><hex>` matching; the id from `idHeader`, else the
 * body's digest.
 */
export function verifyEvent(
  event: InboundEvent,
  headers: Readonly<Record<string, string | string[] | undefined>>,
  body: Buffer,
  nowMs: number,
  toleranceS: number,
): string {
  const header = (name: string) => {
    const v = headers[name];
    return Array.isArray(v) ? v[0] : v;
  };
  const sig = event.signature;
  if (sig.scheme === 'hmac_sha256') {
    const given = header(sig.header);
    const expected = sig.prefix + createHmac('sha256', sig.secret).update(body).digest('hex');
    if (!given || !equal(given, expected))
      throw new EventRefused(
        'SIGNATURE_INVALID',
        `${sig.header} does not match the body signed with the event's secret`,
      );
    return (sig.idHeader && header(sig.idHeader)) || createHmac('sha256', 'id').update(body).digest('hex');
  }
  const id = header('webhook-id');
  const timestamp = header('webhook-timestamp');
  const signatures = header('webhook-signature');
  if (!id || !timestamp || !signatures)
    throw new EventRefused(
      'SIGNATURE_INVALID',
      'webhook-id, webhook-timestamp and webhook-signature are all required',
    );
  const ts = Number(timestamp);
  if (!/^\d{1,12}$/.test(timestamp) || Math.abs(nowMs / 1000 - ts) > toleranceS)
    throw new EventRefused(
      'EVENT_STALE',
      `webhook-timestamp is more than ${toleranceS} s from the server's time`,
    );
  const expected =
    signedHeaders({ id, body: body.toString('utf8') }, sig.secret, ts)['webhook-signature'] ?? '';
  if (!signatures.split(' ').some((s) => equal(s, expected)))
    throw new EventRefused(
      'SIGNATURE_INVALID',
      "no v1 signature of webhook-signature matches the body signed with the event's secret",
    );
  return id;
}
