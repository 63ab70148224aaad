import { describe, expect, it } from 'vitest';
import { createRunState, type Approval, type RunState } from './run-state.js';
import {
  anyDecided,
  decideOverdue,
  joinDecisions,
  parkedUntil,
  pendingRequest,
  requestApprovals,
} from './approvals.js';
import type { RunEventBody } from './events.js';

const NOW = Date.now();

function parked(approvals: Record<string, Approval>, deadlineMs = 3_600_000): RunState {
  const state = createRunState({ runId: 'run_a', agent: 'a', input: 'hi', deadlineMs, now: NOW });
  state.status = 'awaiting_approval';
  state.approvals = approvals;
  return state;
}

const request = (toolCallId: string, requestedAt = NOW): Approval => ({
  toolCallId,
  tool: 'send_email',
  arguments: '{}',
  requestedAt,
});

describe('joinDecisions', () => {
  it('joins a stored decision to its request with who decided, why and when', () => {
    const decision = JSON.stringify({ decision: 'approved', by: 'ops', reason: 'fine', decidedAt: 9 });
    const { approvals, problems } = joinDecisions({ call_1: request('call_1') }, ['call_1', decision]);
    expect(approvals.call_1).toMatchObject({ decision: 'approved', by: 'ops', reason: 'fine', decidedAt: 9 });
    expect(problems).toEqual([]);
  });

  it('keeps a decision taken earlier over a later one for the same call', () => {
    const earlier = { ...request('call_1'), decision: 'rejected' as const, by: 'agent-reach' };
    const later = JSON.stringify({ decision: 'approved', by: 'ops' });
    const { approvals } = joinDecisions({ call_1: earlier }, ['call_1', later]);
    expect(approvals.call_1).toMatchObject({ decision: 'rejected', by: 'agent-reach' });
  });

  it('ignores and reports decisions for calls the run never asked about, __proto__ included', () => {
    const decision = JSON.stringify({ decision: 'approved' });
    const { approvals, problems } = joinDecisions({ call_1: request('call_1') }, [
      '__proto__',
      decision,
      'call_9',
      decision,
    ]);
    expect(Object.getPrototypeOf(approvals)).toBeNull();
    expect(approvals.call_1?.decision).toBeUndefined();
    expect(problems).toEqual([
      'decision for unknown call "__proto__" ignored',
      'decision for unknown call "call_9" ignored',
    ]);
  });

  it('reports an unreadable decision and leaves the call waiting', () => {
    const { approvals, problems } = joinDecisions({ call_1: request('call_1') }, [
      'call_1',
      '{"decision":1}',
    ]);
    expect(approvals.call_1?.decision).toBeUndefined();
    expect(problems).toEqual(['unreadable decision for call call_1 ignored']);
  });

  it('drops stored requests whose id is not a tool call id', () => {
    const { approvals } = joinDecisions({ 'bad id!': request('bad id!'), call_1: request('call_1') }, []);
    expect(Object.keys(approvals)).toEqual(['call_1']);
  });
});

describe('decideOverdue', () => {
  it('rejects in the platform name only the requests older than the timeout', () => {
    const state = parked({ old: request('old', NOW - 10_000), fresh: request('fresh') });
    decideOverdue(state, 5_000);
    expect(state.approvals.old).toMatchObject({
      decision: 'rejected',
      by: 'agent-reach',
      reason: 'no decision before the approval timeout',
    });
    expect(state.approvals.fresh?.decision).toBeUndefined();
    expect(anyDecided(state)).toBe(true);
  });

  it('leaves a person decision in place however old its request is', () => {
    const state = parked({ c: { ...request('c', NOW - 10_000), decision: 'approved', by: 'ops' } });
    decideOverdue(state, 5_000);
    expect(state.approvals.c).toMatchObject({ decision: 'approved', by: 'ops' });
  });
});

