import { constants, OPENAPI_METHOD_PATH_PATTERN } from '@agent-reach/shared';
import { toJsonSchema, type OpenApiVersion } from './json-schema.js';

type Obj = Record<string, unknown>;

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'] as const;
/** Where a parameter of an OpenAPI 3.0 or 3.1 operation can be. */
const PLACES = new Set(['path', 'query', 'header', 'cookie']);
/** Header parameters OpenAPI says to ignore: the request sets them itself. */
const IGNORED_HEADERS = new Set(['accept', 'content-type', 'authorization']);

/** One argument of a tool and where it goes in the request. */
export interface ParameterPlan {
  /** Its name among the tool's arguments. */
  readonly arg: string;
  /** Its name in the request. */
  readonly name: string;
  readonly in: 'path' | 'query' | 'header';
  readonly style: string;
  readonly explode: boolean;
  /** Sent as JSON text (a parameter described by `content` rather than `schema`). */
  readonly json: boolean;
}

/** How a tool's arguments become the operation's request. */
export interface OperationPlan {
  readonly method: string;
  /** The path template, e.g. `/invoices/{invoiceId}`. */
  readonly path: string;
  readonly parameters: readonly ParameterPlan[];
  /** The `body` argument is sent as this JSON media type; absent: the operation takes no body. */
  readonly bodyMediaType: string | undefined;
}

/** An operation turned into a tool's spec. */
export interface OperationTool {
  readonly plan: OperationPlan;
  readonly parameters: Obj;
  readonly description: string;
  /** GET and HEAD change nothing (HTTP's safe methods). */
  readonly readOnly: boolean;
}

export interface OperationOptions {
  version: OpenApiVersion;
  formats: ReadonlySet<string>;
}

/** The operation an `operations` entry names: by `operationId`, or `METHOD /path`. */
export function findOperation(
  doc: Obj,
  entry: string,
): { method: string; path: string; operation: Obj; pathItem: Obj } | undefined {
  const paths = (doc.paths ?? {}) as Obj;
  const byPath = OPENAPI_METHOD_PATH_PATTERN.exec(entry.trim());
  if (byPath) {
    const method = byPath[1]!.toLowerCase();
    const pathItem = paths[byPath[2]!] as Obj | undefined;
    const operation = pathItem?.[method] as Obj | undefined;
    return pathItem && operation ? { method, path: byPath[2]!, operation, pathItem } : undefined;
  }
  for (const [path, item] of Object.entries(paths)) {
    for (const method of METHODS) {
      const operation = (item as Obj | null)?.[method] as Obj | undefined;
      if (operation?.operationId === entry) return { method, path, operation, pathItem: item as Obj };
    }
  }
  return undefined;
}

/** Every way the document's operations can be named (for a suggestion when an entry names none). */
export function operationNames(doc: Obj): string[] {
  const names: string[] = [];
  for (const [path, item] of Object.entries((doc.paths ?? {}) as Obj)) {
    for (const method of METHODS) {
      const operation = (item as Obj | null)?.[method] as Obj | undefined;
      if (!operation) continue;
      names.push(
        typeof operation.operationId === 'string' ? operation.operationId : `${method.toUpperCase()} ${path}`,
      );
    }
  }
  return names;
}

/**
 * The tool of one operation. Its arguments are one flat object: each path, query and header parameter by
 * its own name (a name used in two places, or the name `body`, is prefixed with its place: `query_id`),
 * and the JSON request body, when the operation takes one, as `body`. Throws an Error saying why the
 * operation cannot be a tool (a required cookie parameter, a required body that is not JSON).
 */
