import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AgentReachError, DEFAULT_TENANT, TENANT_PATTERN } from '@agent-reach/protocol';
import { ApiError, sendError } from './errors.js';

/** One API key the server accepts. */
export interface ApiKeyConfig {
  /** The secret a caller sends as `Authorization: Bearer <key>`. */
  key: string;
  /** When set, the key may only start, read, follow, cancel and decide runs of these agents. */
  agents?: readonly string[];
  /** Who the key belongs to: the default `by` of its approvals, and a log field. Default `key-<hash prefix>`. */
  name?: string;
  /**
   * The tenants whose runs, sessions and workflows the key sees; it creates in the first. Default
   * `['default']`. A key of several tenants is an operator's key across them.
   */
  tenants?: readonly string[];
  /**
   * The key may start runs with a `variant` (configuration overrides for that run). Default: true for a
   * key without an `agents` limit, false for a limited key.
   */
  variants?: boolean;
}

/** The caller a request was authenticated as. */
export interface Principal {
  /** A stable, non-secret id of the key (a hash prefix): namespaces idempotency keys and rate limits. */
  readonly id: string;
  readonly name: string;
  /** The agents a limited key may use; undefined for a key that may use every agent. */
  readonly agents: ReadonlySet<string> | undefined;
  /** The tenant the key's runs, sessions and workflows are created in (the first of `tenants`). */
  readonly tenant: string;
  /** The tenants the key sees; anything of another tenant is, to this key, missing. */
  readonly tenants: ReadonlySet<string>;
  /** The key may start runs with a variant (see ApiKeyConfig.variants). */
  readonly variants: boolean;
}

/**
 * Who may call a route: anyone, any valid key (Bearer), an operator's key (Bearer: for every agent and
 * every tenant), or the same for the admin board (Bearer or Basic).
 */
export type RoutePolicy = 'public' | 'key' | 'operator' | 'admin';

/** What a route of an operator's policy shows, for its refusals. */
const OPERATOR_DOORS = {
  admin: { door: 'the admin board', shows: "every tenant's jobs" },
  operator: { door: '/metrics', shows: "every tenant's names, quota figures and per-key costs" },
} as const;

const digest = (secret: string) => createHash('sha256').update(secret, 'utf8').digest();

/**
 * The keys the server accepts. A presented key is hashed and compared with every known key's hash in
 * constant time, without stopping at a match, so neither its length nor its position leaks.
 */
export class ApiKeyTable {
  readonly #entries: Array<{ digest: Buffer; principal: Principal }>;
  readonly #byId = new Map<string, Principal>();
  /** Per request, once for Bearer only and once with Basic accepted too. */
  readonly #cache = [
    new WeakMap<FastifyRequest, Principal | null>(),
    new WeakMap<FastifyRequest, Principal | null>(),
  ];

  constructor(keys: readonly ApiKeyConfig[]) {
    const seen = new Set<string>();
    const names = new Map<string, number>();
    this.#entries = keys.map((k, i) => {
      if (typeof k.key !== 'string' || k.key.length < 8)
        throw new AgentReachError(
          'CONFIG_INVALID',
          `apiKeys[${i}].key must be a string of 8 or more characters`,
        );
      const d = digest(k.key);
      const id = d.toString('hex').slice(0, 16);
      if (seen.has(id)) throw new AgentReachError('CONFIG_INVALID', `apiKeys[${i}] repeats another key`);
      seen.add(id);
      const tenants = k.tenants?.length ? k.tenants : [DEFAULT_TENANT];
      for (const t of tenants)
        if (typeof t !== 'string' || !TENANT_PATTERN.test(t))
          throw new AgentReachError('CONFIG_INVALID', `apiKeys[${i}].tenants must match ${TENANT_PATTERN}`);
      const name = k.name ?? `key-${id.slice(0, 8)}`;
      const first = names.get(name);
      // A key's callbacks (their signing secret, their dead letters) belong to it by name.
      if (first !== undefined)
        throw new AgentReachError(
          'CONFIG_INVALID',
          `apiKeys[${i}].name "${name}" is the name of apiKeys[${first}] too: each key needs a name of its own`,
        );
      names.set(name, i);
      return {
        digest: d,
        principal: Object.freeze({
          id,
          name,
          agents: k.agents ? new Set(k.agents) : undefined,
          tenant: tenants[0] as string,
          tenants: new Set(tenants),
          variants: k.variants ?? k.agents === undefined,
        }),
      };
    });
    for (const e of this.#entries) this.#byId.set(e.principal.id, e.principal);
    this.tenants = new Set(this.#entries.flatMap((e) => [...e.principal.tenants]));
  }

  /** Every tenant some key belongs to. */
  readonly tenants: ReadonlySet<string>;

  /** Whether the key sees every tenant (the admin board shows every tenant's jobs). */
  seesEveryTenant(principal: Principal): boolean {
    return [...this.tenants].every((t) => principal.tenants.has(t));
  }

  /** The principal of a key by its non-secret id (an inspector session holds the id, not the key). */
  byId(id: string): Principal | undefined {
    return this.#byId.get(id);
  }

  /** Takes `principal` as the request's caller (authenticated another way: a session cookie). */
  remember(request: FastifyRequest, principal: Principal): void {
    this.#cache[0]?.set(request, principal);
  }

  /** The key's principal, or undefined for an unknown key. */
  identify(secret: string): Principal | undefined {
    const d = digest(secret);
    let found: Principal | undefined;
    for (const entry of this.#entries) {
      if (timingSafeEqual(d, entry.digest)) found ??= entry.principal;
    }
    return found;
  }

  /** The principal of a request's credentials (Bearer; Basic too when `basic`), computed once per request. */
  principalOf(request: FastifyRequest, basic = false): Principal | undefined {
    const cache = this.#cache[basic ? 1 : 0] as WeakMap<FastifyRequest, Principal | null>;
    const cached = cache.get(request);
    if (cached !== undefined) return cached ?? undefined;
    const secret = credentials(request.headers.authorization, basic);
    const principal = secret === undefined ? undefined : this.identify(secret);
    cache.set(request, principal ?? null);
    return principal;
  }
}

