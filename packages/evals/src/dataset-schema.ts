/**
 * The JSON Schema of a dataset (docs/evals.md): checked with ajv, every problem named by case and field.
 */

const stringOrStrings = {
  oneOf: [
    { type: 'string', minLength: 1 },
    { type: 'array', items: { type: 'string', minLength: 1 }, minItems: 1 },
  ],
} as const;

const toolNames = {
  type: 'array',
  items: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$' },
  minItems: 1,
} as const;

/** A matcher of one value: any of equals, regex, schema, min, max (all must hold); a scalar means equals. */
export const MATCHER_SCHEMA = {
  oneOf: [
    { type: ['string', 'number', 'boolean', 'null'] },
    {
      type: 'object',
      properties: {
        equals: {},
        regex: { type: 'string', minLength: 1 },
        schema: { type: 'object' },
        min: { type: 'number' },
        max: { type: 'number' },
      },
      additionalProperties: false,
      minProperties: 1,
    },
  ],
} as const;

const matchersByPath = {
  type: 'object',
  propertyNames: { pattern: '^(\\$|[^.]+(\\.[^.]+)*)$' },
  additionalProperties: MATCHER_SCHEMA,
  minProperties: 1,
} as const;

const JUDGE_SCHEMA = {
  type: 'object',
  required: ['agent', 'rubric'],
  properties: {
    agent: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$' },
    rubric: { type: 'string', minLength: 1 },
    model: { type: 'string', minLength: 1 },
    min_score: { type: 'number', minimum: 0, maximum: 1 },
  },
  additionalProperties: false,
} as const;

const EXPECT_SCHEMA = {
  type: 'object',
  properties: {
    tools_called: toolNames,
    tools_in_order: toolNames,
    tools_not_called: toolNames,
    arguments: {
      type: 'object',
      propertyNames: { pattern: '^[A-Za-z0-9_-]{1,64}$' },
      additionalProperties: matchersByPath,
    },
    status: { enum: ['succeeded', 'not_converged', 'failed', 'cancelled', 'awaiting_approval'] },
    reason: { type: 'string', minLength: 1 },
    output: {
      type: 'object',
      properties: { schema: { type: 'object' }, fields: matchersByPath },
      additionalProperties: false,
      minProperties: 1,
    },
    answer: {
      type: 'object',
      properties: { contains: stringOrStrings, regex: stringOrStrings, not_contains: stringOrStrings },
      additionalProperties: false,
      minProperties: 1,
    },
    max_steps: { type: 'integer', minimum: 0 },
    max_tokens: { type: 'integer', minimum: 0 },
    max_cost: { type: 'number', minimum: 0 },
    max_latency_ms: { type: 'number', minimum: 0 },
  },
  additionalProperties: false,
} as const;

export const CASE_SCHEMA = {
  type: 'object',
  required: ['id', 'input'],
  properties: {
    id: { type: 'string', pattern: '^[A-Za-z0-9_.:-]{1,128}$' },
    agent: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$' },
    input: { type: 'string', minLength: 1, pattern: '\\S' },
    model: { type: 'string', minLength: 1, maxLength: 200 },
    history: { type: 'array', items: { type: 'string', minLength: 1, pattern: '\\S' } },
    metadata: {
      type: 'object',
      propertyNames: { pattern: '^[A-Za-z0-9_.:-]{1,64}$', not: { pattern: '^eval(_variant|_case)?$' } },
      additionalProperties: { type: 'string', maxLength: 1000 },
      // A run takes 50 metadata entries; the runner adds eval, eval_variant and eval_case.
      maxProperties: 47,
    },
    grants: toolNames,
    output_schema: { type: 'object' },
    expect: EXPECT_SCHEMA,
    judge: JUDGE_SCHEMA,
  },
  additionalProperties: false,
} as const;

export const DATASET_SCHEMA = {
  type: 'object',
  required: ['cases'],
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 200 },
    description: { type: 'string' },
    agent: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$' },
    judge: JUDGE_SCHEMA,
    cases: { type: 'array', items: CASE_SCHEMA, minItems: 1 },
  },
  additionalProperties: false,
} as const;
