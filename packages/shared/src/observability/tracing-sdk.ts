import type { Sampler } from '@opentelemetry/sdk-trace';
import type { Logger } from 'pino';
import { AgentReachError } from '@agent-reach/protocol';
import { fixedSpanIds, setRunSampling } from './tracing.js';

/** What the standard `OTEL_*` variables ask of traces, when they ask for any. */
export interface TracingSettings {
  exporters: ReadonlyArray<'otlp' | 'console'>;
  /** OTLP over HTTP with protobuf (the OTLP default) or JSON bodies. */
  protocol: 'http/protobuf' | 'http/json';
  serviceName: string;
  sampler: { name: string; ratio: number };
  batch: {
    scheduledDelayMillis?: number;
    exportTimeoutMillis?: number;
    maxQueueSize?: number;
    maxExportBatchSize?: number;
  };
}

const SAMPLERS = new Set([
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
]);

/**
 * Reads the standard variables. Traces are off unless asked for: by `OTEL_TRACES_EXPORTER` (`otlp`,
 * `console`; `none` is off), or, when that is unset, by an OTLP endpoint
 * (`OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`). `OTEL_SDK_DISABLED=true` wins
 * over both. The exporter itself reads its endpoint, headers, timeout and compression variables.
 */
export function tracingSettings(
  env: Record<string, string | undefined>,
  defaultServiceName: string,
): TracingSettings | undefined {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return undefined;
  const problems: string[] = [];
  const named = (env.OTEL_TRACES_EXPORTER ?? '')
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT;
  const wanted = named.length > 0 ? named : endpoint ? ['otlp'] : [];
  const exporters: Array<'otlp' | 'console'> = [];
  for (const name of wanted) {
    if (name === 'otlp' || name === 'console') exporters.push(name);
    else if (name !== 'none') problems.push(`OTEL_TRACES_EXPORTER: unsupported exporter "${name}"`);
  }
  const protocol = (
    env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ||
    env.OTEL_EXPORTER_OTLP_PROTOCOL ||
    'http/protobuf'
  ).trim();
  if (!isHttpProtocol(protocol)) {
    problems.push(
      `OTEL_EXPORTER_OTLP_PROTOCOL: "${protocol}" is not supported; use http/protobuf or http/json`,
    );
  }
  const samplerName = (env.OTEL_TRACES_SAMPLER || 'parentbased_always_on').trim().toLowerCase();
  if (!SAMPLERS.has(samplerName)) problems.push(`OTEL_TRACES_SAMPLER: unsupported sampler "${samplerName}"`);
  const ratio = env.OTEL_TRACES_SAMPLER_ARG ? Number(env.OTEL_TRACES_SAMPLER_ARG) : 1;
  if (!(ratio >= 0 && ratio <= 1)) problems.push('OTEL_TRACES_SAMPLER_ARG: must be a number from 0 to 1');
  const batch: TracingSettings['batch'] = {};
  for (const [name, field] of [
    ['OTEL_BSP_SCHEDULE_DELAY', 'scheduledDelayMillis'],
    ['OTEL_BSP_EXPORT_TIMEOUT', 'exportTimeoutMillis'],
    ['OTEL_BSP_MAX_QUEUE_SIZE', 'maxQueueSize'],
    ['OTEL_BSP_MAX_EXPORT_BATCH_SIZE', 'maxExportBatchSize'],
  ] as const) {
    const raw = env[name];
    if (raw === undefined || raw === '') continue;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < 0) problems.push(`${name}: must be a whole number`);
    else batch[field] = value;
  }
  if (problems.length > 0) {
    throw new AgentReachError('CONFIG_INVALID', `invalid tracing settings:\n${problems.join('\n')}`, {
      details: problems,
    });
  }
  if (exporters.length === 0) return undefined;
  return {
    exporters,
    protocol: protocol as TracingSettings['protocol'],
    serviceName: env.OTEL_SERVICE_NAME?.trim() || defaultServiceName,
    sampler: { name: samplerName, ratio },
    batch,
  };
}

function isHttpProtocol(p: string): p is TracingSettings['protocol'] {
  return p === 'http/protobuf' || p === 'http/json';
}

