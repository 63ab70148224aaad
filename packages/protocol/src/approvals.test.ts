import { describe, expect, it } from 'vitest';
import { readDecision, rejectedError, unconfirmedError } from './approvals.js';

describe('readDecision', () => {
  it('reads an approval with who decided, why and when', () => {
    const json = JSON.stringify({ decision: 'approved', by: 'ops', reason: 'ok', decidedAt: 5 });
    expect(readDecision(json)).toEqual({ decision: 'approved', by: 'ops', reason: 'ok', decidedAt: 5 });
  });

  it('keeps the decision and drops fields of the wrong type', () => {
    const json = JSON.stringify({ decision: 'rejected', by: 7, reason: null, decidedAt: 'now' });
    expect(readDecision(json)).toEqual({ decision: 'rejected' });
  });

  it.each([
    ['not JSON', '{decision'],
    ['a JSON string', '"approved"'],
    ['null', 'null'],
    ['an unknown decision', '{"decision":"maybe"}'],
    ['no decision at all', '{"by":"ops"}'],
  ])('reads %s as no decision', (_, json) => {
    expect(readDecision(json)).toBeUndefined();
  });
});

describe('approval errors', () => {
  it('tells the model a rejected call is forbidden and names who refused it and why', () => {
    expect(rejectedError({ by: 'ops', reason: 'too risky' })).toEqual({
      kind: 'forbidden',
      message: 'refused by a person: too risky; do not retry this call',
      decided_by: 'ops',
      reason: 'too risky',
      retryable: false,
    });
  });

  it('answers a call that reached an executor unapproved as awaiting_confirmation, not retryable', () => {
    expect(unconfirmedError('send_email')).toEqual({
      kind: 'awaiting_confirmation',
      message: '"send_email" runs only after a person approves the call',
      retryable: false,
    });
  });
});
