import AjvModule, { type ErrorObject } from 'ajv';
import addFormatsModule from 'ajv-formats';

// ajv and ajv-formats are CommonJS with a default export; under NodeNext the class sits on `.default`.
const Ajv = AjvModule.default;
const addFormats = addFormatsModule.default;
export type Ajv = InstanceType<typeof Ajv>;

/** The ajv every schema of an eval is compiled with: all errors, formats, no strict-mode refusals. */
export function createAjv(): Ajv {
  const ajv = new Ajv({ allErrors: true, strict: false, logger: false });
  addFormats(ajv);
  return ajv;
}

/** A schema compile problem, as a sentence; undefined when the schema compiles. */
export function schemaProblem(ajv: Ajv, schema: unknown): string | undefined {
  try {
    ajv.compile(schema as object);
    return undefined;
  } catch (err) {
    return `not a usable JSON Schema: ${(err as Error).message}`;
  }
}

/** ajv's errors as `path: message` lines, the most precise of each path only (oneOf repeats itself). */
export function errorLines(
  errors: readonly ErrorObject[] | null | undefined,
): { path: string; message: string }[] {
  const seen = new Set<string>();
  const out: { path: string; message: string }[] = [];
  for (const e of errors ?? []) {
    if (e.keyword === 'oneOf' || e.keyword === 'anyOf') continue;
    const extra =
      e.keyword === 'additionalProperties'
        ? ` "${(e.params as { additionalProperty: string }).additionalProperty}"`
        : e.keyword === 'enum'
          ? ` (${(e.params as { allowedValues: unknown[] }).allowedValues.join(', ')})`
          : '';
    const line = `${e.instancePath}\u0000${e.message ?? e.keyword}${extra}`;
    if (seen.has(line)) continue;
    seen.add(line);
    out.push({ path: e.instancePath, message: `${e.message ?? e.keyword}${extra}` });
  }
  return out;
}
