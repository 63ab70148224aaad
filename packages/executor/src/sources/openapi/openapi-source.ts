import path from 'node:path';
import type SwaggerParser from '@apidevtools/swagger-parser';
import { parse as parseYaml } from 'yaml';
import type { ToolDefinition } from '@agent-reach/protocol';
import {
  closestName,
  constants,
  openApiToolName,
  reachDefinition,
  type OpenApiSourceSpec,
} from '@agent-reach/shared';
import { callOperation, readCapped, type CallTarget } from './http-call.js';
import type { OpenApiVersion } from './json-schema.js';
import { findOperation, operationNames, operationTool } from './operation.js';
import { openApiValidationProblems } from './openapi-validation.js';

type Obj = Record<string, unknown>;

export interface SourceLoadOptions {
  /** Where relative document paths start: the directory of the executor's agents file. */
  baseDir: string;
  /** The environment credentials are read from. */
  env: Readonly<Record<string, string | undefined>>;
  /** Formats the tool validator knows. */
  formats: ReadonlySet<string>;
  /**
   * Check the source without reading its credential (as `config check` does, in an environment that is not
   * the executor's). Default false.
   */
  checkOnly?: boolean;
  /** Told each answer's HTTP status (`none`: no answer) of a tool's call, by tool name. */
  onResponse?: (tool: string, status: number | 'none') => void;
}

/** One source after loading: the tools it makes, and every problem, each naming the source (and operation). */
export interface LoadedSource {
  readonly name: string;
  readonly group: string;
  readonly tools: ToolDefinition[];
  readonly problems: string[];
  /**
   * What makes the document invalid OpenAPI, each a problem naming the source: validating a large
   * document takes long, so it runs beside the loading and is not waited for by it.
   */
  validation: Promise<string[]>;
}

/**
 * Reads an OpenAPI 3.0 or 3.1 document (file or URL, `$ref`s resolved) and makes a tool of each operation
 * the source lists. A document that cannot be read, or a credential missing from the environment, makes no
 * tools; an operation that is not in the document, or cannot be a tool, is left out, the others served.
 */
export async function loadOpenApiSource(
  spec: OpenApiSourceSpec,
  group: string,
  options: SourceLoadOptions,
): Promise<LoadedSource> {
  const label = `openapi source "${spec.name}" (tool group "${group}")`;
  const out: LoadedSource = {
    name: spec.name,
    group,
    tools: [],
    problems: [],
    validation: Promise.resolve([]),
  };
  const location = isUrl(spec.document) ? spec.document : path.resolve(options.baseDir, spec.document);
  let doc: Obj;
  try {
    doc = await readDocument(location);
  } catch (err) {
    out.problems.push(`${label}: cannot read document ${spec.document}: ${firstLine(err)}`);
    return out;
  }
  const version = versionOf(doc);
  if (!version) {
    out.problems.push(
      `${label}: document ${spec.document} is not OpenAPI 3.0 or 3.1 (it says ${JSON.stringify(doc.openapi ?? doc.swagger ?? null)})`,
    );
    return out;
  }
  // An invalid document is reported, and what can be read of it is still served.
  out.validation = openApiValidationProblems(doc).then(
    (invalid) => invalid.map((p) => `${label}: document ${spec.document} is not valid OpenAPI: ${p}`),
    (err: unknown) => [`${label}: document ${spec.document} could not be validated: ${firstLine(err)}`],
  );
  const tools: Array<[string, ReturnType<typeof operationTool>]> = [];
  for (const entry of spec.operations) {
    const found = findOperation(doc, entry);
    if (!found) {
      const guess = closestName(entry, operationNames(doc));
      out.problems.push(
        `${label}: operation "${entry}" is not in document ${spec.document}${guess ? ` (did you mean "${guess}"?)` : ''}`,
      );
      continue;
    }
    let tool;
    try {
      tool = operationTool(found, { version, formats: options.formats });
    } catch (err) {
      out.problems.push(`${label}: operation "${entry}" cannot be a tool: ${firstLine(err)}`);
      continue;
    }
    tools.push([entry, tool]);
  }
  const target = callTarget(spec, doc, location, options, label);
  if (typeof target === 'string') {
    out.problems.push(target);
    return out;
  }
  for (const [entry, tool] of tools) {
    const name = openApiToolName(spec.name, entry);
    const observe = options.onResponse && ((s: number | 'none') => options.onResponse!(name, s));
    out.tools.push(toolDefinition(spec, group, entry, tool, observe ? { ...target, observe } : target));
  }
  return out;
}

