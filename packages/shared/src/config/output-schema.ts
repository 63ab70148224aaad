import AjvModule, { type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { valueProblem, type ValueProblem } from '../tools/arguments.js';
import { MAX_OUTPUT_PROBLEMS, MAX_OUTPUT_SCHEMA_CHARS } from '../constants.js';

const Ajv = AjvModule.default;
const addFormats = addFormatsModule.default;

/** A run's declared output: a JSON Schema its final answer must match. */
export type OutputSchema = Record<string, unknown>;

export type { ValueProblem as OutputProblem };

/** What the model is asked for: OpenAI's `response_format` of type `json_schema`. */
export interface JsonSchemaResponseFormat {
  type: 'json_schema';
  json_schema: { name: string; schema: OutputSchema; strict: boolean };
}

/** A final answer checked against the output schema. */
export type OutputCheck =
  { ok: true; output: unknown; json: string } | { ok: false; problems: ValueProblem[] };

function newAjv() {
  // strict: a keyword ajv does not know is refused, so a misspelt constraint cannot pass silently.
  const ajv = new Ajv({
    allErrors: true,
    strict: true,
    strictTypes: false,
    strictTuples: false,
    strictRequired: false,
    verbose: true,
    logger: false,
  });
  addFormats(ajv);
  return ajv;
}

/** Compiled validators by schema text: a run checks each answer of every turn against the same schema. */
const compiled = new Map<string, ValidateFunction>();
const COMPILED_KEPT = 256;

/**
 * The problems of a declared output schema, each in words (empty when it is usable): not an object, too
 * large, or refused by ajv (a keyword it does not know, a malformed keyword, a `$ref` it cannot resolve).
 */
export function outputSchemaProblems(schema: unknown): string[] {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema))
    return ['must be a JSON Schema object'];
  const text = JSON.stringify(schema);
  if (text.length > MAX_OUTPUT_SCHEMA_CHARS)
    return [`is ${text.length} characters as JSON; at most ${MAX_OUTPUT_SCHEMA_CHARS} are accepted`];
  try {
    compile(schema as OutputSchema);
    return [];
  } catch (err) {
    return [`is not a usable JSON Schema: ${(err as Error).message}`];
  }
}

function compile(schema: OutputSchema): ValidateFunction {
  const key = JSON.stringify(schema);
  const known = compiled.get(key);
  if (known) return known;
  // One ajv per schema: two schemas with the same `$id` must not clash.
  const validate = newAjv().compile(schema);
  if (compiled.size >= COMPILED_KEPT) compiled.clear();
  compiled.set(key, validate);
  return validate;
}

/** Keywords OpenAI's strict structured outputs accept; a schema using any other is asked for non-strict. */
const STRICT_KEYWORDS = new Set([
  'type',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'enum',
  'const',
  'anyOf',
  'description',
  'title',
  '$defs',
  'definitions',
  '$ref',
  'pattern',
  'format',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'minItems',
  'maxItems',
]);

/**
 * Whether a schema fits OpenAI's strict subset: an object at the root, every object closed
 * (`additionalProperties: false`) with every property required, and only the keywords strict mode knows.
 */
export function fitsStrictMode(schema: OutputSchema): boolean {
  if (schema.type !== 'object') return false;
  const fits = (node: unknown): boolean => {
    if (typeof node !== 'object' || node === null || Array.isArray(node)) return false;
    const s = node as Record<string, unknown>;
    if (!Object.keys(s).every((k) => STRICT_KEYWORDS.has(k))) return false;
    if (s.type === 'object' || s.properties !== undefined) {
      const props = (s.properties ?? {}) as Record<string, unknown>;
      const required = Array.isArray(s.required) ? s.required : [];
      if (s.additionalProperties !== false) return false;
      if (!Object.keys(props).every((k) => required.includes(k))) return false;
      if (!Object.values(props).every(fits)) return false;
    }
    if (s.items !== undefined && !fits(s.items)) return false;
    if (Array.isArray(s.anyOf) && !s.anyOf.every(fits)) return false;
    for (const defs of [s.$defs, s.definitions])
      if (defs !== undefined && !Object.values(defs as Record<string, unknown>).every(fits)) return false;
    return true;
  };
  return fits(schema);
}

/** The `response_format` that asks a model for `schema`: strict where the schema fits strict mode. */
export function responseFormatFor(schema: OutputSchema, name = 'output'): JsonSchemaResponseFormat {
  const strict = fitsStrictMode(schema);
  return { type: 'json_schema', json_schema: { name, schema, strict } };
}

const FENCED = /^```(?:json|JSON)?[ \t]*\r?\n([\s\S]*?)\r?\n?```$/;

/** The JSON text of an answer: the answer itself, or the inside of a fenced ```json block around it. */
export function answerJson(answer: string): string {
  const text = answer.trim();
  return FENCED.exec(text)?.[1]?.trim() ?? text;
}

/**
 * Parses a final answer (tolerating a fenced ```json block) and validates it against `schema`; the
 * problems (at most `MAX_OUTPUT_PROBLEMS`) say where, which constraint, and what was expected.
 */
export function checkOutput(answer: string, schema: OutputSchema): OutputCheck {
  const json = answerJson(answer);
  let output: unknown;
  try {
    output = JSON.parse(json);
  } catch (err) {
    return {
      ok: false,
      problems: [
        {
          field: '/',
          constraint: 'json',
          expected: 'one JSON value matching the output schema, and nothing else',
          message: `is not valid JSON: ${(err as Error).message}`,
        },
      ],
    };
  }
  const validate = compile(schema);
  if (validate(output)) return { ok: true, output, json };
  const problems = (validate.errors ?? []).slice(0, MAX_OUTPUT_PROBLEMS).map((e) => valueProblem(e, schema));
  return { ok: false, problems };
}

/**
 * Why a field path (`city`, `days.0.temp`) cannot be in a value `schema` describes, or undefined when it
 * can: each step must be a property the object declares (or any key, when it stays open), or an index of
 * an array. Schemas that combine others (`anyOf`, `$ref`, …) are taken as allowing any path below them.
 */
export function outputPathProblem(schema: OutputSchema, path: readonly string[]): string | undefined {
  let node: Record<string, unknown> = schema;
  for (const [i, step] of path.entries()) {
    const at = path.slice(0, i).join('.') || 'the output';
    if (['anyOf', 'oneOf', 'allOf', '$ref', 'if', 'not'].some((k) => k in node)) return undefined;
    const props = node.properties as Record<string, unknown> | undefined;
    if (node.type === 'array' || node.items !== undefined) {
      if (!/^\d+$/.test(step)) return `${at} is an array: "${step}" is not an index`;
      const items = node.items;
      if (typeof items !== 'object' || items === null) return undefined;
      node = items as Record<string, unknown>;
      continue;
    }
    if (node.type === 'object' || props !== undefined) {
      const next = props?.[step];
      if (next !== undefined && typeof next === 'object' && next !== null) {
        node = next as Record<string, unknown>;
        continue;
      }
      if (next !== undefined) return undefined;
      if (node.additionalProperties === false) {
        const known = Object.keys(props ?? {});
        return `${at} has no field "${step}" (its fields: ${known.join(', ') || 'none'})`;
      }
      return undefined;
    }
    if (typeof node.type === 'string') return `${at} is a ${node.type}: it has no field "${step}"`;
    return undefined;
  }
  return undefined;
}
