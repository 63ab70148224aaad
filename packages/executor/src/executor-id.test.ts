import { describe, expect, it } from 'vitest';
import { RUN_ID_PATTERN } from '@agent-reach/protocol';
import { newExecutorId } from './executor-id.js';

describe('newExecutorId', () => {
  it('mints ids that name this process and differ between calls', () => {
    const [a, b] = [newExecutorId(), newExecutorId()];
    expect(a).toMatch(new RegExp(`^executor-[A-Za-z0-9_.-]{1,64}-${process.pid}-[0-9a-f]{8}$`));
    expect(a).not.toBe(b);
  });

  it('keeps to the alphabet of Redis key parts and job ids', () => {
    expect(newExecutorId()).toMatch(RUN_ID_PATTERN);
  });
});