function credentials(header: string | undefined, basic: boolean): string | undefined {
  if (!header) return undefined;
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (bearer) return bearer[1];
  const b = basic ? /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header) : null;
  if (!b?.[1]) return undefined;
  // Basic auth for browsers (Bull Board): any user name, the API key as the password.
  const decoded = Buffer.from(b[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon < 0 ? undefined : decoded.slice(colon + 1);
}

const unauthorized = () => new ApiError('UNAUTHORIZED');

/** Sessions of the inspector: the principal id of a request's session cookie. */
export interface SessionLookup {
  principalId(request: FastifyRequest): Promise<string | undefined>;
}

/**
 * The onRequest hook that enforces a route's policy; it answers directly instead of throwing. Keyed
 * routes also accept an inspector session cookie (never the admin board); a request on a session that
 * changes something must carry the inspector's header, which a cross-site form or image cannot send.
 */
export function authHook(
  table: ApiKeyTable,
  policy: RoutePolicy,
  sessions?: SessionLookup,
  csrfHeader?: string,
) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    if (policy === 'public') return;
    let principal = table.principalOf(request, policy === 'admin');
    if (!principal && policy === 'key' && sessions && request.headers.authorization === undefined) {
      const id = await sessions.principalId(request);
      const viaSession = id === undefined ? undefined : table.byId(id);
      if (viaSession) {
        const safe = request.method === 'GET' || request.method === 'HEAD';
        if (!safe && csrfHeader && request.headers[csrfHeader] !== '1')
          return sendError(
            reply,
            new ApiError('FORBIDDEN', `a request on an inspector session must send ${csrfHeader}: 1`),
          );
        table.remember(request, viaSession);
        principal = viaSession;
      }
    }
    if (!principal) {
      if (policy === 'admin')
        reply.header('www-authenticate', 'Basic realm="agent-reach admin", charset="UTF-8"');
      return sendError(reply, unauthorized());
    }
    if (policy === 'key') return;
    const { door, shows } = OPERATOR_DOORS[policy];
    if (principal.agents)
      return sendError(
        reply,
        new ApiError('FORBIDDEN', `this key is limited to some agents; ${door} needs a full key`),
      );
    if (!table.seesEveryTenant(principal))
      return sendError(
        reply,
        new ApiError('FORBIDDEN', `this key sees some tenants only; ${door} shows ${shows}`),
      );
  };
}

/** The authenticated caller of a route that requires a key. */
export function requirePrincipal(table: ApiKeyTable, request: FastifyRequest): Principal {
  const principal = table.principalOf(request);
  if (!principal) throw unauthorized();
  return principal;
}

/** Whether the caller sees things of `tenant` (absent: a record made before tenants, `default`'s). */
export function seesTenant(principal: Principal, tenant: string | undefined): boolean {
  return principal.tenants.has(tenant ?? DEFAULT_TENANT);
}

/**
 * Whose idempotency keys a caller's are: the key's own, within its tenant, so the same `Idempotency-Key`
 * in two tenants names two runs. The default tenant's scope is the key's id, as before tenants.
 */
export function idempotencyScope(principal: Principal): string {
  return principal.tenant === DEFAULT_TENANT ? principal.id : `${principal.tenant}.${principal.id}`;
}

/** The tenants a server's keys name: bounded by configuration, so they may label metrics. */
export function configuredTenants(keys: readonly ApiKeyConfig[]): string[] {
  return [...new Set(keys.flatMap((k) => (k.tenants?.length ? k.tenants : [DEFAULT_TENANT])))].sort();
}

/** Refuses a limited key the runs of an agent outside its list. */
export function assertAgentAllowed(principal: Principal, agent: string): void {
  if (principal.agents && !principal.agents.has(agent))
    throw new ApiError('FORBIDDEN', `this key may not use agent "${agent}"`);
}
