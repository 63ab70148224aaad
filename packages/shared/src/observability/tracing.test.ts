import { ProxyTracerProvider, ROOT_CONTEXT, trace, TraceFlags, type Span } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import {
  carriedContext,
  otelTraceId,
  runSpanId,
  runTraceContext,
  traceCarrier,
  tracingEnabled,
} from './tracing.js';
import { tracingSettings } from './tracing-sdk.js';

const HEX32 = /^[0-9a-f]{32}$/;

/** A span that records, with a given context: what `traceCarrier` reads of a real SDK span. */
function recordingSpan(traceId: string, spanId: string, flags: number): Span {
  const span = trace.wrapSpanContext({ traceId, spanId, traceFlags: flags });
  return Object.assign(span, { isRecording: () => true });
}

describe('trace ids of runs', () => {
  it('uses a trace_id of 32 hex digits as the OTel trace id, lower-cased', () => {
    expect(otelTraceId('0af7651916cd43dd8448eb211c80319c')).toBe('0af7651916cd43dd8448eb211c80319c');
    expect(otelTraceId('0AF7651916CD43DD8448EB211C80319C')).toBe('0af7651916cd43dd8448eb211c80319c');
  });

  it('hashes any other trace_id to a valid trace id, the same every time', () => {
    for (const id of ['order-42', 'run_3f2a', '0'.repeat(32), 'abc']) {
      const otel = otelTraceId(id);
      expect(otel).toMatch(HEX32);
      expect(otel).not.toBe('0'.repeat(32));
      expect(otelTraceId(id)).toBe(otel);
    }
    expect(otelTraceId('order-42')).not.toBe(otelTraceId('order-43'));
  });

  it("derives the root span id from the run id alone, so every process parents a run's spans alike", () => {
    expect(runSpanId('run_a')).toMatch(/^[0-9a-f]{16}$/);
    expect(runSpanId('run_a')).toBe(runSpanId('run_a'));
    expect(runSpanId('run_a')).not.toBe(runSpanId('run_b'));
    const parent = trace.getSpanContext(runTraceContext({ runId: 'run_a', traceId: 'order-42' }));
    expect(parent).toMatchObject({
      traceId: otelTraceId('order-42'),
      spanId: runSpanId('run_a'),
      isRemote: true,
    });
  });
});

describe('trace context carried in a job', () => {
  it('carries the traceparent of a recording span and continues it as a remote parent', () => {
    const span = recordingSpan('0af7651916cd43dd8448eb211c80319c', 'b7ad6b7169203331', TraceFlags.SAMPLED);
    const carrier = traceCarrier(span);
    expect(carrier).toEqual({ traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' });
    expect(trace.getSpanContext(carriedContext(carrier))).toEqual({
      traceId: '0af7651916cd43dd8448eb211c80319c',
      spanId: 'b7ad6b7169203331',
      traceFlags: TraceFlags.SAMPLED,
      isRemote: true,
    });
  });

  it('carries nothing for a span that does not record (traces off)', () => {
    expect(
      traceCarrier(trace.wrapSpanContext({ traceId: '1'.repeat(32), spanId: '1'.repeat(16), traceFlags: 1 })),
    ).toBe(undefined);
  });

  it('starts from the root context when the carried traceparent is missing, malformed or all zeros', () => {
    for (const carrier of [
      undefined,
      null,
      'x',
      {},
      { traceparent: 42 },
      { traceparent: '00-xyz-b7ad6b7169203331-01' },
      { traceparent: `00-${'0'.repeat(32)}-b7ad6b7169203331-01` },
      { traceparent: `00-0af7651916cd43dd8448eb211c80319c-${'0'.repeat(16)}-01` },
    ]) {
      expect(carriedContext(carrier)).toBe(ROOT_CONTEXT);
    }
  });
});

describe('whether call paths build spans', () => {
  it('says no while no tracer provider is registered, yes while one is, and no again once it is gone', () => {
    expect(tracingEnabled()).toBe(false);
    // A provider of no-op tracers, not of the global API's proxy tracers: the tracers modules made at import
    // stay bound to the provider registered here after `trace.disable()`, and a proxy handed back to them
    // would resolve to itself, for every file that runs in this process after this one.
    const stub = new ProxyTracerProvider().getDelegate().getTracer('stub');
    expect(trace.setGlobalTracerProvider({ getTracer: () => stub })).toBe(true);
    try {
      expect(tracingEnabled()).toBe(true);
    } finally {
      trace.disable();
    }
    expect(tracingEnabled()).toBe(false);
  });
});

describe('tracing settings from the OTEL_* variables', () => {
  it('leaves traces off when nothing asks for them', () => {
    expect(tracingSettings({}, 'svc')).toBeUndefined();
    expect(
      tracingSettings({ OTEL_SERVICE_NAME: 'x', OTEL_TRACES_SAMPLER: 'always_on' }, 'svc'),
    ).toBeUndefined();
  });

  it('turns OTLP export on for an endpoint, with protobuf by default and the default service name', () => {
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, 'svc')).toMatchObject({
      exporters: ['otlp'],
      protocol: 'http/protobuf',
      serviceName: 'svc',
      sampler: { name: 'parentbased_always_on', ratio: 1 },
    });
    expect(
      tracingSettings(
        {
          OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces',
          OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
          OTEL_SERVICE_NAME: 'mine',
          OTEL_BSP_SCHEDULE_DELAY: '200',
        },
        'svc',
      ),
    ).toMatchObject({ protocol: 'http/json', serviceName: 'mine', batch: { scheduledDelayMillis: 200 } });
  });

  it('honours OTEL_TRACES_EXPORTER, where none is off, and OTEL_SDK_DISABLED over everything', () => {
    expect(tracingSettings({ OTEL_TRACES_EXPORTER: 'console' }, 'svc')?.exporters).toEqual(['console']);
    expect(
      tracingSettings({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }, 'svc'),
    ).toBeUndefined();
    expect(
      tracingSettings({ OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }, 'svc'),
    ).toBeUndefined();
  });

  it('reports every unsupported setting at once as CONFIG_INVALID', () => {
    let thrown: unknown;
    try {
      tracingSettings(
        {
          OTEL_TRACES_EXPORTER: 'otlp,zipkin',
          OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
          OTEL_TRACES_SAMPLER: 'sometimes',
          OTEL_TRACES_SAMPLER_ARG: '2',
          OTEL_BSP_MAX_QUEUE_SIZE: 'many',
        },
        'svc',
      );
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toMatchObject({ code: 'CONFIG_INVALID' });
    expect((thrown as { details: string[] }).details.map((d) => d.split(':')[0])).toEqual([
      'OTEL_TRACES_EXPORTER',
      'OTEL_EXPORTER_OTLP_PROTOCOL',
      'OTEL_TRACES_SAMPLER',
      'OTEL_TRACES_SAMPLER_ARG',
      'OTEL_BSP_MAX_QUEUE_SIZE',
    ]);
  });
});
