import AjvModule from 'ajv';
import {
  RUN_JOB_SCHEMA,
  UnsupportedVersionError,
  WIRE_VERSION,
  type RunJobData,
} from '@agent-reach/protocol';

import { outputSchemaProblems } from '../config/output-schema.js';

const Ajv = AjvModule.default;

const validateRunJob = new Ajv({ allErrors: true, strict: true }).compile(RUN_JOB_SCHEMA);

/** Every problem of a job's data, each naming the field; empty when the data is a valid run job. */
export function runJobProblems(data: unknown): string[] {
  if (validateRunJob(data)) {
    const { trace_id: traceId, trace_parent: traceParent, output_schema: schema } = data as RunJobData;
    const parentTrace = traceParent?.split('-')[1];
    return [
      ...(parentTrace && traceId && parentTrace !== traceId
        ? [`trace_parent names trace ${parentTrace}, but trace_id is ${traceId}: a run has one trace`]
        : []),
      ...(schema === undefined ? [] : outputSchemaProblems(schema).map((p) => `output_schema ${p}`)),
    ];
  }
  const v = (data as { v?: unknown } | null)?.v;
  return (validateRunJob.errors ?? []).map((e) => {
    // A job of another release names its version, not a schema keyword (version-1 jobs were upgraded
    // by `upgradeRunJob` before they got here).
    if (e.instancePath === '/v' && v !== WIRE_VERSION)
      return new UnsupportedVersionError('run job', v).message;
    const field = e.instancePath.slice(1).replace(/\//g, '.') || 'job data';
    const extra =
      e.keyword === 'additionalProperties'
        ? ` "${String((e.params as { additionalProperty: string }).additionalProperty)}"`
        : '';
    return `${field} ${e.message ?? 'is invalid'}${extra}`;
  });
}
