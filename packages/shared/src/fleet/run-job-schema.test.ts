import { describe, expect, it } from 'vitest';
import { runJob } from '@agent-reach/protocol';
import { runJobProblems } from './run-job-schema.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';

describe('runJobProblems', () => {
  it('accepts a run job built by runJob, with and without a trace parent', () => {
    const base = { run_id: 'run_1', agent: 'a', input: 'hi' };
    expect(runJobProblems(runJob(base))).toEqual([]);
    expect(
      runJobProblems(runJob({ ...base, trace_id: TRACE, trace_parent: `00-${TRACE}-${SPAN}-01` })),
    ).toEqual([]);
  });

  it('names each field that is wrong, and an unknown field by name', () => {
    const problems = runJobProblems({ v: 2, run_id: 'bad id!', agent: '', input: 'hi', colour: 'red' });
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^run_id /),
        expect.stringMatching(/^agent /),
        expect.stringContaining('"colour"'),
      ]),
    );
  });

  it('refuses a trace parent that is not a W3C traceparent, or an all-zero one', () => {
    const job = { v: 2, run_id: 'run_1', agent: 'a', input: 'hi' };
    expect(runJobProblems({ ...job, trace_parent: 'not-a-traceparent' })).toEqual([
      expect.stringMatching(/^trace_parent /),
    ]);
    expect(runJobProblems({ ...job, trace_parent: `00-${'0'.repeat(32)}-${SPAN}-01` })).toEqual([
      expect.stringMatching(/^trace_parent /),
    ]);
  });

  it('refuses a trace parent of another trace than the job names: a run has one trace', () => {
    const problems = runJobProblems(
      runJob({
        run_id: 'run_1',
        agent: 'a',
        input: 'hi',
        trace_id: 'f'.repeat(32),
        trace_parent: `00-${TRACE}-${SPAN}-01`,
      }),
    );
    expect(problems).toEqual([
      `trace_parent names trace ${TRACE}, but trace_id is ${'f'.repeat(32)}: a run has one trace`,
    ]);
  });
});
