import { outputSchemaProblems } from '@agent-reach/shared';
import { badParam, unsupportedParam } from './openai-error.js';

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The run's output schema a `response_format` (chat completions) or `text.format` (Responses API) asks
 * for: `text` asks for none; `json_schema` asks for its `schema` (in chat completions under `json_schema`,
 * in the Responses API on the format itself), which must be a JSON Schema the scheduler can use (400
 * naming the field otherwise); the answer's content is then the JSON text. `json_object` is refused: a
 * run's output is checked against a schema.
 */
export function outputSchemaOfFormat(
  value: unknown,
  param: string,
  nested: boolean,
): Record<string, unknown> | undefined {
  if (value === undefined || value === null) return undefined;
  const type = isObject(value) ? value.type : undefined;
  if (type === 'text') return undefined;
  if (type !== 'json_schema')
    throw unsupportedParam(
      param,
      `${JSON.stringify(type)} is not supported: ask for "text" or "json_schema" (with a schema)`,
    );
  const holder = nested ? (value as { json_schema?: unknown }).json_schema : value;
  const at = nested ? `${param}.json_schema` : param;
  if (!isObject(holder)) throw badParam(at, `${at} must be an object with name and schema`);
  if (holder.name !== undefined && typeof holder.name !== 'string')
    throw badParam(`${at}.name`, `${at}.name must be a string`);
  const schema = holder.schema;
  const problems = outputSchemaProblems(schema);
  if (problems.length > 0) throw badParam(`${at}.schema`, `${at}.schema ${problems.join('; ')}`);
  return schema as Record<string, unknown>;
}
