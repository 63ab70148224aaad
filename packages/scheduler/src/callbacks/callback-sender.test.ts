import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { verifyWebhook } from '@agent-reach/client';
import { CallbackRefused, HostUnresolved, isForbiddenAddress, resolveHost } from './callback-address.js';
import { resolveCallbackConfig } from './callback-config.js';
import { sendDelivery } from './callback-sender.js';
import { CALLBACK_MAX_RESPONSE_BYTES } from './constants.js';

const SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
const LOCAL = new Set(['127.0.0.1']);

describe('sendDelivery', () => {
  const servers: Server[] = [];
  afterEach(async () => {
    for (const s of servers.splice(0)) {
      s.closeAllConnections();
      await new Promise((r) => s.close(r));
    }
  });
  const serve = async (handler: RequestListener) => {
    const server = createServer(handler);
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  };
  const delivery = (url: string) => ({ id: 'msg_1', url, body: '{"type":"run.finished","data":{}}' });

  it('signs the body so that the client helper verifies it, and succeeds on a 2xx', async () => {
    let seen: unknown;
    const url = await serve((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen = verifyWebhook(SECRET, req.headers, body);
        res.writeHead(202).end();
      });
    });
    const result = await sendDelivery(delivery(`${url}/hook`), SECRET, {
      allowedHosts: LOCAL,
      timeoutMs: 5000,
    });
    expect(result).toEqual({ status: 202, ok: true });
    expect(seen).toEqual({ type: 'run.finished', data: {} });
  });

  it('connects to a host named in the allow-list by its name, through the guarded lookup', async () => {
    const url = await serve((req, res) => {
      req.resume();
      res.writeHead(204).end();
    });
    const byName = url.replace('127.0.0.1', 'localhost');
    const result = await sendDelivery(delivery(byName), SECRET, {
      allowedHosts: new Set(['localhost']),
      timeoutMs: 5000,
    });
    expect(result).toEqual({ status: 204, ok: true });
    await expect(
      sendDelivery(delivery(byName), SECRET, { allowedHosts: LOCAL, timeoutMs: 5000 }),
    ).rejects.toThrow(/host "localhost" resolves to .*a loopback, private or link-local address/);
  });

  it('does not follow a redirect: the attempt fails saying so, and the other address is never asked', async () => {
    let asked = 0;
    const other = await serve((_req, res) => {
      asked += 1;
      res.writeHead(204).end();
    });
    const url = await serve((req, res) => {
      req.resume();
      res.writeHead(307, { location: `${other}/hook` }).end();
    });
    const result = await sendDelivery(delivery(url), SECRET, { allowedHosts: LOCAL, timeoutMs: 5000 });
    expect(result).toEqual({
      status: 307,
      ok: false,
      error: 'the receiver answered 307 (redirects are not followed)',
    });
    expect(asked).toBe(0);
  });

  it('gives up on a receiver that never answers after its timeout, saying so', async () => {
    const url = await serve((req) => req.resume());
    const result = await sendDelivery(delivery(url), SECRET, { allowedHosts: LOCAL, timeoutMs: 300 });
    expect(result).toEqual({ status: undefined, ok: false, error: 'no answer within 300 ms' });
  });

  it('stops reading an endless answer past its bound and keeps its status', async () => {
    let written = 0;
    const url = await serve((req, res) => {
      req.resume();
      res.writeHead(200);
      const chunk = Buffer.alloc(16 * 1024, 'x');
      const pump = () => {
        while (written < 100 * CALLBACK_MAX_RESPONSE_BYTES && res.write(chunk)) written += chunk.length;
        if (written < 100 * CALLBACK_MAX_RESPONSE_BYTES) res.once('drain', pump);
        else res.end();
      };
      pump();
    });
    const result = await sendDelivery(delivery(url), SECRET, { allowedHosts: LOCAL, timeoutMs: 10_000 });
    expect(result).toEqual({ status: 200, ok: true });
    expect(written).toBeLessThan(100 * CALLBACK_MAX_RESPONSE_BYTES);
  });

  it('refuses a loopback address unless the host is allowed, before any request', async () => {
    let asked = 0;
    const url = await serve((req, res) => {
      asked += 1;
      req.resume();
      res.writeHead(204).end();
    });
    await expect(
      sendDelivery(delivery(url), SECRET, { allowedHosts: new Set(), timeoutMs: 5000 }),
    ).rejects.toThrow(CallbackRefused);
    expect(asked).toBe(0);
  });
});

describe('callback addresses and settings', () => {
  it('refuses a host that does not resolve as one to try again, not as a forbidden address', async () => {
    const err = await sendDelivery(
      { id: 'msg_1', url: 'http://no-such-host.invalid/hook', body: '{}' },
      SECRET,
      { allowedHosts: new Set(), timeoutMs: 5000 },
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HostUnresolved);
    expect((err as Error).message).toMatch(/^callback\.url host "no-such-host\.invalid" does not resolve/);
  });

  it('stops waiting for a resolver that does not answer and calls the host unresolved, naming the wait', async () => {
    // A DNS server that never answers cannot be made here: the lookup below is one that never calls back.
    const silent = () => undefined;
    const err = await resolveHost('slow.example', 50, silent).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HostUnresolved);
    expect((err as Error).message).toBe(
      'callback.url host "slow.example" does not resolve (no answer within 50 ms)',
    );
  });

  it('answers with every address the resolver gives when it answers in time', async () => {
    const addresses = await resolveHost('two.example', 5000, (_host, _options, callback) =>
      callback(null, [
        { address: '203.0.113.7', family: 4 },
        { address: '2001:db8::7', family: 6 },
      ]),
    );
    expect(addresses).toEqual(['203.0.113.7', '2001:db8::7']);
  });

  it('treats loopback, private, link-local, mapped and unspecified addresses as forbidden, public ones not', () => {
    for (const a of [
      '127.0.0.1',
      '10.0.0.5',
      '172.20.1.1',
      '192.168.1.1',
      '169.254.169.254',
      '::1',
      'fe80::1',
      'fd00::1',
      '::ffff:10.0.0.1',
      '0.0.0.0',
      '::',
    ])
      expect(isForbiddenAddress(a), a).toBe(true);
    for (const a of ['93.184.216.34', '2606:4700::1111', '::ffff:8.8.8.8'])
      expect(isForbiddenAddress(a), a).toBe(false);
  });

  it('lists every bad setting at once without printing a secret', () => {
    const leaked = 'whsec_tooShort';
    let message = '';
    try {
      resolveCallbackConfig({ CALLBACK_SECRETS: `a=${leaked},b`, CALLBACK_MAX_ATTEMPTS: '0' });
    } catch (err) {
      message = (err as Error).message;
      expect(err).toMatchObject({ code: 'CONFIG_INVALID' });
    }
    expect(message.split('\n')).toEqual([
      'CALLBACK_SECRETS: entry 1 must be <key name or *>=whsec_<base64 of 16 or more bytes>',
      'CALLBACK_SECRETS: entry 2 must be <key name or *>=whsec_<base64 of 16 or more bytes>',
      'CALLBACK_MAX_ATTEMPTS must be an integer from 1 to 100, got "0"',
    ]);
    expect(message).not.toContain(leaked);
  });
});
