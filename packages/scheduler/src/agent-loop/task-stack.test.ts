import { describe, expect, it } from 'vitest';
import { createRunState, type RunState, type TaskStep } from './run-state.js';
import { finishOpenSteps, holdOpen, keepReachable, renderTaskStack, tickOff } from './task-stack.js';

function withPlan(steps: TaskStep[]): RunState {
  const s = createRunState({ runId: 'run_t', agent: 'a', input: 'trip', deadlineMs: 60_000 });
  s.plan.steps = steps.map((step) => ({ ...step }));
  return s;
}

const PLAN: TaskStep[] = [
  { title: 'look up the weather', tool: 'weather', done: false },
  { title: 'think about the days', done: false },
  { title: 'save the plan', tool: 'write_file', done: false },
  { title: 'tell the user', done: false },
];

describe('keepReachable', () => {
  it('drops the steps naming a tool the agent cannot reach and keeps steps naming none', () => {
    const { kept, dropped } = keepReachable(PLAN, new Set(['weather']));
    expect(kept.map((s) => s.title)).toEqual([
      'look up the weather',
      'think about the days',
      'tell the user',
    ]);
    expect(dropped).toEqual([{ title: 'save the plan', tool: 'write_file' }]);
  });
});

describe('tickOff', () => {
  it('ticks the first open step naming the tool, even when it is not the current step', () => {
    const s = withPlan(PLAN);
    expect(tickOff(s, 'write_file')?.title).toBe('save the plan');
    expect(s.plan.steps.map((x) => x.done)).toEqual([false, false, true, false]);
  });

  it('ticks the current step when it names no tool', () => {
    const s = withPlan(PLAN);
    tickOff(s, 'weather');
    expect(tickOff(s, 'search')?.title).toBe('think about the days');
  });

  it('never ticks a current step that names another tool', () => {
    const s = withPlan(PLAN);
    expect(tickOff(s, 'search')).toBeUndefined();
    expect(s.plan.steps.every((x) => !x.done)).toBe(true);
  });
});

describe('finishOpenSteps', () => {
  it('completes the open steps naming no tool and leaves uncalled tools open', () => {
    const s = withPlan(PLAN);
    expect(finishOpenSteps(s).map((x) => x.title)).toEqual(['think about the days', 'tell the user']);
    expect(s.plan.steps.filter((x) => !x.done).map((x) => x.tool)).toEqual(['weather', 'write_file']);
  });
});

describe('renderTaskStack', () => {
  it('numbers the steps, checks the done ones, names tools and marks the current one', () => {
    const s = withPlan(PLAN);
    tickOff(s, 'weather');
    expect(renderTaskStack(s.plan.steps)).toBe(
      [
        '1. [x] look up the weather (tool: weather)',
        '2. [ ] think about the days  <- current',
        '3. [ ] save the plan (tool: write_file)',
        '4. [ ] tell the user',
      ].join('\n'),
    );
  });

  it('marks no step current once all are done', () => {
    expect(renderTaskStack([{ title: 'only', done: true }])).toBe('1. [x] only');
  });
});

describe('holdOpen', () => {
  it('keeps a step whose call failed open when a later call of another tool succeeds', () => {
    const s = withPlan([
      { title: 'find the order', done: false },
      { title: 'think it over', done: false },
    ]);
    holdOpen(s, 'query_order_status');
    expect(tickOff(s, 'query_weather')).toBeUndefined();
    expect(finishOpenSteps(s)).toEqual([{ title: 'think it over', done: true }]);
    expect(s.plan.steps[0]).toEqual({ title: 'find the order', tool: 'query_order_status', done: false });
    expect(tickOff(s, 'query_order_status')?.title).toBe('find the order');
  });
});
