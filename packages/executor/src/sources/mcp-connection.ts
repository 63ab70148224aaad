import { setTimeout as delay } from 'node:timers/promises';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { Logger, McpServerSpec, McpServerState } from '@agent-reach/shared';
import { AttemptFailure } from '../breakers.js';
import type { ListedMcpTool } from './mcp-tools.js';

/** Timing and size limits of MCP connections; every field is required here, resolved by the source. */
export interface McpConnectionLimits {
  initializeTimeoutMs: number;
  pingIntervalMs: number;
  pingTimeoutMs: number;
  restartBackoffMs: number;
  restartBackoffMaxMs: number;
  maxMessageBytes: number;
}

export interface McpConnectionOptions {
  spec: McpServerSpec;
  /** The executor's environment: `${VAR}` in `env` and `headers_from_env` are read from it. */
  env: Readonly<Record<string, string | undefined>>;
  limits: McpConnectionLimits;
  logger: Logger;
  /** The server's tools, after each (re)connection and each `notifications/tools/list_changed`. */
  onTools(tools: ListedMcpTool[]): void;
  /** The connection is lost (its tools must be hidden); `why` names the server and the cause. */
  onDown(why: string): void;
  /** A message from the server that is not JSON-RPC. */
  onProtocolError(): void;
  /** Its state changed (see {@link McpConnection}). */
  onState?(state: McpServerState): void;
}

const NOT_YET = 'not connected yet';

/** The SDK, loaded when the first server connects: processes without MCP servers never load it. */
type Sdk = Awaited<ReturnType<typeof loadSdk>>;
let sdk: Promise<Sdk> | undefined;
async function loadSdk() {
  const [client, stdio, http, types] = await Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/stdio.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/types.js'),
  ]);
  return {
    Client: client.Client,
    StdioClientTransport: stdio.StdioClientTransport,
    StreamableHTTPClientTransport: http.StreamableHTTPClientTransport,
    ToolListChangedNotificationSchema: types.ToolListChangedNotificationSchema,
  };
}

type Session = {
  client: Client;
  transport: Transport;
  lost: Promise<string>;
  lose(why: string): void;
  /** Set when the server sent a message over the cap: the calls the closed connection broke report it. */
  overflow: { why?: string };
};

/**
 * One MCP server, kept connected: started (stdio) or reached (streamable HTTP), initialized within a
 * deadline, pinged, and when it crashes, hangs or misbehaves, closed and started again with capped
 * exponential backoff.
 *
 * Its state: `starting` until its first connection, and again while it restarts after losing one that
 * was up; `up` while connected; `down` once an attempt to connect failed, until one succeeds. A call made
 * while it is starting waits for it (within the call's own time); one made while it is down fails at once.
 * Neither counts against the tool's breaker: the server failing is not the tool failing.
 */
export class McpConnection {
  readonly #o: McpConnectionOptions;
  #session: Session | undefined;
  #stop = new AbortController();
  #loop: Promise<void> | undefined;
  #down = NOT_YET;
  #state: McpServerState = 'starting';
  #since = Date.now();
  #restarts = 0;
  /** Called at each change of state (calls waiting for a starting server). */
  readonly #waiters = new Set<() => void>();

  constructor(options: McpConnectionOptions) {
    this.#o = options;
  }

  get name(): string {
    return this.#o.spec.name;
  }

  get up(): boolean {
    return this.#session !== undefined;
  }

  /** `starting`, `up` or `down` (see the class). */
  get state(): McpServerState {
    return this.#state;
  }

  /** Epoch ms at which it entered its state. */
  get since(): number {
    return this.#since;
  }

  /** How often it was started again after losing its connection or failing to connect. */
  get restarts(): number {
    return this.#restarts;
  }

  /** Why it was last down, naming the server and the cause; undefined before the first failure. */
  get error(): string | undefined {
    return this.#down === NOT_YET ? undefined : this.#down;
  }

  start(): void {
    this.#loop ??= this.#run();
  }

  async close(): Promise<void> {
    this.#stop.abort();
    this.#session?.lose('closed');
    this.#enter('down');
    await this.#loop;
  }

