import { describe, expect, it } from 'vitest';
import type { ToolCallJob } from '@agent-reach/protocol';
import { awaitsPerson, type VerifiedJob } from './verify-job.js';

const TOOLS: Record<string, { requiresConfirmation: boolean }> = {
  send_refund: { requiresConfirmation: true },
  refund: { requiresConfirmation: false },
};
const lookup = {
  registry: { get: (name: string) => TOOLS[name] as never },
  agents: {
    agents: new Map([
      ['asking', { name: 'asking', tools: [], grant_by_approval: true }],
      ['plain', { name: 'plain', tools: [] }],
    ]) as never,
  },
};
const verified = (name: string, agent: string, undecided: boolean): VerifiedJob => ({
  job: { name, agent } as ToolCallJob,
  start: 'started',
  approved: false,
  undecided,
  grants: new Set(),
});
const refusal = (reason: string) => ({
  error: { kind: 'forbidden' as const, message: 'no', reason, retryable: false },
});

describe('awaitsPerson: a refusal of a call its run may be parked on is replied, never recorded', () => {
  it('holds for a grant refusal of an undecided call when the agent asks a person for grants', () => {
    expect(awaitsPerson(lookup, verified('refund', 'asking', true), refusal('grant'))).toBe(true);
  });

  it('holds for any refusal of an undecided call of a tool that requires confirmation', () => {
    expect(awaitsPerson(lookup, verified('send_refund', 'plain', true), refusal('scope'))).toBe(true);
    expect(awaitsPerson(lookup, verified('send_refund', 'plain', true), refusal('grant'))).toBe(true);
  });

  it('does not hold once a decision is recorded, for an agent nobody is asked for, or for another error', () => {
    expect(awaitsPerson(lookup, verified('refund', 'asking', false), refusal('grant'))).toBe(false);
    expect(awaitsPerson(lookup, verified('refund', 'plain', true), refusal('grant'))).toBe(false);
    expect(awaitsPerson(lookup, verified('refund', 'asking', true), refusal('scope'))).toBe(false);
    const failed = { error: { kind: 'execution_error' as const, message: 'boom', retryable: false } };
    expect(awaitsPerson(lookup, verified('send_refund', 'asking', true), failed)).toBe(false);
  });
});
