import type { ClientOptions, WaitOptions } from './client-api.js';

/** How long `waitForRun` / `waitForWorkflow` follow their subject before a TIMEOUT error, in ms. */
export const DEFAULT_WAIT_TIMEOUT_MS = 10 * 60_000;
/** The pause before reconnecting an event stream that ended early, in ms. */
export const DEFAULT_RECONNECT_DELAY_MS = 500;

/** {@link ClientOptions} with every default filled in. */
export interface ResolvedClientOptions {
  /** Without trailing slashes, so that paths append to it. */
  baseUrl: string;
  apiKey: string;
  fetch: typeof fetch;
}

export function resolveClientOptions(o: ClientOptions): ResolvedClientOptions {
  return {
    baseUrl: o.baseUrl.replace(/\/+$/, ''),
    apiKey: o.apiKey,
    fetch: o.fetch ?? fetch,
  };
}

/** {@link WaitOptions} with every default filled in. */
export interface ResolvedWaitOptions {
  timeoutMs: number;
  reconnectDelayMs: number;
  signal: AbortSignal | undefined;
}

export function resolveWaitOptions(o: WaitOptions = {}): ResolvedWaitOptions {
  return {
    timeoutMs: o.timeoutMs ?? DEFAULT_WAIT_TIMEOUT_MS,
    reconnectDelayMs: o.reconnectDelayMs ?? DEFAULT_RECONNECT_DELAY_MS,
    signal: o.signal,
  };
}
