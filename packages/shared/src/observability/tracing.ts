import { createHash } from 'node:crypto';
import {
  context,
  INVALID_SPAN_CONTEXT,
  ProxyTracerProvider,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Attributes,
  type Context,
  type Span,
  type SpanContext,
  type Tracer,
} from '@opentelemetry/api';
import type { TraceCarrier } from '@agent-reach/protocol';

/**
 * OpenTelemetry traces of runs, through `@opentelemetry/api` only: with no SDK registered (the default)
 * every tracer is the API's no-op one, so the code on the call paths costs a few property reads. The SDK
 * is loaded by `startTracing` (`@agent-reach/shared/tracing-sdk`, kept out of the index) only when the `OTEL_*` settings ask for traces.
 *
 * How one run becomes one trace, although it spans many jobs and possibly several scheduler processes
 * (takeover after a crash, a parked run resumed elsewhere):
 * - its OTel trace id is its `trace_id` (every run the API or the runner starts gets 32 hex digits; any
 *   other id a caller chose is hashed to 32 digits, the same in every process);
 * - its root span, `invoke_agent {agent}`, has a span id derived from the run id, so every process
 *   knows it without asking anyone, and parents the spans of its own steps (model calls, tool calls
 *   published) to it as a remote parent;
 * - no process can hold that span open across the run's life, so the root span is emitted once, by
 *   the process that finishes the run, with the run's creation time as its start; until then a backend
 *   shows the steps under a missing parent, and a run that never finishes never gets its root span;
 * - a tool call's job carries the W3C `traceparent` of its publish span; the executor continues the
 *   trace from it with its execution span.
 */

/** Name of the tracer every span of the platform comes from. */
export const TRACER_NAME = 'agent-reach';

/** The platform's tracer: a proxy that stays a no-op until an SDK is registered. */
export const tracer: Tracer = /* @__PURE__ */ trace.getTracer(TRACER_NAME);

/** The API's no-op provider: what the global provider delegates to while no SDK is registered. */
const NOOP_PROVIDER = /* @__PURE__ */ new ProxyTracerProvider().getDelegate();

/**
 * Whether spans can be recorded at all: false while no SDK registered a tracer provider (the default).
 * Call paths then skip building spans, their attributes and their contexts, which nothing would read.
 */
export function tracingEnabled(): boolean {
  const provider = trace.getTracerProvider();
  return !(provider instanceof ProxyTracerProvider) || provider.getDelegate() !== NOOP_PROVIDER;
}

/** A span that records nothing, shared, for call paths that skip tracing (see `tracingEnabled`). */
export const NO_SPAN: Span = /* @__PURE__ */ trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

/** What the trace of a run is derived from. */
export interface TracedRun {
  runId: string;
  traceId: string;
  /** The caller's span (W3C `traceparent`), parent of the run's root span. */
  traceParent?: string;
}

const TRACE_ID = /^[0-9a-f]{32}$/;
const INVALID_TRACE_ID = '0'.repeat(32);
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The OTel trace id of a run's `trace_id`: itself when it is one (32 lower-case hex digits), else a hash. */
export function otelTraceId(traceId: string): string {
  const lower = traceId.toLowerCase();
  if (TRACE_ID.test(lower) && lower !== INVALID_TRACE_ID) return lower;
  return createHash('sha256').update(`trace\n${traceId}`).digest('hex').slice(0, 32);
}

/** The span id of a run's root span: the same in every process, derived from the run id. */
export function runSpanId(runId: string): string {
  const id = createHash('sha256').update(`run-span\n${runId}`).digest('hex').slice(0, 16);
  return id === '0'.repeat(16) ? '0'.repeat(15) + '1' : id;
}

/** Whether a run's trace is sampled: decided by the SDK's sampler once `startTracing` installed one. */
let sampledTrace: (traceId: string) => boolean = () => false;

/** Set by `startTracing`: how a run's trace is sampled, and (undefined) back to nothing sampled. */
export function setRunSampling(decide: ((traceId: string) => boolean) | undefined): void {
  sampledTrace = decide ?? (() => false);
}

/** The context whose (remote) parent is a run's root span: its steps' spans are started in it. */
export function runTraceContext(run: TracedRun): Context {
  const traceId = otelTraceId(run.traceId);
  return trace.setSpanContext(ROOT_CONTEXT, {
    traceId,
    spanId: runSpanId(run.runId),
    traceFlags: sampledTrace(traceId) ? TraceFlags.SAMPLED : TraceFlags.NONE,
    isRemote: true,
  });
}

