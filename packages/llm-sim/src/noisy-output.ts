import type { ChatRequest } from './request-validation.js';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
/** How deep an output schema is followed; deeper parts get an empty value of their type. */
const MAX_DEPTH = 6;

/** The value a field named `key` has in the results, latest first (`aqi` from `{ city, aqi }`). */
function fromResults(key: string, results: readonly unknown[]): unknown {
  for (const r of [...results].reverse()) {
    if (isObj(r) && key in r) return r[key];
    if (isObj(r) && isObj(r.content) && key in r.content) return r.content[key];
  }
  return undefined;
}

function fits(value: unknown, schema: Obj): boolean {
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  if (Array.isArray(schema.enum)) return schema.enum.includes(value);
  if (type === 'integer') return Number.isInteger(value);
  if (type === 'number') return typeof value === 'number';
  if (type === 'string') return typeof value === 'string';
  if (type === 'boolean') return typeof value === 'boolean';
  return value !== undefined;
}

/** A value for `schema`: what the results hold under `key` when it fits, else a plain value of its type. */
function valueFor(
  schema: unknown,
  key: string,
  results: readonly unknown[],
  summary: string,
  depth: number,
): unknown {
  const s = isObj(schema) ? schema : {};
  const found = fromResults(key, results);
  if (found !== undefined && fits(found, s)) return found;
  if (s.const !== undefined) return s.const;
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[0];
  if (s.default !== undefined) return s.default;
  const type = Array.isArray(s.type) ? s.type[0] : s.type;
  switch (type) {
    case 'object': {
      const out: Obj = {};
      const props = isObj(s.properties) ? s.properties : {};
      if (depth < MAX_DEPTH)
        for (const [k, v] of Object.entries(props)) out[k] = valueFor(v, k, results, summary, depth + 1);
      return out;
    }
    case 'array':
      return [];
    case 'integer':
    case 'number':
      return typeof s.minimum === 'number' ? s.minimum : 0;
    case 'boolean':
      return true;
    case 'null':
      return null;
    default:
      return summary;
  }
}

/**
 * The final answer as the JSON a request's `response_format` asks for: a `json_schema` answered with an
 * object of its shape, every field filled from the results where one holds it; `json_object` with
 * `{ "answer": … }`. Undefined when the request asks for text.
 */
export function structuredContent(
  request: ChatRequest,
  results: readonly unknown[],
  summary: string,
): string | undefined {
  const format = request.response_format;
  if (format?.type === 'json_object') return JSON.stringify({ answer: summary });
  if (format?.type !== 'json_schema') return undefined;
  return JSON.stringify(valueFor(format.json_schema?.schema ?? { type: 'object' }, '', results, summary, 0));
}
