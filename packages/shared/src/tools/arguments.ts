import type { ErrorObject, ValidateFunction } from 'ajv';
import sjson from 'secure-json-parse';
import type { ToolErrorInfo } from '@agent-reach/protocol';
import { applyAliases, type FoldedAliases } from './reach-policy.js';

export type ArgumentsCheck =
  | {
      ok: true;
      args: Record<string, unknown>;
      /** The arguments after the tool's aliases, before validation, when an alias changed them. */
      normalized?: Record<string, unknown>;
    }
  | { ok: false; error: ToolErrorInfo };

/**
 * Parses a model's raw argument string without letting `__proto__` or `constructor.prototype` through
 * (they are refused, never silently merged), rewrites values the tool's aliases name, then validates it
 * against the tool's compiled schema.
 */
export function checkArguments(
  toolName: string,
  raw: string,
  validate: ValidateFunction,
  parameters: unknown,
  aliases?: FoldedAliases,
): ArgumentsCheck {
  let parsed: unknown;
  try {
    parsed =
      raw.trim() === ''
        ? {}
        : sjson.parse(raw, undefined, { protoAction: 'error', constructorAction: 'error' });
  } catch (err) {
    const poisoned = err instanceof SyntaxError && /prototype/i.test(err.message);
    return {
      ok: false,
      error: {
        kind: 'invalid_arguments',
        message: poisoned
          ? `arguments of ${toolName} contain a forbidden key (__proto__ or constructor.prototype)`
          : `arguments of ${toolName} are not valid JSON: ${(err as Error).message}`,
        constraint: poisoned ? 'forbidden_key' : 'json',
        expected: 'a JSON object matching the tool schema',
        example: exampleFor(parameters),
        retryable: false,
      },
    };
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    return {
      ok: false,
      error: {
        kind: 'invalid_arguments',
        message: `arguments of ${toolName} must be a JSON object`,
        constraint: 'type',
        expected: 'object',
        example: exampleFor(parameters),
        retryable: false,
      },
    };
  }
  const aliased = applyAliases(parsed as Record<string, unknown>, aliases);
  // A copy of what validation sees: ajv's defaults are filled into the object it checks.
  const normalized = aliased.changed ? { ...aliased.args } : undefined;
  if (!validate(aliased.args)) {
    return { ok: false, error: describeSchemaError(toolName, validate.errors ?? [], parameters) };
  }
  return { ok: true, args: aliased.args, ...(normalized ? { normalized } : {}) };
}

function describeSchemaError(toolName: string, errors: ErrorObject[], parameters: unknown): ToolErrorInfo {
  // ajv reports the deepest, most specific failures last for anyOf; the first is the one to act on.
  const first = errors[0];
  if (first === undefined) {
    return {
      kind: 'invalid_arguments',
      message: `arguments of ${toolName} do not match its schema`,
      retryable: false,
    };
  }
  const problem = valueProblem(first, parameters);
  const where = problem.field === '/' ? 'the arguments' : `field ${problem.field}`;
  return {
    kind: 'invalid_arguments',
    message: `invalid arguments for ${toolName}: ${where} ${first.message ?? 'is invalid'}`,
    field: problem.field,
    constraint: problem.constraint,
    expected: problem.expected,
    example: problem.example,
    retryable: false,
  };
}

/** One way a JSON value fails its schema, as the model is told: where, which keyword, what was expected. */
export interface ValueProblem {
  /** JSON pointer of the field (`/` for the value itself). */
  field: string;
  /** The schema keyword that failed (`required`, `type`, `enum`, …). */
  constraint: string;
  expected: string;
  /** A valid-looking value for the field, when the schema suggests one. */
  example?: unknown;
  /** ajv's message for it. */
  message: string;
}

/** An ajv error of a value against `schema`, in the words the model reads (see {@link ValueProblem}). */
export function valueProblem(e: ErrorObject, schema: unknown): ValueProblem {
  let field = e.instancePath || '/';
  let expected: string;
  let subSchema = e.parentSchema ?? schemaAt(schema, e.instancePath);
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'required':
      field = `${e.instancePath}/${String(p.missingProperty)}`;
      subSchema = schemaAt(schema, field);
      expected = `a value for the required field "${String(p.missingProperty)}"`;
      break;
    case 'additionalProperties':
      field = `${e.instancePath}/${String(p.additionalProperty)}`;
      // ajv leaves `parentSchema` out unless verbose: the object's schema is looked up instead.
      expected = `only the known fields: ${Object.keys(propertiesOf(subSchema)).join(', ')}`;
      break;
    case 'type':
      expected = `${String(p.type)}`;
      break;
    case 'enum':
      expected = `one of ${JSON.stringify(p.allowedValues)}`;
      break;
    case 'pattern':
      expected = `a string matching ${String(p.pattern)}`;
      break;
    case 'format':
      expected = `a string in ${String(p.format)} format`;
      break;
    default:
      expected = e.message ?? e.keyword;
  }
  const example = exampleFor(subSchema);
  return {
    field,
    constraint: e.keyword,
    expected,
    ...(example === undefined ? {} : { example }),
    message: e.message ?? 'is invalid',
  };
}

function propertiesOf(schema: unknown): object {
  const properties = (schema as { properties?: unknown } | undefined)?.properties;
  return typeof properties === 'object' && properties !== null ? properties : {};
}

function schemaAt(schema: unknown, pointer: string): unknown {
  let node = schema as Record<string, unknown> | undefined;
  for (const part of pointer.split('/').filter(Boolean)) {
    const props = node?.properties as Record<string, unknown> | undefined;
    const items = node?.items as Record<string, unknown> | undefined;
    node = (props?.[part] ?? items) as Record<string, unknown> | undefined;
  }
  return node;
}

const FORMAT_EXAMPLES: Record<string, string> = {
  'date-time': '2026-01-31T09:00:00Z',
  date: '2026-01-31',
  time: '09:00:00Z',
  email: 'name@example.com',
  uri: 'https://example.com/path',
  uuid: '123e4567-e89b-12d3-a456-426614174000',
};

/** A valid-looking example value for a schema: its own `examples`/`default`/`enum` first, else by type. */
export function exampleFor(schema: unknown): unknown {
  if (typeof schema !== 'object' || schema === null) return undefined;
  const s = schema as Record<string, unknown>;
  if (Array.isArray(s.examples) && s.examples.length > 0) return s.examples[0];
  if (s.default !== undefined) return s.default;
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[0];
  if (s.const !== undefined) return s.const;
  if (typeof s.format === 'string' && FORMAT_EXAMPLES[s.format]) return FORMAT_EXAMPLES[s.format];
  switch (s.type) {
    case 'string':
      return 'text';
    case 'integer':
      return typeof s.minimum === 'number' ? s.minimum : 1;
    case 'number':
      return typeof s.minimum === 'number' ? s.minimum : 1.5;
    case 'boolean':
      return true;
    case 'array':
      return [];
    case 'object': {
      const props = (s.properties ?? {}) as Record<string, unknown>;
      const required = Array.isArray(s.required) ? (s.required as string[]) : Object.keys(props);
      const out: Record<string, unknown> = {};
      for (const key of required) out[key] = exampleFor(props[key]);
      return out;
    }
    default:
      return undefined;
  }
}
