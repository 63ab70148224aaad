import { describe, expect, it } from 'vitest';
import { percentile, toolStats } from './ui-overview.js';

const step = (tool: string, ok: boolean, id: string, extra: object = {}) => ({
  turn: 1,
  tool_call_id: id,
  tool,
  arguments: '{}',
  ok,
  duration_ms: 10,
  attempts: 1,
  ...extra,
});

describe('inspector overview figures', () => {
  it('takes the nearest-rank percentile, and none of no values', () => {
    const values = [40, 10, 30, 20, 50, 60, 70, 80, 90, 100];
    expect(percentile(values, 50)).toBe(50);
    expect(percentile(values, 95)).toBe(100);
    expect(percentile([7], 95)).toBe(7);
    expect(percentile([], 50)).toBeUndefined();
  });

  it("counts a person's rejection apart from the tool's errors", () => {
    const state = {
      steps: [
        step('pay', false, 'a', { error_kind: 'forbidden', answered: 'local' }),
        step('pay', false, 'b', { error_kind: 'forbidden', answered: 'local' }),
        step('pay', true, 'c'),
        step('pay', false, 'd', { error_kind: 'timeout' }),
      ],
      // `a` was rejected by a person; `b` was refused by the platform (no decision).
      approvals: {
        a: { toolCallId: 'a', tool: 'pay', arguments: '{}', requestedAt: 1, decision: 'rejected' as const },
      },
    };
    const summary = {
      runId: 'r',
      traceId: 't',
      agent: 'x',
      status: 'succeeded' as const,
      createdAt: 1,
      updatedAt: 2,
      iterations: 1,
    };
    expect(toolStats([{ summary, state }])).toEqual({
      runs: 1,
      tools: [{ tool: 'pay', calls: 4, errors: 2, rejected: 1, error_kinds: { forbidden: 1, timeout: 1 } }],
    });
  });
});
