/**
 * Tracing benchmark: what traces cost on the tool-call path. The tool-call benchmark's harness and
 * systems, three ways: raw BullMQ (the baseline), the platform with traces off (the default: no SDK, only
 * `@opentelemetry/api`'s no-op tracer), and the platform with traces on (the SDK exporting every span
 * over OTLP/HTTP to a collector stand-in in this process, which counts them). Both the publishing and
 * the executing side of a call live in the measuring process, so "on" pays for both spans of a call.
 *
 * A registered tracer provider is global to a process, so every round of every mode runs in a fresh
 * child process; modes alternate within a round and the median of rounds is reported (the machine is
 * shared and noisy).
 *
 *   pnpm bench:tracing               BENCH_CALLS (default 3000), BENCH_ROUNDS (default 5), REDIS_URL
 */
import { fork } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import {
  activeSpanEvent,
  carriedContext,
  constants,
  createLogger,
  SpanKind,
  traceCarrier,
  tracer,
} from '@agent-reach/shared';
import { startTracing } from '@agent-reach/shared/tracing-sdk';
import { fmt, printTable } from './agent-loop/figures.js';
import { envInt } from './env.js';
import { median } from './measure.js';
import { startPlatform, startRawBullmq } from './systems.js';
import {
  IN_FLIGHT,
  measureRound,
  medianFigures,
  type Medians,
  type RoundFigures,
} from './tool-call-round.js';

const MODES = ['baseline', 'off', 'on'] as const;
type Mode = (typeof MODES)[number];
const PAYLOAD_CHARS = 300;
/**
 * Export settings of "on": batches every 500 ms and a queue deep enough that no span is dropped under
 * load (the SDK's default queue of 2048 spans fills in about a second here, and dropped spans cost nothing).
 */
const ON_ENV = {
  OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
  OTEL_BSP_SCHEDULE_DELAY: '500',
  OTEL_BSP_MAX_QUEUE_SIZE: '65536',
  OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '2048',
};

interface ChildReport {
  mode: Mode;
  figures: RoundFigures;
  calls: number;
}

/** One round of one mode, in this (child) process; the figures go to the parent over IPC. */
async function child(mode: Mode, redisUrl: string, calls: number): Promise<void> {
  const plan = {
    calls,
    warmup: Math.max(1, Math.round(calls / 10)),
    seqCalls: Math.max(1, Math.round(calls / 5)),
    seqWarmup: Math.max(1, Math.round(calls / 50)),
  };
  const tracing =
    mode === 'on'
      ? await startTracing(process.env, {
          serviceName: 'agent-reach-bench',
          logger: createLogger('bench', { level: 'warn' }),
        })
      : undefined;
  if (mode === 'on' && !tracing) throw new Error('tracing did not start: OTEL_EXPORTER_OTLP_ENDPOINT unset');
  const payload = 'x'.repeat(PAYLOAD_CHARS);
  const concurrency = constants.DEFAULT_EXECUTOR_CONCURRENCY;
  const tmpDir = await mkdtemp(path.join(os.tmpdir(), 'agent-reach-bench-'));
  const admin = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  const system =
    mode === 'baseline'
      ? await startRawBullmq({ redisUrl, payload, concurrency })
      : await startPlatform({ redisUrl, payload, concurrency, tmpDir });
  try {
    const figures = await measureRound(system, admin, plan);
    const { redisCommands: _, ...kept } = figures;
    const report = { mode, figures: kept, calls: plan.warmup + plan.calls + plan.seqWarmup + plan.seqCalls };
    await new Promise<void>((resolve) => process.send?.(report, () => resolve()));
  } finally {
    await system.close();
    await admin.quit();
    await rm(tmpDir, { recursive: true, force: true });
    // Exports what is still queued: the parent counts the spans of every call.
    await tracing?.shutdown();
  }
}

/**
 * What the tracing calls of one tool call cost with traces off, in ns: the same API calls the dispatcher
 * and the executor make (a producer span with its attributes, the carrier, a consumer span continued from
 * the job's carrier, an event), against `@opentelemetry/api`'s no-op tracer. Run in the parent, which
 * never registers an SDK.
 */
function noopCallCostNs(iterations: number): number {
  const attributes = {
    'messaging.system': 'bullmq',
    'gen_ai.tool.name': 'bench_noop',
    'gen_ai.tool.call.id': 'c',
  };
  let carried = 0;
  const started = process.hrtime.bigint();
  for (let i = 0; i < iterations; i += 1) {
    const publish = tracer.startSpan('publish bench_noop', { kind: SpanKind.PRODUCER, attributes });
    publish.setAttribute('messaging.destination.name', 'tools-default');
    if (traceCarrier(publish)) carried += 1;
    publish.end();
    tracer.startActiveSpan(
      'execute_tool bench_noop',
      { kind: SpanKind.CONSUMER, attributes },
      carriedContext(undefined),
      (span) => {
        activeSpanEvent('retry');
        span.setAttributes({ 'agent_reach.tool.status': 'ok' });
        span.end();
      },
    );
  }
  const ns = Number(process.hrtime.bigint() - started) / iterations;
  if (carried > 0) throw new Error('traces are on in the parent process');
  return ns;
}

