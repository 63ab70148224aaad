import { createHmac } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import { checkCallbackUrl, guardedLookup } from './callback-address.js';
import { CALLBACK_MAX_RESPONSE_BYTES } from './constants.js';

/** One delivery as its job holds it: the same id and body on every attempt. */
export interface Delivery {
  /** `webhook-id`: stable per event, so a receiver can deduplicate. */
  id: string;
  url: string;
  /** The JSON body, as signed. */
  body: string;
}

/** What one attempt came to. */
export interface AttemptResult {
  /** The receiver's HTTP status; undefined when it never answered. */
  status: number | undefined;
  ok: boolean;
  /** Why it failed, without the secret or the body. */
  error?: string;
}

/** The three Standard Webhooks headers of a delivery signed with `secret` (`whsec_<base64 key>`) at `timestampS`. */
export function signedHeaders(
  delivery: Pick<Delivery, 'id' | 'body'>,
  secret: string,
  timestampS: number,
): Record<string, string> {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const mac = createHmac('sha256', key)
    .update(`${delivery.id}.${timestampS}.${delivery.body}`)
    .digest('base64');
  return {
    'webhook-id': delivery.id,
    'webhook-timestamp': String(timestampS),
    'webhook-signature': `v1,${mac}`,
  };
}

/**
 * One attempt: the URL checked again (its host may resolve elsewhere now), then a POST over a connection
 * whose address the guarded lookup checked, no redirect followed (a 3xx is a failure), the answer read up
 * to a bound and the whole attempt within `timeoutMs`. Success is a 2xx.
 */
export async function sendDelivery(
  delivery: Delivery,
  secret: string,
  options: { allowedHosts: ReadonlySet<string>; timeoutMs: number; nowS?: number },
): Promise<AttemptResult> {
  const url = await checkCallbackUrl(delivery.url, options.allowedHosts);
  const timestampS = options.nowS ?? Math.floor(Date.now() / 1000);
  const headers = {
    ...signedHeaders(delivery, secret, timestampS),
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(delivery.body)),
    'user-agent': 'agent-reach-callbacks',
  };
  const lib = url.protocol === 'https:' ? https : http;
  return new Promise<AttemptResult>((resolve) => {
    let settled = false;
    const settle = (result: AttemptResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      resolve(result);
    };
    const req = lib.request(url, {
      method: 'POST',
      headers,
      lookup: guardedLookup(options.allowedHosts) as never,
      agent: false,
    });
    const timer = setTimeout(
      () => settle({ status: undefined, ok: false, error: `no answer within ${options.timeoutMs} ms` }),
      options.timeoutMs,
    );
    req.on('error', (err: Error) => settle({ status: undefined, ok: false, error: err.message }));
    req.on('response', (res) => {
      const status = res.statusCode ?? 0;
      let read = 0;
      res.on('data', (chunk: Buffer) => {
        read += chunk.length;
        // The status is all that counts: a large answer is cut off rather than read.
        if (read > CALLBACK_MAX_RESPONSE_BYTES) settle(outcome(status));
      });
      res.on('end', () => settle(outcome(status)));
      res.on('error', () => settle(outcome(status)));
    });
    req.end(delivery.body);
  });
}

function outcome(status: number): AttemptResult {
  if (status >= 200 && status < 300) return { status, ok: true };
  const error =
    status >= 300 && status < 400
      ? `the receiver answered ${status} (redirects are not followed)`
      : `the receiver answered ${status}`;
  return { status, ok: false, error };
}
