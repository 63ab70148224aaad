import { constants } from '@agent-reach/shared';

/** Which OpenAPI dialect a schema is written in: 3.0's Schema Object or 3.1's JSON Schema 2020-12. */
export type OpenApiVersion = '3.0' | '3.1';

type Schema = Record<string, unknown>;

/** Keywords the tool validator (ajv, draft-07, strict) knows and that mean the same in both dialects. */
const KEPT = new Set([
  'type',
  'enum',
  'const',
  'format',
  'title',
  'description',
  'default',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'minLength',
  'maxLength',
  'pattern',
  'minItems',
  'maxItems',
  'uniqueItems',
  'minProperties',
  'maxProperties',
  'required',
  'properties',
  'additionalProperties',
  'items',
  'allOf',
  'anyOf',
  'oneOf',
  'not',
  'deprecated',
  'readOnly',
  'writeOnly',
  'examples',
]);
const OBJECT_KEYWORDS = ['properties', 'additionalProperties', 'required', 'minProperties', 'maxProperties'];
const ARRAY_KEYWORDS = ['items', 'minItems', 'maxItems', 'uniqueItems'];
const STRING_KEYWORDS = ['minLength', 'maxLength', 'pattern'];
const NUMBER_KEYWORDS = ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf'];

export interface ConvertOptions {
  version: OpenApiVersion;
  /** Formats the validator knows; others are dropped (a model cannot be held to a format nobody checks). */
  formats: ReadonlySet<string>;
  /** Request schemas leave out `readOnly` properties (the server sets them). */
  direction: 'request';
}

/**
 * An OpenAPI schema (already dereferenced) as a JSON Schema the tool validator compiles in strict mode:
 * OpenAPI-only keywords and extensions dropped (`example` becomes `examples`), 3.0's `nullable` and
 * boolean `exclusiveMinimum`/`exclusiveMaximum` rewritten, the type a keyword implies added where it is
 * missing, required names without a property given one, unknown formats and patterns that are not
 * ECMAScript regular expressions dropped. A schema met again inside itself, a `$ref` left unresolved
 * (circular), or anything deeper than OPENAPI_MAX_SCHEMA_DEPTH accepts any value.
 */
export function toJsonSchema(schema: unknown, options: ConvertOptions): Schema {
  return convert(schema, options, [], 0);
}

function convert(input: unknown, options: ConvertOptions, stack: object[], depth: number): Schema {
  if (input === true || input === undefined) return {};
  if (input === false) return { not: {} };
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return {};
  const source = input as Schema;
  if (stack.includes(source) || typeof source.$ref === 'string' || depth > constants.OPENAPI_MAX_SCHEMA_DEPTH)
    return describedOnly(source);
  const inner = [...stack, source];
  const sub = (s: unknown) => convert(s, options, inner, depth + 1);
  const out: Schema = {};
  for (const [key, value] of Object.entries(source)) {
    if (!KEPT.has(key)) continue;
    switch (key) {
      case 'properties': {
        const props: Schema = {};
        for (const [name, prop] of Object.entries((value ?? {}) as Schema)) {
          if (options.direction === 'request' && (prop as Schema | null)?.readOnly === true) continue;
          props[name] = sub(prop);
        }
        out.properties = props;
        break;
      }
      case 'additionalProperties':
        out.additionalProperties = typeof value === 'boolean' ? value : sub(value);
        break;
      case 'items':
        // 3.1's tuple form (`prefixItems`) is not kept; an array `items` is draft-04's tuple: any item.
        out.items = Array.isArray(value) ? {} : sub(value);
        break;
      case 'allOf':
      case 'anyOf':
      case 'oneOf':
        if (Array.isArray(value) && value.length > 0) out[key] = value.map(sub);
        break;
      case 'not':
        out.not = sub(value);
        break;
      case 'format':
        if (typeof value === 'string' && options.formats.has(value)) out.format = value;
        break;
      case 'pattern':
        if (typeof value === 'string' && isEcmaPattern(value)) out.pattern = value;
        break;
      case 'description':
      case 'title':
        if (typeof value === 'string')
          out[key] = value.slice(0, constants.OPENAPI_ARGUMENT_DESCRIPTION_MAX_CHARS);
        break;
      case 'examples':
        if (Array.isArray(value)) out.examples = value.slice(0, 3);
        break;
      case 'exclusiveMinimum':
      case 'exclusiveMaximum':
        if (typeof value === 'number') out[key] = value;
        break;
      default:
        out[key] = value;
    }
  }
  if (source.example !== undefined && out.examples === undefined) out.examples = [source.example];
  if (options.version === '3.0') exclusiveBounds(source, out);
  if (Array.isArray(source.required)) {
    const declared = (source.properties ?? {}) as Schema;
    // A readOnly property is set by the server: a request neither carries it nor is required to.
    const serverSet = (name: string) =>
      options.direction === 'request' && (declared[name] as Schema | null)?.readOnly === true;
    const required = [...new Set(source.required)].filter(
      (r): r is string => typeof r === 'string' && !serverSet(r),
    );
    if (required.length > 0) {
      const props = (out.properties ??= {}) as Schema;
      for (const name of required) props[name] ??= {};
      out.required = required;
    } else delete out.required;
  }
  impliedType(out);
  if (options.version === '3.0' && source.nullable === true) return nullable(out);
  return out;
}

/** What is left of a schema that is not followed: its description, any value accepted. */
function describedOnly(source: Schema): Schema {
  return typeof source.description === 'string'
    ? { description: source.description.slice(0, constants.OPENAPI_ARGUMENT_DESCRIPTION_MAX_CHARS) }
    : {};
}

/** 3.0's `exclusiveMinimum: true` beside `minimum` is 3.1's (and draft-07's) `exclusiveMinimum: <number>`. */
function exclusiveBounds(source: Schema, out: Schema): void {
  for (const [flag, bound] of [
    ['exclusiveMinimum', 'minimum'],
    ['exclusiveMaximum', 'maximum'],
  ] as const) {
    if (source[flag] === true && typeof source[bound] === 'number') {
      out[flag] = source[bound];
      delete out[bound];
    }
  }
}

/** The validator's strict mode wants the type a keyword applies to stated beside it. */
function impliedType(out: Schema): void {
  if (out.type !== undefined) return;
  const has = (keys: string[]) => keys.some((k) => k in out);
  if (has(OBJECT_KEYWORDS)) out.type = 'object';
  else if (has(ARRAY_KEYWORDS)) out.type = 'array';
  else if (has(STRING_KEYWORDS)) out.type = 'string';
  else if (has(NUMBER_KEYWORDS)) out.type = 'number';
}

/** 3.0's `nullable: true`: the type may also be null. */
function nullable(out: Schema): Schema {
  if (typeof out.type === 'string') {
    const enumValues = Array.isArray(out.enum) ? { enum: [...(out.enum as unknown[]), null] } : {};
    return { ...out, type: [out.type, 'null'], ...enumValues };
  }
  if (out.type === undefined && Object.keys(out).length === 0) return out;
  return { anyOf: [out, { type: 'null' }] };
}

function isEcmaPattern(pattern: string): boolean {
  try {
    new RegExp(pattern, 'u');
    return true;
  } catch {
    return false;
  }
}
