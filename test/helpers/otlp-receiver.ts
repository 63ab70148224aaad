import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

/** One span as an OTLP/HTTP JSON export carries it, decoded: ids in hex, attributes as plain values. */
export interface ReceivedSpan {
  service: string;
  scope: string;
  traceId: string;
  spanId: string;
  /** Empty for a root span. */
  parentSpanId: string;
  name: string;
  /** OTLP span kind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  startMs: number;
  endMs: number;
  attributes: Record<string, unknown>;
  events: Array<{ name: string; attributes: Record<string, unknown> }>;
  /** OTLP status code: 0 unset, 1 ok, 2 error. */
  status: number;
}

/** A trace collector for tests: accepts OTLP/HTTP JSON on `/v1/traces` and keeps every span it is sent. */
export interface OtlpReceiver {
  /** The value of OTEL_EXPORTER_OTLP_ENDPOINT for the processes under test. */
  readonly endpoint: string;
  readonly spans: ReceivedSpan[];
  /** Requests that were not OTLP JSON on /v1/traces (with what was wrong). */
  readonly rejected: string[];
  close(): Promise<void>;
}

interface AnyValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: number | string;
  doubleValue?: number;
  arrayValue?: { values?: AnyValue[] };
}

interface KeyValue {
  key: string;
  value?: AnyValue;
}

function valueOf(v: AnyValue | undefined): unknown {
  if (!v) return undefined;
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.arrayValue) return (v.arrayValue.values ?? []).map(valueOf);
  return undefined;
}

function attributesOf(list: KeyValue[] | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map((kv) => [kv.key, valueOf(kv.value)]));
}

interface ExportRequest {
  resourceSpans?: Array<{
    resource?: { attributes?: KeyValue[] };
    scopeSpans?: Array<{
      scope?: { name?: string };
      spans?: Array<{
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        kind: number;
        startTimeUnixNano: string;
        endTimeUnixNano: string;
        attributes?: KeyValue[];
        events?: Array<{ name: string; attributes?: KeyValue[] }>;
        status?: { code?: number };
      }>;
    }>;
  }>;
}

/** Decodes one ExportTraceServiceRequest in its JSON encoding. */
export function decodeExport(body: ExportRequest): ReceivedSpan[] {
  return (body.resourceSpans ?? []).flatMap((rs) => {
    const service = String(attributesOf(rs.resource?.attributes)['service.name'] ?? '');
    return (rs.scopeSpans ?? []).flatMap((ss) =>
      (ss.spans ?? []).map((s) => ({
        service,
        scope: ss.scope?.name ?? '',
        traceId: s.traceId,
        spanId: s.spanId,
        parentSpanId: s.parentSpanId ?? '',
        name: s.name,
        kind: s.kind,
        startMs: Number(BigInt(s.startTimeUnixNano) / 1_000_000n),
        endMs: Number(BigInt(s.endTimeUnixNano) / 1_000_000n),
        attributes: attributesOf(s.attributes),
        events: (s.events ?? []).map((e) => ({ name: e.name, attributes: attributesOf(e.attributes) })),
        status: s.status?.code ?? 0,
      })),
    );
  });
}

/** Starts a receiver on a free port of 127.0.0.1. */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const rejected: string[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      try {
        if (req.method !== 'POST' || req.url !== '/v1/traces') throw new Error(`${req.method} ${req.url}`);
        if (!String(req.headers['content-type']).startsWith('application/json')) {
          throw new Error(`content-type ${req.headers['content-type']}`);
        }
        const raw = Buffer.concat(chunks);
        const text = (req.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw).toString('utf8');
        spans.push(...decodeExport(JSON.parse(text) as ExportRequest));
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      } catch (err) {
        rejected.push((err as Error).message);
        res.writeHead(400).end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    spans,
    rejected,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
