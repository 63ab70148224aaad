import { NAME_PATTERN, PROTOTYPE_KEYS } from './ids.js';

/**
 * A run's variant: overrides of its agent's configuration for that run only (an eval's variant, an
 * experiment), merged when the run starts and kept with the run. Nothing in force for any other run
 * changes. See docs/api.md#variants.
 */
export interface RunVariant {
  /** 1-64 of A-Z a-z 0-9 _ . - */
  name: string;
  overrides: VariantOverrides;
}

/** What a variant may change of one tool, for the model of its run and its run's calls only. */
export interface VariantToolOverride {
  /** The description the model reads instead of the tool's own. */
  description?: string;
  /** Argument aliases (argument → alias → value) the executor applies to this run's calls, beside the tool's. */
  aliases?: Record<string, Record<string, string>>;
  /** Example argument objects shown to the model in the tool's parameters (JSON Schema `examples`). */
  examples?: Array<Record<string, unknown>>;
}

/**
 * The fields of an agent a variant may replace (each as the agents file declares it and checked as it
 * checks it), the planning step, and per-tool overrides. A field left out keeps the agent's value.
 */
export interface VariantOverrides {
  instructions?: string;
  model?: string;
  fallback?: string[];
  max_iterations?: number;
  max_tokens?: number;
  max_wall_time_ms?: number;
  output_retries?: number;
  /** The agent's `loop` guard settings, merged field by field over the agent's. */
  loop?: {
    repeat_limit?: number;
    max_failed_rounds?: number;
    max_argument_fix_rounds?: number;
    max_output_tokens?: number;
    compaction_threshold_tokens?: number;
    task_reminders?: number;
  };
  /** Whether a multi-step request is planned first (the task stack). Default: the fleet's (true). */
  planning?: boolean;
  allowed_topic?: string[];
  topic_policy?: 'refuse' | 'warn';
  examples?: Record<string, string[]>;
  tools?: Record<string, VariantToolOverride>;
}

/** The agent fields a variant may replace, as the agents file names them. */
export const VARIANT_AGENT_FIELDS = [
  'instructions',
  'model',
  'fallback',
  'max_iterations',
  'max_tokens',
  'max_wall_time_ms',
  'output_retries',
  'loop',
  'allowed_topic',
  'topic_policy',
  'examples',
] as const;

/** Every key `overrides` may hold. */
export const VARIANT_OVERRIDE_KEYS = [...VARIANT_AGENT_FIELDS, 'planning', 'tools'] as const;

export const VARIANT_NAME_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;
/** Examples of one tool a variant may show. */
export const MAX_VARIANT_TOOL_EXAMPLES = 20;

/** A pattern that also refuses the prototype keys, so no tool or argument name can pollute an object. */
const safeKey = (p: RegExp) => `^(?!(?:${[...PROTOTYPE_KEYS].join('|')})$)${p.source.slice(1)}`;
const TOOL_KEY_PATTERN = safeKey(NAME_PATTERN);
const ARGUMENT_KEY_PATTERN = safeKey(/^[A-Za-z0-9_.-]{1,64}$/);
const stringMap = { type: 'object', additionalProperties: { type: 'string' } } as const;

/**
 * JSON Schema of {@link RunVariant}: its shape and the keys it may hold. Ranges and cross-field rules are
 * the agents file's own, checked on the agent merged with the overrides.
 */
export const RUN_VARIANT_SCHEMA = {
  type: 'object',
  required: ['name', 'overrides'],
  additionalProperties: false,
  properties: {
    name: { type: 'string', pattern: VARIANT_NAME_PATTERN.source },
    overrides: {
      type: 'object',
      additionalProperties: false,
      properties: {
        instructions: { type: 'string', maxLength: 100_000 },
        model: { type: 'string', minLength: 1, maxLength: 200 },
        fallback: { type: 'array', items: { type: 'string', minLength: 1, maxLength: 200 }, maxItems: 20 },
        max_iterations: { type: 'integer' },
        max_tokens: { type: 'integer' },
        max_wall_time_ms: { type: 'integer' },
        output_retries: { type: 'integer' },
        loop: { type: 'object' },
        planning: { type: 'boolean' },
        allowed_topic: { type: 'array', items: { type: 'string' }, maxItems: 200 },
        topic_policy: { enum: ['refuse', 'warn'] },
        examples: { type: 'object' },
        tools: {
          type: 'object',
          maxProperties: 200,
          propertyNames: { pattern: TOOL_KEY_PATTERN },
          additionalProperties: {
            type: 'object',
            additionalProperties: false,
            minProperties: 1,
            properties: {
              description: { type: 'string', minLength: 1, maxLength: 10_000 },
              aliases: {
                type: 'object',
                maxProperties: 50,
                propertyNames: { pattern: ARGUMENT_KEY_PATTERN },
                additionalProperties: { ...stringMap, maxProperties: 1000 },
              },
              examples: {
                type: 'array',
                minItems: 1,
                maxItems: MAX_VARIANT_TOOL_EXAMPLES,
                items: { type: 'object' },
              },
            },
          },
        },
      },
    },
  },
} as const;
