import { fork, type ChildProcess } from 'node:child_process';
import diagnostics from 'node:diagnostics_channel';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';
import { startLlmSim } from '@agent-reach/llm-sim';
import { benchScenario } from './task.js';

/**
 * The simulator's own handling time of each chat request, from Node's HTTP server diagnostics channels:
 * from the request's headers being parsed to the response being handed to the socket, keyed by the
 * `x-request-id` llm-sim puts on every response (the openai SDK exposes it as `_request_id`). The only
 * HTTP server that answers requests in the simulator's process during a measurement is the simulator.
 */
export class SimClock {
  readonly #started = new WeakMap<IncomingMessage, number>();
  readonly #handledMs = new Map<string, number>();
  readonly #onStart = (message: unknown) => {
    this.#started.set((message as { request: IncomingMessage }).request, performance.now());
  };
  readonly #onFinish = (message: unknown) => {
    const { request, response } = message as { request: IncomingMessage; response: ServerResponse };
    const started = this.#started.get(request);
    if (started === undefined) return;
    // Fastify passes its headers to writeHead, so they are only in the serialized head, not getHeader().
    const head = (response as unknown as { _header?: string })._header ?? '';
    const id = /^x-request-id: *(\S+)/im.exec(head)?.[1];
    if (id) this.#handledMs.set(id, performance.now() - started);
  };

  constructor() {
    diagnostics.subscribe('http.server.request.start', this.#onStart);
    diagnostics.subscribe('http.server.response.finish', this.#onFinish);
  }

  /** The handling times recorded since the last take, which it forgets. */
  take(): Array<[string, number]> {
    const entries = [...this.#handledMs];
    this.#handledMs.clear();
    return entries;
  }

  close(): void {
    diagnostics.unsubscribe('http.server.request.start', this.#onStart);
    diagnostics.unsubscribe('http.server.response.finish', this.#onFinish);
  }
}

/** What the simulator did since the last take. */
export interface SimTake {
  /** Handling time by request id, in ms. */
  handledMs: Map<string, number>;
  /** CPU of the simulator's process since the last take, in µs (NaN when it shares this process). */
  cpuUs: number;
  /** Share of wall time its event loop was busy since the last take, 0..1. */
  busy: number;
}

/** A running llm-sim serving the benchmark's scenario. */
export interface SimHost {
  readonly url: string;
  /** `process`: a child process of its own (like a remote model); `inline`: in this process. */
  readonly mode: SimMode;
  /** Timings since the last take; also empties the simulator's request record (it grows per request). */
  take(): Promise<SimTake>;
  close(): Promise<void>;
}

export type SimMode = 'process' | 'inline';

/** Messages between this module and `sim-process.ts`. */
export type SimRequest = { type: 'take' } | { type: 'close' };
export type SimReply =
  | { type: 'ready'; url: string }
  | { type: 'taken'; handled: Array<[string, number]>; cpuUs: number; busy: number };

/** Starts llm-sim serving the benchmark scenario with `latencyMs` of simulated latency per answer. */
export async function startSimHost(mode: SimMode, latencyMs = 0): Promise<SimHost> {
  return mode === 'inline' ? startInline(latencyMs) : startChild(latencyMs);
}

async function startInline(latencyMs: number): Promise<SimHost> {
  const clock = new SimClock();
  const sim = await startLlmSim({ scenarios: [] });
  sim.addScenario(benchScenario(latencyMs));
  let elu = performance.eventLoopUtilization();
  return {
    url: sim.url,
    mode: 'inline',
    async take() {
      sim.clearRequests();
      const busy = performance.eventLoopUtilization(elu).utilization;
      elu = performance.eventLoopUtilization();
      return { handledMs: new Map(clock.take()), cpuUs: Number.NaN, busy };
    },
    async close() {
      clock.close();
      await sim.close();
    },
  };
}

async function startChild(latencyMs: number): Promise<SimHost> {
  // fork() passes this process's execArgv on, so the child loads TypeScript through tsx as this one did.
  const child: ChildProcess = fork(
    fileURLToPath(new URL('./sim-process.ts', import.meta.url)),
    [String(latencyMs)],
    {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    },
  );
  const next = () =>
    new Promise<SimReply>((resolve, reject) => {
      const onExit = (code: number | null) => reject(new Error(`llm-sim process exited (${code})`));
      child.once('exit', onExit);
      child.once('message', (m) => {
        child.off('exit', onExit);
        resolve(m as SimReply);
      });
    });
  const send = (m: SimRequest) => child.send(m);
  const ready = await next();
  if (ready.type !== 'ready') throw new Error(`unexpected first message from llm-sim: ${ready.type}`);
  return {
    url: ready.url,
    mode: 'process',
    async take() {
      const reply = next();
      send({ type: 'take' });
      const taken = await reply;
      if (taken.type !== 'taken') throw new Error(`unexpected reply from llm-sim: ${taken.type}`);
      return { handledMs: new Map(taken.handled), cpuUs: taken.cpuUs, busy: taken.busy };
    },
    async close() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      send({ type: 'close' });
      await exited;
    },
  };
}
