import { RUN_ID_PATTERN } from './ids.js';
import { WIRE_VERSION } from './version.js';

/**
 * Data of a job on the `agent-runs` queue: what any service (in any language, with its own BullMQ
 * client) adds to start a run. The job id must be the run id.
 */
export interface RunJobData {
  /** Wire version; 1. */
  v: typeof WIRE_VERSION;
  runId: string;
  agent: string;
  input: string;
  sessionId?: string;
  /** The model to use instead of the scheduler's default. */
  model?: string;
  traceId?: string;
  metadata?: Record<string, string>;
}

/** JSON Schema of `RunJobData`, as the README documents it for services in other languages. */
export const RUN_JOB_SCHEMA = {
  type: 'object',
  required: ['v', 'runId', 'agent', 'input'],
  additionalProperties: false,
  properties: {
    v: { const: WIRE_VERSION },
    runId: { type: 'string', pattern: RUN_ID_PATTERN.source },
    agent: { type: 'string', minLength: 1 },
    input: { type: 'string', minLength: 1, pattern: '\\S' },
    sessionId: { type: 'string', minLength: 1 },
    model: { type: 'string', minLength: 1 },
    traceId: { type: 'string', minLength: 1 },
    metadata: { type: 'object', additionalProperties: { type: 'string' } },
  },
} as const;

/** The data of a run's job, with its version and without the optional fields left unset. */
export function runJob(fields: Omit<RunJobData, 'v'>): RunJobData {
  return {
    v: WIRE_VERSION,
    runId: fields.runId,
    agent: fields.agent,
    input: fields.input,
    ...(fields.sessionId ? { sessionId: fields.sessionId } : {}),
    ...(fields.model ? { model: fields.model } : {}),
    ...(fields.traceId ? { traceId: fields.traceId } : {}),
    ...(fields.metadata ? { metadata: fields.metadata } : {}),
  };
}