/** The document at a path or URL, `$ref`s resolved (circular ones left as they are). */
async function readDocument(location: string): Promise<Obj> {
  // A document read over HTTP is read here: swagger-parser rewrites a relative server URL against the
  // document's host and loses its port; the servers are kept as written and resolved below.
  const fetched = isUrl(location) ? await fetchDocument(location) : undefined;
  const servers: unknown = structuredClone(fetched?.servers);
  // Loaded on first use: an executor without OpenAPI sources does not pay for the parser at start.
  const { default: parser } = await import('@apidevtools/swagger-parser');
  const dereference = (options: SwaggerParser.Options) =>
    fetched === undefined
      ? parser.dereference(location, options)
      : parser.dereference(location, fetched as never, options);
  const doc = (await dereference({
    resolve: {
      http: {
        timeout: constants.OPENAPI_DOCUMENT_TIMEOUT_MS,
        maxContentLength: constants.OPENAPI_MAX_DOCUMENT_BYTES,
        // Documents are named by the fleet's own configuration, and internal services are the usual case.
        safeUrlResolver: false,
      },
    },
    dereference: { circular: 'ignore' },
    timeoutMs: constants.OPENAPI_DOCUMENT_TIMEOUT_MS,
  })) as unknown as Obj;
  return fetched === undefined ? doc : { ...doc, servers };
}

/** The platform tool of one operation, with the policy the source sets for it. */
function toolDefinition(
  spec: OpenApiSourceSpec,
  group: string,
  entry: string,
  tool: ReturnType<typeof operationTool>,
  target: CallTarget,
): ToolDefinition {
  const policy = spec.tools?.[entry];
  const plan = tool.plan;
  return {
    name: openApiToolName(spec.name, entry),
    description: tool.description,
    parameters: tool.parameters as unknown as ToolDefinition['parameters'],
    group,
    ...reachDefinition(policy, spec.access_scope ?? `openapi:${spec.name}`),
    readOnly: tool.readOnly,
    ...(policy?.timeout_ms === undefined ? {} : { timeoutMs: policy.timeout_ms }),
    ...(policy?.max_attempts === undefined && policy?.backoff_ms === undefined
      ? {}
      : {
          retry: {
            ...(policy.max_attempts === undefined ? {} : { maxAttempts: policy.max_attempts }),
            ...(policy.backoff_ms === undefined ? {} : { backoffMs: policy.backoff_ms }),
          },
        }),
    ...(policy?.requires_confirmation === undefined
      ? {}
      : { requiresConfirmation: policy.requires_confirmation }),
    handler: (args: Record<string, unknown>, ctx: { signal: AbortSignal }) =>
      callOperation(plan, target, args, ctx.signal),
  } as ToolDefinition;
}

function isUrl(location: string): boolean {
  return /^https?:\/\//i.test(location);
}

/** An OpenAPI document read over HTTP (JSON or YAML), within the document time and size limits. */
async function fetchDocument(url: string): Promise<Obj> {
  const response = await fetch(url, {
    headers: { accept: 'application/json, application/yaml;q=0.9, */*;q=0.8' },
    signal: AbortSignal.timeout(constants.OPENAPI_DOCUMENT_TIMEOUT_MS),
  });
  if (!response.ok) {
    await response.body?.cancel();
    throw new Error(`HTTP ${response.status} ${response.statusText}`);
  }
  const { text, cut } = await readCapped(response, constants.OPENAPI_MAX_DOCUMENT_BYTES);
  if (cut) throw new Error(`the document is larger than ${constants.OPENAPI_MAX_DOCUMENT_BYTES} bytes`);
  const parsed = parseYaml(text) as unknown;
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new Error('the document is not a JSON or YAML mapping');
  return parsed as Obj;
}

function versionOf(doc: Obj): OpenApiVersion | undefined {
  const v = typeof doc.openapi === 'string' ? doc.openapi : '';
  if (/^3\.0\.\d+/.test(v)) return '3.0';
  if (/^3\.1\.\d+/.test(v)) return '3.1';
  return undefined;
}

/** Where the source's calls go and their credential, or a problem saying why it has none. */
function callTarget(
  spec: OpenApiSourceSpec,
  doc: Obj,
  location: string,
  { env, checkOnly }: Pick<SourceLoadOptions, 'env' | 'checkOnly'>,
  label: string,
): CallTarget | string {
  let base = spec.base_url;
  if (base === undefined) {
    const server = (Array.isArray(doc.servers) ? doc.servers[0] : undefined) as Obj | undefined;
    if (typeof server?.url !== 'string') return `${label}: the document has no servers entry; set base_url`;
    base = server.url.replace(/\{([^}]+)\}/g, (_, name: string) => {
      const variable = ((server.variables ?? {}) as Obj)[name] as Obj | undefined;
      return typeof variable?.default === 'string' ? variable.default : `{${name}}`;
    });
    // A relative server URL is relative to where the document was read from.
    if (!isUrl(base) && isUrl(location)) base = new URL(base, location).href;
  }
  if (!/^https?:\/\/[^{}\s]+$/i.test(base))
    return `${label}: base URL ${JSON.stringify(base)} is not an absolute http(s) URL; set base_url`;
  const baseUrl = base.replace(/\/+$/, '');
  if (!spec.auth) return { baseUrl };
  const secret = checkOnly ? 'unread' : env[spec.auth.env];
  if (!secret) return `${label}: credential variable ${spec.auth.env} is not set in the environment`;
  return {
    baseUrl,
    auth:
      spec.auth.type === 'bearer'
        ? { type: 'bearer', secret }
        : { type: spec.auth.type, name: spec.auth.name, secret },
  };
}

function firstLine(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return message.split('\n')[0]!.slice(0, 500);
}
