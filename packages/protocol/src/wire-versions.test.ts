import { describe, expect, it } from 'vitest';
import { readToolCallJob, type ToolCallJob } from './tool-call.js';
import { upgradeRunJob } from './run-job.js';
import { UnsupportedVersionError, WIRE_VERSION } from './version.js';

const job: ToolCallJob = {
  v: WIRE_VERSION,
  run_id: 'run_1',
  trace_id: 'trace_1',
  agent: 'helper',
  tool_call_id: 'call_1',
  name: 'lookup',
  arguments: '{}',
  deadline: 5,
  reply_to: 'ar:replies:d1',
  enqueued_at: 4,
};

const v1Job = {
  runId: 'run_1',
  traceId: 'trace_1',
  agent: 'helper',
  toolCallId: 'call_1',
  name: 'lookup',
  arguments: '{}',
  deadline: 5,
  replyTo: 'ar:replies:d1',
  enqueuedAt: 4,
};

describe('tool-call jobs across wire versions', () => {
  it('reads a job of this release as it is', () => {
    expect(readToolCallJob(job)).toEqual(job);
  });

  it("reads a version-1 job, with or without its v, under this release's names and version", () => {
    expect(readToolCallJob(v1Job)).toEqual(job);
    expect(readToolCallJob({ ...v1Job, v: 1 })).toEqual(job);
  });

  it('refuses a job of a version this release does not read, naming the version', () => {
    expect(() => readToolCallJob({ ...job, v: 3 })).toThrow(UnsupportedVersionError);
    expect(() => readToolCallJob({ ...job, v: '2' })).toThrow('tool-call job has wire version "2"');
  });

  it('gives nothing to read from data that is not an object', () => {
    expect(readToolCallJob(null)).toEqual({});
    expect(readToolCallJob('job')).toEqual({});
  });
});

describe('run jobs across wire versions', () => {
  it('renames the fields of a version-1 run job and gives it this version', () => {
    expect(upgradeRunJob({ runId: 'r', agent: 'a', input: 'i', sessionId: 's', traceId: 't' })).toEqual({
      v: WIRE_VERSION,
      run_id: 'r',
      agent: 'a',
      input: 'i',
      session_id: 's',
      trace_id: 't',
    });
  });

  it('leaves a run job of this or an unknown version as it is, for the schema to judge', () => {
    const current = { v: WIRE_VERSION, run_id: 'r', agent: 'a', input: 'i' };
    expect(upgradeRunJob(current)).toBe(current);
    const unknown = { v: 9, runId: 'r' };
    expect(upgradeRunJob(unknown)).toBe(unknown);
  });

  it('keeps both names when a version-1 job carries both, so the schema names the stray one', () => {
    expect(upgradeRunJob({ runId: 'r', run_id: 'r2', agent: 'a', input: 'i' })).toEqual({
      v: WIRE_VERSION,
      runId: 'r',
      run_id: 'r2',
      agent: 'a',
      input: 'i',
    });
  });
});