describe('pendingRequest', () => {
  it('returns the request a decision would answer', () => {
    const state = parked({ call_1: request('call_1') });
    expect(pendingRequest(state, 'call_1')).toEqual({ request: state.approvals.call_1 });
  });

  it('refuses a call the run never asked about, looking at own properties only', () => {
    const state = parked({});
    expect(pendingRequest(state, 'constructor')).toEqual({
      refused: 'no_request',
      message: 'run run_a has no approval request for constructor',
    });
  });

  it('refuses a second decision, naming the first', () => {
    const state = parked({ call_1: { ...request('call_1'), decision: 'rejected' } });
    expect(pendingRequest(state, 'call_1')).toEqual({
      refused: 'already_decided',
      message: 'call call_1 was already rejected',
    });
  });
});

describe('parkedUntil', () => {
  it('wakes a parked run at the approval timeout when the run deadline is later', () => {
    const wakeAt = parkedUntil(parked({}, 3_600_000), 60_000);
    expect(wakeAt).toBeGreaterThanOrEqual(NOW + 60_000);
    expect(wakeAt).toBeLessThan(NOW + 3_600_000);
  });

  it('wakes a parked run at its deadline when that comes before the approval timeout', () => {
    const state = parked({}, 30_000);
    expect(parkedUntil(state, 3_600_000)).toBe(state.deadlineAt);
  });
});

describe('requestApprovals: a grant asked of a person', () => {
  /** A catalog of one tool that requires a grant, in scope `refunds`; arguments `{}` are valid. */
  const catalog = {
    get: (name: string) =>
      name === 'refund'
        ? { name, requiresGrant: true, requiresConfirmation: false, accessScope: 'refunds' }
        : undefined,
    checkArguments: (_name: string, args: string) => ({ ok: args === '{}' }),
  } as unknown as Parameters<typeof requestApprovals>[2]['catalog'];
  const agent = (extra: Record<string, unknown> = {}) =>
    ({ name: 'a', tools: ['refund'], grant_by_approval: true, ...extra }) as unknown as Parameters<
      typeof requestApprovals
    >[2]['agent'];
  const call = (id: string, args = '{}') => ({ id, name: 'refund', arguments: args });
  const ask = (state: RunState, a = agent(), args = '{}') => {
    const events: RunEventBody[] = [];
    const waiting = requestApprovals(state, [call('call_1', args)], { catalog, agent: a }, (e) =>
      events.push(e),
    );
    return { waiting, events };
  };

  it('parks a call of a tool the run was not granted, announcing a grant request once', () => {
    const state = parked({});
    expect(ask(state)).toEqual({
      waiting: true,
      events: [
        { type: 'approval_requested', tool_call_id: 'call_1', tool: 'refund', arguments: '{}', grant: true },
      ],
    });
    expect(state.approvals.call_1).toMatchObject({ tool: 'refund', grant: true });
    expect(ask(state)).toEqual({ waiting: true, events: [] });
  });

  it('asks nothing when the run holds the grant, the agent does not ask, the scope is not held, or the arguments are invalid', () => {
    const granted = parked({});
    granted.grants = ['refund'];
    expect(ask(granted).waiting).toBe(false);
    expect(ask(parked({}), agent({ grant_by_approval: false })).waiting).toBe(false);
    expect(ask(parked({}), agent({ scopes: ['orders.read'] })).waiting).toBe(false);
    expect(ask(parked({}), agent({ scopes: ['refunds'] })).waiting).toBe(true);
    expect(ask(parked({}), agent(), '{"x":1}').waiting).toBe(false);
  });

  it("adds an approved grant to the run's grants, and a rejected one to nothing", () => {
    const approved = parked({
      call_1: { ...request('call_1'), tool: 'refund', grant: true, decision: 'approved' },
    });
    expect(ask(approved).waiting).toBe(false);
    expect(approved.grants).toEqual(['refund']);
    const rejected = parked({
      call_1: { ...request('call_1'), tool: 'refund', grant: true, decision: 'rejected' },
    });
    expect(ask(rejected).waiting).toBe(false);
    expect(rejected.grants).toBeUndefined();
  });
});
