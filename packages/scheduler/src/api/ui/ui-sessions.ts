import { createHash, randomBytes } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Keys } from '@agent-reach/protocol';
import type { RedisClient } from '@agent-reach/shared';
import { UI_SESSION_COOKIE, UI_SESSION_TTL_S } from '../constants.js';

/**
 * Inspector logins: an httpOnly, SameSite=Strict cookie holds a random token; Redis holds, under the
 * token's hash, the id of the API key that logged in (never the key itself). Every API process reads the
 * same sessions, and a session lapses after {@link UI_SESSION_TTL_S} without use.
 */
export class UiSessions {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: Keys,
    readonly ttlS = UI_SESSION_TTL_S,
  ) {}

  #key(token: string): string {
    return `${this.keys.prefix}:ui:session:${createHash('sha256').update(token).digest('hex')}`;
  }

  /** Starts a session for a key's principal id and sets its cookie. */
  async open(reply: FastifyReply, request: FastifyRequest, principalId: string): Promise<void> {
    const token = randomBytes(32).toString('base64url');
    await this.redis.set(this.#key(token), principalId, 'EX', this.ttlS);
    reply.header('set-cookie', cookie(token, this.ttlS, request.protocol === 'https'));
  }

  /** The principal id of the request's session (its lifetime renewed), or undefined. */
  async principalId(request: FastifyRequest): Promise<string | undefined> {
    const token = tokenOf(request);
    if (!token) return undefined;
    const key = this.#key(token);
    const [[, id]] = (await this.redis.multi().get(key).expire(key, this.ttlS).exec()) as [
      [null, string | null],
    ];
    return id ?? undefined;
  }

  /** Ends the request's session and clears its cookie. */
  async close(reply: FastifyReply, request: FastifyRequest): Promise<void> {
    const token = tokenOf(request);
    if (token) await this.redis.del(this.#key(token));
    reply.header('set-cookie', cookie('', 0, request.protocol === 'https'));
  }
}

/** Whether the request carries a session cookie at all. */
export function hasSessionCookie(request: FastifyRequest): boolean {
  return tokenOf(request) !== undefined;
}

function tokenOf(request: FastifyRequest): string | undefined {
  const header = request.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === UI_SESSION_COOKIE) {
      const value = part.slice(eq + 1).trim();
      return /^[A-Za-z0-9_-]{43}$/.test(value) ? value : undefined;
    }
  }
  return undefined;
}

function cookie(token: string, maxAgeS: number, secure: boolean): string {
  return `${UI_SESSION_COOKIE}=${token}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAgeS}${secure ? '; Secure' : ''}`;
}