/** Stands in for a collector: accepts OTLP/HTTP JSON exports and counts their spans. */
async function startSink() {
  let spans = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        resourceSpans?: Array<{ scopeSpans?: Array<{ spans?: unknown[] }> }>;
      };
      for (const rs of body.resourceSpans ?? [])
        for (const ss of rs.scopeSpans ?? []) spans += ss.spans?.length ?? 0;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    take() {
      const n = spans;
      spans = 0;
      return n;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Runs one round of a mode in a fresh process under tsx. */
function runChild(mode: Mode, env: Record<string, string>): Promise<ChildReport> {
  return new Promise((resolve, reject) => {
    const proc = fork(fileURLToPath(import.meta.url), ['--child', mode], {
      env: { ...process.env, ...env },
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    let report: ChildReport | undefined;
    proc.on('message', (m: ChildReport) => (report = m));
    proc.once('error', reject);
    proc.once('exit', (code) =>
      report && code === 0 ? resolve(report) : reject(new Error(`${mode} round exited with ${code}`)),
    );
  });
}

function printFigures(columns: Record<Mode, Medians>): void {
  const rows: Array<[string, (f: Medians) => number, number]> = [
    ['throughput (calls/s)', (f) => f.throughputPerS, 0],
    [`latency @${IN_FLIGHT} p50 (ms)`, (f) => f.underLoad.p50, 2],
    [`latency @${IN_FLIGHT} p99 (ms)`, (f) => f.underLoad.p99, 2],
    ['sequential p50 (ms)', (f) => f.sequential.p50, 3],
    ['sequential p99 (ms)', (f) => f.sequential.p99, 3],
    ['node CPU / call (µs)', (f) => f.nodeCpuUsPerCall, 0],
  ];
  printTable(
    ['', 'raw BullMQ', 'traces off', 'traces on', 'on/off', 'off/raw'],
    rows.map(([label, pick, digits]) => {
      const [b, off, on] = MODES.map((m) => pick(columns[m])) as [number, number, number];
      return [label, fmt(b, digits), fmt(off, digits), fmt(on, digits), fmt(on / off, 2), fmt(off / b, 2)];
    }),
  );
}

async function main(): Promise<void> {
  const redisUrl = process.env.REDIS_URL ?? constants.DEFAULT_REDIS_URL;
  const calls = envInt('BENCH_CALLS', 3000, 10);
  const at = process.argv.indexOf('--child');
  if (at >= 0) return child(process.argv[at + 1] as Mode, redisUrl, calls);

  const rounds = envInt('BENCH_ROUNDS', 5, 1);
  const sink = await startSink();
  const figures: Record<Mode, RoundFigures[]> = { baseline: [], off: [], on: [] };
  const spansPerCall: number[] = [];
  console.log(
    `tracing bench: ${calls} calls @ ${IN_FLIGHT} in flight per round and mode, ${rounds} rounds, ` +
      `node ${process.version}, ${os.cpus().length} CPUs, ${os.loadavg()[0]?.toFixed(2)} load`,
  );
  try {
    for (let round = 1; round <= rounds; round += 1) {
      for (const mode of MODES) {
        // Nothing in the environment turns traces on except in the "on" rounds.
        const env: Record<string, string> =
          mode === 'on'
            ? { ...ON_ENV, OTEL_EXPORTER_OTLP_ENDPOINT: sink.endpoint }
            : { OTEL_SDK_DISABLED: 'true' };
        sink.take();
        const report = await runChild(mode, env);
        figures[mode].push(report.figures as RoundFigures);
        const spans = sink.take();
        if (mode === 'on') spansPerCall.push(spans / report.calls);
        console.log(
          `  round ${round} ${mode.padEnd(8)} ${report.figures.throughputPerS.toFixed(0).padStart(6)} calls/s   ` +
            `sequential p50 ${report.figures.sequential.p50.toFixed(3)} ms` +
            (mode === 'on' ? `   ${(spans / report.calls).toFixed(2)} spans exported per call` : ''),
        );
      }
    }
    const med = {
      baseline: medianFigures(figures.baseline),
      off: medianFigures(figures.off),
      on: medianFigures(figures.on),
    };
    console.log(`\nmedian of ${rounds} rounds`);
    printFigures(med);
    console.log(
      `\ntraces on/off: throughput ${(med.on.throughputPerS / med.off.throughputPerS).toFixed(2)}, ` +
        `sequential p50 ${(med.on.sequential.p50 / med.off.sequential.p50).toFixed(2)}, ` +
        `node CPU per call ${(med.on.nodeCpuUsPerCall / med.off.nodeCpuUsPerCall).toFixed(2)} ` +
        `(${median(spansPerCall).toFixed(2)} spans exported per call)`,
    );
    const noopNs = noopCallCostNs(1_000_000);
    console.log(
      `traces off: the tracing calls of one tool call cost ${noopNs.toFixed(0)} ns on the no-op API, ` +
        `${((noopNs / 1000 / med.off.nodeCpuUsPerCall) * 100).toFixed(3)} % of the node CPU of a call`,
    );
    console.log(
      `traces off/baseline (raw BullMQ): throughput ${(med.off.throughputPerS / med.baseline.throughputPerS).toFixed(2)}, ` +
        `sequential p50 ${(med.off.sequential.p50 / med.baseline.sequential.p50).toFixed(2)}`,
    );
    const resultsDir = fileURLToPath(new URL('./results/', import.meta.url));
    await mkdir(resultsDir, { recursive: true });
    const jsonPath = path.join(resultsDir, 'tracing.json');
    const report = {
      date: new Date().toISOString(),
      settings: { calls, rounds, inFlight: IN_FLIGHT, payloadChars: PAYLOAD_CHARS, on: ON_ENV },
      median: med,
      spansPerCall: median(spansPerCall),
      noopTracingNsPerCall: noopNs,
      rounds: figures,
    };
    await writeFile(jsonPath, `${JSON.stringify(report, null, 2)}\n`);
    console.log(`\nwrote ${path.relative(process.cwd(), jsonPath)}`);
  } finally {
    await sink.close();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
