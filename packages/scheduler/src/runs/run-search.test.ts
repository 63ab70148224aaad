import { describe, expect, it } from 'vitest';
import { decodeCursor, encodeCursor } from './run-search.js';

describe('run search cursors', () => {
  it('round-trips a position (creation time and run id) through an opaque url-safe cursor', () => {
    const cursor = encodeCursor({ score: 1_790_000_000_123, runId: 'run_a.b-c_d' });
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(decodeCursor(cursor)).toEqual({ score: 1_790_000_000_123, runId: 'run_a.b-c_d' });
  });

  it('refuses a cursor it did not make', () => {
    for (const forged of [
      '',
      'not-a-cursor',
      Buffer.from('{"a":1}').toString('base64url'),
      Buffer.from('["x","y"]').toString('base64url'),
    ])
      expect(decodeCursor(forged), forged).toBeUndefined();
  });
});