  /**
   * Calls a tool. While the server is starting (or restarting) the call waits for it, as long as the
   * attempt's signal allows; while it is down the call fails at once as `transient`, not counted against the
   * tool's breaker.
   */
  async call(
    tool: string,
    args: Record<string, unknown>,
    options: { signal: AbortSignal; timeoutMs: number; meta?: Record<string, unknown> },
  ): Promise<{ result?: unknown; error?: unknown; overflow?: string }> {
    if (this.#state === 'starting') await this.#settled(options.signal);
    const session = this.#session;
    if (!session) {
      const why = this.#state === 'down' ? `is down (${this.#down})` : 'is still starting';
      throw new AttemptFailure(
        'transient',
        `server "${this.name}" ${why}; it is being restarted`,
        undefined,
        undefined,
        false,
      );
    }
    // A connection lost mid-call fails the call at once, whether or not the SDK rejects its request.
    const lost = session.lost.then((why) => {
      throw Object.assign(new Error(why), { code: -32000 });
    });
    lost.catch(() => undefined);
    try {
      const result = await Promise.race([
        session.client.callTool(
          { name: tool, arguments: args, ...(options.meta ? { _meta: options.meta } : {}) },
          undefined,
          {
            signal: options.signal,
            timeout: options.timeoutMs,
          },
        ),
        lost,
      ]);
      return { result };
    } catch (error) {
      return { error, ...(session.overflow.why === undefined ? {} : { overflow: session.overflow.why }) };
    }
  }

  async #run(): Promise<void> {
    const log = this.#o.logger;
    let failures = 0;
    while (!this.#stop.signal.aborted) {
      let session: Session | undefined;
      const startedAt = Date.now();
      try {
        session = await this.#connect();
        this.#session = session;
        this.#enter('up');
        log.info({ server: this.name }, 'MCP server connected');
        this.#o.onTools(await this.#list(session.client));
        const why = await Promise.race([session.lost, this.#pings(session)]);
        if (this.#stop.signal.aborted) break;
        this.#markDown(why, 'starting');
      } catch (err) {
        if (this.#stop.signal.aborted) break;
        // Connected but lost before its tools were listed: restarting, as after any lost connection.
        this.#markDown(
          `server "${this.name}": ${(err as Error).message}`,
          this.#session ? 'starting' : 'down',
        );
      } finally {
        this.#session = undefined;
        await session?.client.close().catch(() => undefined);
      }
      // A server that stayed up for a while starts again from the shortest wait.
      if (Date.now() - startedAt > this.#o.limits.restartBackoffMaxMs) failures = 0;
      const wait = Math.min(
        this.#o.limits.restartBackoffMaxMs,
        this.#o.limits.restartBackoffMs * 2 ** failures,
      );
      failures += 1;
      await delay(wait, undefined, { signal: this.#stop.signal }).catch(() => undefined);
    }
  }

  /** The connection is lost (`starting`: it restarts) or could not be made (`down`). */
  #markDown(why: string, next: 'starting' | 'down'): void {
    this.#down = why;
    this.#session = undefined;
    this.#restarts += 1;
    // A server that keeps failing to connect stays down (and since when) until a connection succeeds.
    if (this.#state !== 'down') this.#enter(next);
    this.#o.logger.warn({ server: this.name, why, state: this.#state }, 'MCP server down; restarting it');
    this.#o.onDown(why);
  }

  #enter(state: McpServerState): void {
    if (state === this.#state) return;
    this.#state = state;
    this.#since = Date.now();
    for (const wake of [...this.#waiters]) wake();
    this.#o.onState?.(state);
  }

  /** Resolves when the server leaves `starting`, or when `signal` aborts. */
  async #settled(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return;
    await new Promise<void>((resolve) => {
      const done = () => {
        this.#waiters.delete(done);
        signal.removeEventListener('abort', done);
        resolve();
      };
      this.#waiters.add(done);
      signal.addEventListener('abort', done, { once: true });
    });
  }

  async #connect(): Promise<Session> {
    const { spec } = this.#o;
    const initializeTimeoutMs = spec.initialize_timeout_ms ?? this.#o.limits.initializeTimeoutMs;
    let lose!: (why: string) => void;
    const lost = new Promise<string>((resolve) => (lose = resolve));
    const overflow: { why?: string } = {};
    const { Client, ToolListChangedNotificationSchema, ...transports } = await (sdk ??= loadSdk());
    const transport = this.#transport(transports, lose, overflow);
    const client = new Client({ name: 'agent-reach-executor', version: '1' }, { capabilities: {} });
    let garbage = 0;
    client.onerror = (err: Error) => {
      // The SDK reports lines that are not JSON-RPC here and goes on reading.
      if (/JSON|Unexpected token|invalid_|ZodError|Invalid/i.test(`${err.name} ${err.message}`)) {
        garbage += 1;
        this.#o.onProtocolError();
        if (garbage === 1)
          this.#o.logger.warn(
            { server: this.name, err: err.message.slice(0, 200) },
            'MCP server sent a message that is not JSON-RPC; ignored',
          );
      }
    };
    client.onclose = () => lose(`server "${spec.name}": connection closed${this.#exitTail()}`);
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      this.#list(client).then(
        (tools) => this.#o.onTools(tools),
        (err: unknown) => lose(`server "${spec.name}": tools/list failed: ${(err as Error).message}`),
      );
    });
    try {
      await client.connect(transport, { timeout: initializeTimeoutMs, signal: this.#stop.signal });
    } catch (err) {
      await client.close().catch(() => undefined);
      const e = err as { code?: number; message?: string };
      const detail =
        e?.code === -32001
          ? `did not answer initialize within ${initializeTimeoutMs} ms${garbage ? ` (it wrote ${garbage} lines that are not JSON-RPC)` : ''}`
          : `could not be initialized: ${e?.message ?? String(err)}`;
      throw new Error(`${detail}${this.#exitTail()}`);
    }
    return { client, transport, lost, lose, overflow };
  }

  #stderr = '';

  /** The last of what a stdio server wrote on stderr, for the error that says it died. */
  #exitTail(): string {
    const tail = this.#stderr.trim().split('\n').slice(-3).join(' | ').slice(-300);
    return tail ? ` (stderr: ${tail})` : '';
  }

  #transport(
    {
      StdioClientTransport,
      StreamableHTTPClientTransport,
    }: Omit<Sdk, 'Client' | 'ToolListChangedNotificationSchema'>,
    lose: (why: string) => void,
    seen: { why?: string },
  ): Transport {
    const { spec, env, limits } = this.#o;
    const overflow = () => {
      seen.why = `the server sent a message over ${limits.maxMessageBytes} bytes; the connection was closed`;
      lose(`server "${spec.name}": ${seen.why}`);
    };
    if (spec.command !== undefined) {
      this.#stderr = '';
      const transport = new StdioClientTransport({
        command: spec.command,
        args: [...(spec.args ?? [])],
        env: Object.fromEntries(Object.entries(spec.env ?? {}).map(([k, v]) => [k, substitute(v, env)])),
        ...(spec.cwd === undefined ? {} : { cwd: spec.cwd }),
        stderr: 'pipe',
        maxBufferSize: limits.maxMessageBytes,
      });
      // Drained (a full pipe would block the server), and its end kept for error messages.
      transport.stderr?.on('data', (chunk: Buffer) => {
        this.#stderr = (this.#stderr + chunk.toString()).slice(-2000);
      });
      return wrapOnError(transport, (err) => {
        if (/ReadBuffer exceeded maximum size/.test(err.message)) overflow();
      });
    }
    const headers = Object.fromEntries(
      Object.entries(spec.headers_from_env ?? {}).flatMap(([header, variable]) => {
        const value = env[variable];
        return value === undefined ? [] : [[header, value]];
      }),
    );
    return new StreamableHTTPClientTransport(new URL(spec.url as string), {
      requestInit: { headers },
      fetch: cappedFetch(limits.maxMessageBytes, overflow),
    });
  }

  /** Every tool the server lists (all pages), within the initialize deadline. */
  async #list(client: Client): Promise<ListedMcpTool[]> {
    const tools: ListedMcpTool[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor === undefined ? {} : { cursor }, {
        timeout: this.#o.spec.initialize_timeout_ms ?? this.#o.limits.initializeTimeoutMs,
      });
      tools.push(...(page.tools as ListedMcpTool[]));
      cursor = page.nextCursor;
    } while (cursor !== undefined && tools.length < 10_000);
    return tools;
  }