/** Traces being exported; `shutdown` exports what is left and stops. */
export interface Tracing {
  readonly settings: TracingSettings;
  shutdown(): Promise<void>;
}

/**
 * Starts the OpenTelemetry SDK when the `OTEL_*` settings ask for traces (see `tracingSettings`), and
 * returns undefined otherwise, having loaded nothing. Registers the global tracer provider, an
 * AsyncLocalStorage context manager and the W3C propagators; export failures are logged at `warn`.
 */
export async function startTracing(
  env: Record<string, string | undefined>,
  options: { serviceName: string; logger: Logger },
): Promise<Tracing | undefined> {
  const settings = tracingSettings(env, options.serviceName);
  if (!settings) return undefined;
  const [api, sdk, core, resources, asyncHooks] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/sdk-trace'),
    import('@opentelemetry/core'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/context-async-hooks'),
  ]);
  const log = options.logger.child({ component: 'tracing' });
  api.diag.setLogger(
    {
      error: (message, ...args) => log.warn({ args }, message),
      warn: (message, ...args) => log.warn({ args }, message),
      info: () => undefined,
      debug: () => undefined,
      verbose: () => undefined,
    },
    api.DiagLogLevel.WARN,
  );
  const exporters = await Promise.all(
    settings.exporters.map(async (name) => {
      if (name === 'console') return new sdk.ConsoleSpanExporter();
      const { OTLPTraceExporter } =
        settings.protocol === 'http/json'
          ? await import('@opentelemetry/exporter-trace-otlp-http')
          : await import('@opentelemetry/exporter-trace-otlp-proto');
      return new OTLPTraceExporter();
    }),
  );
  const random = new sdk.RandomIdGenerator();
  const sampler = buildSampler(sdk, settings.sampler);
  const provider = new sdk.TracerProvider({
    resource: resources
      .defaultResource()
      .merge(resources.resourceFromAttributes({ 'service.name': settings.serviceName }))
      .merge(
        resources.detectResources({
          detectors: [resources.resourceAttributesEnvDetector, resources.serviceNameEnvDetector],
        }),
      ),
    sampler,
    // A run's root span is started with the ids its steps were parented to (see tracing.ts).
    idGenerator: {
      generateTraceId: () => fixedSpanIds()?.traceId ?? random.generateTraceId(),
      generateSpanId: () => fixedSpanIds()?.spanId ?? random.generateSpanId(),
    },
    spanProcessors: exporters.map((exporter) => new sdk.BatchSpanProcessor({ exporter, ...settings.batch })),
  });
  api.context.setGlobalContextManager(new asyncHooks.AsyncLocalStorageContextManager().enable());
  api.propagation.setGlobalPropagator(
    new core.CompositePropagator({
      propagators: [new core.W3CTraceContextPropagator(), new core.W3CBaggagePropagator()],
    }),
  );
  api.trace.setGlobalTracerProvider(provider);
  // Runs' traces are sampled as the sampler decides for a root span of their trace id.
  setRunSampling(
    (traceId) =>
      sampler.shouldSample(api.ROOT_CONTEXT, traceId, 'run', api.SpanKind.INTERNAL, {}, []).decision ===
      sdk.SamplingDecision.RECORD_AND_SAMPLED,
  );
  log.info(
    { exporters: settings.exporters, protocol: settings.protocol, serviceName: settings.serviceName },
    'exporting traces',
  );
  return {
    settings,
    async shutdown() {
      setRunSampling(undefined);
      await provider.shutdown().catch((err: unknown) => log.warn({ err }, 'exporting the last spans failed'));
    },
  };
}

function buildSampler(
  sdk: typeof import('@opentelemetry/sdk-trace'),
  s: TracingSettings['sampler'],
): Sampler {
  const root = s.name.endsWith('always_off')
    ? new sdk.AlwaysOffSampler()
    : s.name.endsWith('traceidratio')
      ? new sdk.TraceIdRatioBasedSampler(s.ratio)
      : new sdk.AlwaysOnSampler();
  return s.name.startsWith('parentbased_') ? new sdk.ParentBasedSampler({ root }) : root;
}
