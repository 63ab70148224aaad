import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  checkBudgets,
  checkRepeat,
  checkTokenBudget,
  repeatNudge,
  turnSignature,
  type GuardLimits,
} from './guards.js';
import { createRunState, type RunState } from './run-state.js';

const LIMITS: GuardLimits = {
  maxIterations: 5,
  repeatLimit: 3,
  maxFailedRounds: 3,
  maxArgumentFixRounds: 4,
  tokenBudget: 1_000,
};
const NOW = 1_700_000_000_000;

function state(overrides: Partial<RunState> = {}): RunState {
  return {
    ...createRunState({ runId: 'run_g', agent: 'a', input: 'hi', deadlineMs: 60_000, now: NOW }),
    ...overrides,
  };
}

const usage = (total: number) => ({ prompt_tokens: total, completion_tokens: 0, total_tokens: total });

describe('checkBudgets', () => {
  it('lets a run below every limit go on', () => {
    expect(checkBudgets(state({ iterations: 4 }), LIMITS, NOW)).toBeUndefined();
  });

  it('stops at max iterations as not_converged with advice to split the task', () => {
    expect(checkBudgets(state({ iterations: 5 }), LIMITS, NOW)).toEqual({
      guard: 'max_iterations',
      status: 'not_converged',
      report:
        'stopped after 5 model turns without a final answer (limit 5); ' +
        'split the task into smaller requests or raise max_iterations for this agent',
    });
  });

  it('stops at the deadline, and not a millisecond before it', () => {
    expect(checkBudgets(state(), LIMITS, NOW + 59_999)).toBeUndefined();
    expect(checkBudgets(state(), LIMITS, NOW + 60_000)).toMatchObject({
      guard: 'deadline',
      status: 'not_converged',
    });
  });

  it('names max_iterations before the token budget and the deadline when all are reached', () => {
    const over = state({ iterations: 9, usage: usage(5_000) });
    expect(checkBudgets(over, LIMITS, NOW + 120_000)?.guard).toBe('max_iterations');
    expect(checkBudgets({ ...over, iterations: 0 }, LIMITS, NOW + 120_000)?.guard).toBe('token_budget');
  });
});

describe('checkTokenBudget', () => {
  it('stops a run that has used exactly its budget, reporting tokens used and budget', () => {
    expect(checkTokenBudget(state({ usage: usage(999) }), LIMITS)).toBeUndefined();
    expect(checkTokenBudget(state({ usage: usage(1_000) }), LIMITS)).toEqual({
      guard: 'token_budget',
      status: 'not_converged',
      report: 'used 1000 tokens, over the run budget of 1000',
    });
  });
});

describe('turnSignature', () => {
  it('is the same for calls in another order and arguments with keys in another order', () => {
    const a = turnSignature([
      { name: 'weather', arguments: '{"city":"Paris","days":{"from":1,"to":2}}' },
      { name: 'orders', arguments: '{"id":7}' },
    ]);
    const b = turnSignature([
      { name: 'orders', arguments: ' {"id": 7} ' },
      { name: 'weather', arguments: '{"days":{"to":2,"from":1},"city":"Paris"}' },
    ]);
    expect(a).toBe(b);
  });

  it('tells apart calls whose arguments differ in a value or in array order', () => {
    const sig = (args: string) => turnSignature([{ name: 'weather', arguments: args }]);
    expect(sig('{"city":"Paris"}')).not.toBe(sig('{"city":"Lyon"}'));
    expect(sig('{"ids":[1,2]}')).not.toBe(sig('{"ids":[2,1]}'));
  });

  it('compares arguments that are not JSON as trimmed text', () => {
    expect(turnSignature([{ name: 't', arguments: ' {broken ' }])).toBe('t({broken)');
  });

  it('does not depend on the order of calls or of object keys (property)', () => {
    const call = fc.record({
      name: fc.constantFrom('a', 'b', 'c'),
      args: fc.dictionary(fc.string({ maxLength: 4 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }),
    });
    fc.assert(
      fc.property(fc.array(call, { maxLength: 4 }), fc.func(fc.boolean()), (calls, flip) => {
        const asGiven = calls.map((c) => ({ name: c.name, arguments: JSON.stringify(c.args) }));
        const reordered = [...calls].reverse().map((c) => ({
          name: c.name,
          arguments: JSON.stringify(Object.fromEntries(Object.entries(c.args).sort(() => (flip() ? 1 : -1)))),
        }));
        expect(turnSignature(reordered)).toBe(turnSignature(asGiven));
      }),
    );
  });
});

describe('checkRepeat', () => {
  it('nudges on the third identical turn and stops the run on the fourth', () => {
    const s = state();
    expect(checkRepeat(s, 'x()', LIMITS)).toBe('ok');
    expect(checkRepeat(s, 'x()', LIMITS)).toBe('ok');
    expect(checkRepeat(s, 'x()', LIMITS)).toBe('nudge');
    expect(checkRepeat(s, 'x()', LIMITS)).toEqual({
      guard: 'repeat',
      status: 'not_converged',
      report: 'the model repeated the same call 4 turns in a row and ignored a nudge: x()',
    });
  });

  it('starts counting again, and may nudge again, after a different turn', () => {
    const s = state();
    for (let i = 0; i < 3; i += 1) checkRepeat(s, 'x()', LIMITS);
    expect(checkRepeat(s, 'y()', LIMITS)).toBe('ok');
    expect(s.guard).toMatchObject({ lastSignature: 'y()', repeatCount: 1, nudged: false });
    expect(checkRepeat(s, 'x()', LIMITS)).toBe('ok');
    expect(checkRepeat(s, 'x()', LIMITS)).toBe('ok');
    expect(checkRepeat(s, 'x()', LIMITS)).toBe('nudge');
  });

  it('never stops a run that has not been nudged first (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom('a()', 'b()'), { maxLength: 30 }),
        fc.integer({ min: 1, max: 5 }),
        (turns, limit) => {
          const s = state();
          let nudges = 0;
          for (const sig of turns) {
            const verdict = checkRepeat(s, sig, { ...LIMITS, repeatLimit: limit });
            if (verdict === 'nudge') nudges += 1;
            else if (verdict !== 'ok') {
              expect(nudges).toBeGreaterThan(0);
              expect(s.guard.repeatCount).toBe(Math.max(limit, 1) + 1);
              return;
            }
          }
        },
      ),
    );
  });
});

describe('repeatNudge', () => {
  it('tells the model what it repeated, how often, and that repeating again stops the run', () => {
    const text = repeatNudge('weather({"city":"Paris"})', 3);
    expect(text).toContain('the same tool call 3 turns in a row (weather({"city":"Paris"}))');
    expect(text).toMatch(/Repeating it again stops the run\.$/);
  });
});
