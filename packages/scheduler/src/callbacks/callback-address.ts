import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import { CALLBACK_DNS_TIMEOUT_MS } from './constants.js';

/** Addresses a callback may not reach unless its host is allowed: loopback, private, link-local and the like. */
const FORBIDDEN = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 3],
] as const)
  FORBIDDEN.addSubnet(net, bits, 'ipv4');
for (const [net, bits] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const)
  FORBIDDEN.addSubnet(net, bits, 'ipv6');

/** Why a callback URL is refused, as the API's details and the delivery's last error say it. */
export class CallbackRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CallbackRefused';
  }
}

/** A host that did not resolve: refused at the door, tried again at send time (DNS may be away a while). */
export class HostUnresolved extends CallbackRefused {
  constructor(message: string) {
    super(message);
    this.name = 'HostUnresolved';
  }
}

/** Whether `address` (IPv4 or IPv6, an IPv4-mapped IPv6 read as its IPv4) is one a callback may not reach. */
export function isForbiddenAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (mapped) return FORBIDDEN.check(mapped, 'ipv4');
  const family = isIP(address);
  if (family === 0) return true;
  return FORBIDDEN.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/** A URL's host as the allow-list names it: lower case, without IPv6 brackets. */
export function hostOf(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
}

/** The URL parsed, refused unless it is http(s) without credentials in it. */
export function parseCallbackUrl(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new CallbackRefused('callback.url is not a URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new CallbackRefused('callback.url must be http or https');
  if (url.username || url.password)
    throw new CallbackRefused('callback.url may not carry a user name or password');
  return url;
}

/** How a host name is resolved: node:dns's `lookup` (the system resolver, /etc/hosts included). */
export type HostLookup = (
  host: string,
  options: { all: true; verbatim: true },
  callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

/**
 * Every address `host` resolves to (itself, for an address), waiting at most `timeoutMs` for the resolver
 * (the lookup itself cannot be cancelled; its late answer is dropped).
 */
export async function resolveHost(
  host: string,
  timeoutMs = CALLBACK_DNS_TIMEOUT_MS,
  lookup: HostLookup = dnsLookup as HostLookup,
): Promise<string[]> {
  if (isIP(host)) return [host];
  let timer: NodeJS.Timeout | undefined;
  const found = await new Promise<LookupAddress[]>((resolve, reject) => {
    timer = setTimeout(
      () => reject(Object.assign(new Error(`no answer within ${timeoutMs} ms`), { code: 'ETIMEOUT' })),
      timeoutMs,
    );
    lookup(host, { all: true, verbatim: true }, (err, addresses) => (err ? reject(err) : resolve(addresses)));
  })
    .catch((err: NodeJS.ErrnoException) => {
      const why = err.code === 'ETIMEOUT' ? err.message : (err.code ?? err.message);
      throw new HostUnresolved(`callback.url host "${host}" does not resolve (${why})`);
    })
    .finally(() => clearTimeout(timer));
  return found.map((a) => a.address);
}

/**
 * Refuses a URL whose host resolves to a forbidden address, unless `allowedHosts` names the host: checked
 * at the door and again before each attempt (the name may resolve elsewhere by then).
 */
export async function checkCallbackUrl(text: string, allowedHosts: ReadonlySet<string>): Promise<URL> {
  const url = parseCallbackUrl(text);
  const host = hostOf(url);
  if (allowedHosts.has(host)) return url;
  const forbidden = (await resolveHost(host)).find(isForbiddenAddress);
  if (forbidden !== undefined)
    throw new CallbackRefused(
      `callback.url host "${host}" resolves to ${forbidden}, a loopback, private or link-local address; an operator may allow the host in CALLBACK_ALLOWED_HOSTS`,
    );
  return url;
}

/**
 * A `lookup` for node:http that connects only to addresses the policy allows: the address checked is the
 * address connected to, so a name cannot resolve to a public address for the check and a private one for
 * the connection.
 */
export function guardedLookup(allowedHosts: ReadonlySet<string>) {
  return (
    hostname: string,
    options: { family?: number | string; all?: boolean },
    callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
  ): void => {
    dnsLookup(hostname, { all: true, verbatim: true }, (err, addresses) => {
      if (err) return callback(err, '', 0);
      const allowed = allowedHosts.has(hostname.toLowerCase());
      const usable = addresses.filter((a) => allowed || !isForbiddenAddress(a.address));
      if (usable.length === 0) {
        const refused = new CallbackRefused(
          `callback.url host "${hostname}" resolves to ${addresses[0]?.address ?? 'nothing'}, a loopback, private or link-local address`,
        ) as NodeJS.ErrnoException;
        return callback(refused, '', 0);
      }
      if (options.all) return callback(null, usable);
      const first = usable[0] as LookupAddress;
      return callback(null, first.address, first.family);
    });
  };
}