/** Runs `fn` with a run's root span as the active parent, so spans started inside belong to its trace. */
export function withRunTrace<T>(run: TracedRun, fn: () => T): T {
  return context.with(runTraceContext(run), fn);
}

/** Ids the SDK's id generator hands out next instead of random ones (set only while a root span starts). */
let fixedIds: { traceId: string; spanId: string } | undefined;

/** The ids `emitRunSpan` is starting a span with, for the SDK's id generator. */
export function fixedSpanIds(): { traceId: string; spanId: string } | undefined {
  return fixedIds;
}

/** A finished run, as its root span shows it. */
export interface RunSpan {
  agent: string;
  /** Epoch ms the run was created. */
  startedAt: number;
  status: string;
  reason: string;
  attributes?: Attributes;
}

/**
 * Emits a run's root span, once, when the run finishes (see the model above). Its ids are those its
 * steps' spans were parented to; the SDK's id generator takes them from `fixedSpanIds` while it starts.
 */
export function emitRunSpan(run: TracedRun, finished: RunSpan): void {
  fixedIds = { traceId: otelTraceId(run.traceId), spanId: runSpanId(run.runId) };
  let span: Span;
  try {
    // Under the caller's span when the run came with one of the same trace, else a trace's root.
    // Sampled as the run's own spans were (`runTraceContext`), whatever the caller's flags said.
    const caller = trace.getSpanContext(carriedContext({ traceparent: run.traceParent }));
    const parented = caller?.traceId === fixedIds.traceId;
    const parent = caller
      ? trace.setSpanContext(ROOT_CONTEXT, {
          ...caller,
          traceFlags: sampledTrace(caller.traceId) ? TraceFlags.SAMPLED : TraceFlags.NONE,
        })
      : ROOT_CONTEXT;
    const options = {
      kind: SpanKind.INTERNAL,
      startTime: finished.startedAt,
      attributes: {
        'gen_ai.operation.name': 'invoke_agent',
        'gen_ai.agent.name': finished.agent,
        'agent_reach.run.id': run.runId,
        'agent_reach.run.trace_id': run.traceId,
        'agent_reach.run.status': finished.status,
        'agent_reach.run.reason': finished.reason,
        ...finished.attributes,
      },
    };
    span = parented
      ? tracer.startSpan(`invoke_agent ${finished.agent}`, options, parent)
      : tracer.startSpan(`invoke_agent ${finished.agent}`, { ...options, root: true });
  } finally {
    fixedIds = undefined;
  }
  if (finished.status !== 'succeeded') {
    span.setStatus({ code: SpanStatusCode.ERROR, message: finished.reason });
  }
  span.end();
}

/** The carrier of a recording span's context, for a job; undefined when nothing is traced. */
export function traceCarrier(span: Span): TraceCarrier | undefined {
  if (!span.isRecording()) return undefined;
  const sc = span.spanContext();
  const flags = (sc.traceFlags & 0xff).toString(16).padStart(2, '0');
  const state = sc.traceState?.serialize();
  return { traceparent: `00-${sc.traceId}-${sc.spanId}-${flags}`, ...(state ? { tracestate: state } : {}) };
}

/** The context a carried `traceparent` continues; the root context when it is absent or malformed. */
export function carriedContext(carrier: unknown): Context {
  const tp = (carrier as Partial<TraceCarrier> | null | undefined)?.traceparent;
  const m = typeof tp === 'string' ? TRACEPARENT.exec(tp) : null;
  if (!m || m[1] === INVALID_TRACE_ID || m[2] === '0'.repeat(16)) return ROOT_CONTEXT;
  const parent: SpanContext = {
    traceId: m[1] as string,
    spanId: m[2] as string,
    traceFlags: Number.parseInt(m[3] as string, 16) & TraceFlags.SAMPLED,
    isRemote: true,
  };
  return trace.setSpanContext(ROOT_CONTEXT, parent);
}

/**
 * Adds an event to the active span (retries, breaker transitions); nothing when none records, or when it
 * has ended (a timer set during a call, such as a breaker's reset, still runs in that call's context).
 */
export function activeSpanEvent(name: string, attributes?: Attributes): void {
  const span = trace.getActiveSpan();
  if (span?.isRecording()) span.addEvent(name, attributes);
}

/** Marks a span failed with an error kind (`error.type`), as the semantic conventions name it. */
export function failSpan(span: Span, errorType: string, message?: string): void {
  span.setAttribute('error.type', errorType);
  span.setStatus({ code: SpanStatusCode.ERROR, ...(message ? { message } : {}) });
}

export { SpanKind };
export type { Span };