export function operationTool(
  found: { method: string; path: string; operation: Obj; pathItem: Obj },
  options: OperationOptions,
): OperationTool {
  const { method, path, operation, pathItem } = found;
  const declared = new Map<string, Obj>();
  for (const p of [...asArray(pathItem.parameters), ...asArray(operation.parameters)]) {
    if (typeof p.name === 'string' && typeof p.in === 'string') declared.set(`${p.in}:${p.name}`, p);
  }
  const usable = [...declared.values()].filter((p) => {
    if (!PLACES.has(p.in as string))
      throw new Error(
        `its parameter "${String(p.name)}" is in ${JSON.stringify(p.in)}, which OpenAPI 3.0 and 3.1 do not have (path, query, header, cookie)`,
      );
    if (p.in === 'cookie') {
      if (p.required === true)
        throw new Error(`its required cookie parameter "${String(p.name)}" is not supported`);
      return false;
    }
    return !(p.in === 'header' && IGNORED_HEADERS.has(String(p.name).toLowerCase()));
  });
  const body = requestBody(operation, options);
  const counts = new Map<string, number>();
  for (const p of usable) counts.set(String(p.name), (counts.get(String(p.name)) ?? 0) + 1);
  const properties: Obj = {};
  const required: string[] = [];
  const plans: ParameterPlan[] = [];
  for (const p of usable) {
    const name = String(p.name);
    const where = p.in as ParameterPlan['in'];
    const clash = (counts.get(name) ?? 0) > 1 || (body !== undefined && name === 'body');
    const arg = clash ? `${where}_${name}` : name;
    const content = p.content as Obj | undefined;
    const schemaSource =
      p.schema ?? (content ? (Object.values(content)[0] as Obj | undefined)?.schema : undefined);
    const schema = toJsonSchema(schemaSource, { ...options, direction: 'request' });
    if (typeof p.description === 'string' && schema.description === undefined)
      schema.description = p.description.slice(0, constants.OPENAPI_ARGUMENT_DESCRIPTION_MAX_CHARS);
    properties[arg] = schema;
    if (where === 'path' || p.required === true) required.push(arg);
    const style = typeof p.style === 'string' ? p.style : where === 'query' ? 'form' : 'simple';
    plans.push({
      arg,
      name,
      in: where,
      style,
      explode: typeof p.explode === 'boolean' ? p.explode : style === 'form',
      json: p.schema === undefined && content !== undefined,
    });
  }
  if (body) {
    properties.body = body.schema;
    if (body.required) required.push('body');
  }
  return {
    plan: { method: method.toUpperCase(), path, parameters: plans, bodyMediaType: body?.mediaType },
    parameters: {
      type: 'object',
      properties,
      ...(required.length > 0 ? { required } : {}),
      additionalProperties: false,
    },
    description: describe(method, path, operation),
    readOnly: method === 'get' || method === 'head',
  };
}

/** The operation's JSON request body, if it takes one. */
function requestBody(
  operation: Obj,
  options: OperationOptions,
): { schema: Obj; required: boolean; mediaType: string } | undefined {
  const body = operation.requestBody as Obj | undefined;
  if (!body || typeof body.content !== 'object' || body.content === null) return undefined;
  const types = Object.keys(body.content);
  const mediaType =
    types.find((t) => t.toLowerCase() === 'application/json') ??
    types.find((t) => /^application\/([\w.+-]*\+)?json\b/i.test(t));
  if (mediaType === undefined) {
    if (body.required === true)
      throw new Error(`its request body is required and not JSON (${types.join(', ') || 'no media type'})`);
    return undefined;
  }
  const media = (body.content as Obj)[mediaType] as Obj | undefined;
  const schema = toJsonSchema(media?.schema, { ...options, direction: 'request' });
  if (typeof body.description === 'string' && schema.description === undefined)
    schema.description = body.description.slice(0, constants.OPENAPI_ARGUMENT_DESCRIPTION_MAX_CHARS);
  return { schema, required: body.required === true, mediaType };
}

/** The tool's description: the operation's summary and description, capped; else its method and path. */
function describe(method: string, path: string, operation: Obj): string {
  const parts = [operation.summary, operation.description].filter(
    (t): t is string => typeof t === 'string' && t.trim() !== '',
  );
  if (parts.length === 2 && parts[1]!.startsWith(parts[0]!)) parts.shift();
  const text = parts.length > 0 ? parts.join('\n\n') : `${method.toUpperCase()} ${path}`;
  const max = constants.OPENAPI_DESCRIPTION_MAX_CHARS;
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

function asArray(value: unknown): Obj[] {
  return Array.isArray(value) ? value.filter((v): v is Obj => typeof v === 'object' && v !== null) : [];
}
