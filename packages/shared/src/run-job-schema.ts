import AjvModule from 'ajv';
import { RUN_ID_PATTERN } from './run-wire.js';

const Ajv = AjvModule.default;

/** JSON Schema of `RunJobData`, as the README documents it for services in other languages. */
export const RUN_JOB_SCHEMA = {
  type: 'object',
  required: ['v', 'runId', 'agent', 'input'],
  additionalProperties: false,
  properties: {
    v: { const: 1 },
    runId: { type: 'string', pattern: RUN_ID_PATTERN.source },
    agent: { type: 'string', minLength: 1 },
    input: { type: 'string', minLength: 1, pattern: '\\S' },
    sessionId: { type: 'string', minLength: 1 },
    model: { type: 'string', minLength: 1 },
    traceId: { type: 'string', minLength: 1 },
    metadata: { type: 'object', additionalProperties: { type: 'string' } },
  },
} as const;

const validateRunJob = new Ajv({ allErrors: true, strict: true }).compile(RUN_JOB_SCHEMA);

/** Every problem of a job's data, each naming the field; empty when the data is a valid run job. */
export function runJobProblems(data: unknown): string[] {
  if (validateRunJob(data)) return [];
  return (validateRunJob.errors ?? []).map((e) => {
    const field = e.instancePath.slice(1).replace(/\//g, '.') || 'job data';
    const extra =
      e.keyword === 'additionalProperties'
        ? ` "${String((e.params as { additionalProperty: string }).additionalProperty)}"`
        : '';
    return `${field} ${e.message ?? 'is invalid'}${extra}`;
  });
}
