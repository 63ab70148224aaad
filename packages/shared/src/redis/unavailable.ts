/**
 * Whether an error means Redis cannot serve the request right now (down, restarting, paused, out of
 * memory, read-only, a cluster failing over), as ioredis and BullMQ report it. Such a request is answered 503 UNAVAILABLE with
 * `Retry-After`: the caller did nothing wrong and may try again.
 */

/** Network errors of the connection (node's `code`). */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);

/** Messages ioredis gives a command it could not send or whose answer never came. */
const CONNECTION_MESSAGES =
  /^(Connection is closed|Stream isn't writeable|Command timed out|Reached the max retries per request limit|Redis did not answer)/;

/**
 * Messages of ioredis's cluster client when no node serves a command's slot right now: a master died and
 * its replica is not promoted yet (the command bounced between nodes until its redirections ran out), or
 * the client cannot learn the slots from any node.
 */
const CLUSTER_MESSAGES =
  /^(Too many Cluster redirections|Cluster isn't ready|None of startup nodes is available|Failed to refresh slots cache)/;

/**
 * A cluster node's answer that another node now serves the key's slot (after a failover, before the
 * client has learnt the new layout). ioredis follows it for single commands, but hands it back from a
 * pipeline it cannot resend as a whole: tried again, the command reaches the slot's new master.
 */
const CLUSTER_REDIRECT = /(?:^|[\s:-])(?:MOVED|ASK) \d+ \S+:\d+/;

/**
 * Redis's own refusals of a command while it cannot serve it. A reply starts with the error's name; from
 * inside a script (BullMQ's) the name follows the script's location, e.g. `…: @user_script:12: -OOM …`.
 */
const SERVER_REFUSALS =
  /(?:^|[\s:-])(OOM|LOADING|READONLY|MASTERDOWN|BUSY|TRYAGAIN|CLUSTERDOWN|NOREPLICAS) [a-zA-Z]/;

/** Why Redis could not serve the request, in a few words, or undefined for any other error. */
export function redisUnavailable(error: unknown): string | undefined {
  for (let e = error, depth = 0; e && typeof e === 'object' && depth < 5; depth += 1) {
    const err = e as { name?: unknown; code?: unknown; message?: unknown; cause?: unknown };
    const message = typeof err.message === 'string' ? err.message : '';
    if (err.name === 'MaxRetriesPerRequestError') return 'Redis does not answer';
    if (typeof err.code === 'string' && NETWORK_CODES.has(err.code)) return 'Redis cannot be reached';
    if (CONNECTION_MESSAGES.test(message)) return 'Redis does not answer';
    if (CLUSTER_MESSAGES.test(message)) return 'Redis Cluster does not serve the key right now';
    if (CLUSTER_REDIRECT.test(message)) return "Redis Cluster moved the key's slot to another node";
    const refusal = SERVER_REFUSALS.exec(message)?.[1];
    if (refusal === 'OOM') return 'Redis is out of memory (maxmemory reached)';
    if (refusal === 'LOADING') return 'Redis is loading its data';
    if (refusal === 'READONLY' || refusal === 'MASTERDOWN') return 'Redis accepts no writes right now';
    if (refusal) return `Redis is busy (${refusal})`;
    e = err.cause;
  }
  return undefined;
}
