import { describe, expect, it } from 'vitest';
import { newResultRef, RESULT_REF_PATTERN } from './ids.js';

describe('newResultRef', () => {
  it("mints refs that the result ref pattern (get_full_result's argument) accepts, a new one each call", () => {
    const [a, b] = [newResultRef(), newResultRef()];
    expect(a).toMatch(RESULT_REF_PATTERN);
    expect(b).toMatch(RESULT_REF_PATTERN);
    expect(a).not.toBe(b);
  });

  it('refuses a ref that is not ref_ and a UUID', () => {
    expect('ref_../../etc').not.toMatch(RESULT_REF_PATTERN);
    expect(`run_${globalThis.crypto.randomUUID()}`).not.toMatch(RESULT_REF_PATTERN);
  });
});
