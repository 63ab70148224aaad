import { getEventListeners } from 'node:events';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { modelSignals, type RunContext } from './run-context.js';
import { createRunState } from './run-state.js';

/** The part of a run's context `modelSignals` reads: its deadline and the run's own stop signals. */
function runWith(deadlineMs: number, stops: { signal?: AbortSignal; release?: AbortSignal }): RunContext {
  const state = createRunState({ runId: 'run_s', agent: 'a', input: 'hi', deadlineMs });
  return { state, deps: stops } as unknown as RunContext;
}

describe('modelSignals', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("aborts the call at the run's deadline, and says through `deadline` that the deadline did it", () => {
    const m = modelSignals(runWith(1_000, {}));
    vi.advanceTimersByTime(999);
    expect(m.signal.aborted).toBe(false);
    vi.advanceTimersByTime(1);
    expect(m.signal.aborted).toBe(true);
    expect(m.deadline.aborted).toBe(true);
    expect((m.signal.reason as DOMException).name).toBe('TimeoutError');
    m.close();
  });

  it('waits for a deadline further off than a Node timer can wait (about 24.8 days), and aborts at it', () => {
    const days30 = 30 * 24 * 3600 * 1000;
    const m = modelSignals(runWith(days30, {}));
    vi.advanceTimersByTime(1_000);
    expect(m.signal.aborted).toBe(false);
    vi.advanceTimersByTime(days30 - 1_001);
    expect(m.signal.aborted).toBe(false);
    vi.advanceTimersByTime(1);
    expect(m.deadline.aborted).toBe(true);
    m.close();
  });

  it('aborts the call with the reason of a cancel or a release of the run, the deadline untouched', () => {
    const cancel = new AbortController();
    const release = new AbortController();
    const m = modelSignals(runWith(60_000, { signal: cancel.signal, release: release.signal }));
    release.abort(new Error('shutting down'));
    expect(m.signal.aborted).toBe(true);
    expect((m.signal.reason as Error).message).toBe('shutting down');
    expect(m.deadline.aborted).toBe(false);
    m.close();
  });

  it('starts aborted when the run was cancelled before the call', () => {
    const cancel = new AbortController();
    cancel.abort(new Error('cancelled'));
    const m = modelSignals(runWith(60_000, { signal: cancel.signal }));
    expect(m.signal.aborted).toBe(true);
    expect((m.signal.reason as Error).message).toBe('cancelled');
    m.close();
  });

  it("lets go of its timer and of its listeners on the run's signals once closed", () => {
    const cancel = new AbortController();
    const release = new AbortController();
    const m = modelSignals(runWith(60_000, { signal: cancel.signal, release: release.signal }));
    expect(vi.getTimerCount()).toBe(1);
    expect(getEventListeners(cancel.signal, 'abort')).toHaveLength(1);
    m.close();
    expect(vi.getTimerCount()).toBe(0);
    expect(getEventListeners(cancel.signal, 'abort')).toHaveLength(0);
    expect(getEventListeners(release.signal, 'abort')).toHaveLength(0);
    cancel.abort();
    expect(m.signal.aborted).toBe(false);
  });
});
