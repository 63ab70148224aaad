import AjvModule from 'ajv';
import type { FastifySchemaCompiler } from 'fastify';

const Ajv = AjvModule.default;

/**
 * Validators of request parts. Bodies are checked strictly — no type coercion and no silently dropped
 * properties, so `{"input": 123}` or an unknown field is a VALIDATION_FAILED, not a run. Query strings,
 * params and headers are text, so there (and only there) `"10"` may become `10`.
 */
export function createValidatorCompiler(): FastifySchemaCompiler<unknown> {
  // `verbose` keeps each failure's schema, so a pattern failure can say what the pattern means.
  const common = {
    allErrors: true,
    useDefaults: true,
    removeAdditional: false,
    strict: true,
    verbose: true,
  } as const;
  const body = new Ajv({ ...common, coerceTypes: false });
  const text = new Ajv({ ...common, coerceTypes: true });
  return ({ schema, httpPart }) => {
    const ajv = httpPart === 'body' ? body : text;
    return ajv.compile(schema as object);
  };
}