  /** Resolves with why the server stopped answering pings. */
  async #pings(session: Session): Promise<string> {
    const { pingIntervalMs, pingTimeoutMs } = this.#o.limits;
    const stop = this.#stop.signal;
    for (;;) {
      const lostFirst = await Promise.race([
        session.lost.then(() => true),
        delay(pingIntervalMs, false, { signal: stop }).catch(() => true),
      ]);
      if (lostFirst) return session.lost;
      try {
        await session.client.ping({ timeout: pingTimeoutMs });
      } catch (err) {
        return `server "${this.name}": ping not answered (${(err as Error).message})`;
      }
    }
  }
}

/**
 * The SDK sets the transport's `onerror` when it connects: wrapped so that an oversized stdio message
 * (the SDK clears its buffer and closes) is seen here first.
 */
function wrapOnError<T extends Transport>(transport: T, seen: (err: Error) => void): T {
  let inner: ((err: Error) => void) | undefined;
  Object.defineProperty(transport, 'onerror', {
    configurable: true,
    get: () => (inner ? (err: Error) => (seen(err), inner?.(err)) : undefined),
    set: (fn: ((err: Error) => void) | undefined) => {
      inner = fn;
    },
  });
  return transport;
}

/** `${VAR}` replaced with the executor's environment (unset: empty). */
export function substitute(value: string, env: Readonly<Record<string, string | undefined>>): string {
  return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, name: string) => env[name] ?? '');
}

/** A fetch whose response bodies stop with an error past `maxBytes` (and say so through `overflow`). */
function cappedFetch(maxBytes: number, overflow: () => void): typeof fetch {
  return async (input, init) => {
    const response = await fetch(input, init);
    if (!response.body) return response;
    let seen = 0;
    const counted = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          seen += chunk.byteLength;
          if (seen > maxBytes) {
            overflow();
            controller.error(new Error(`response over ${maxBytes} bytes`));
            return;
          }
          controller.enqueue(chunk);
        },
      }),
    );
    return new Response(counted, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}
