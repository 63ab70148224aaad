import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { shapeResult } from './result-shaping.js';

const size = (v: unknown) => JSON.stringify(v).length;

describe('shapeResult', () => {
  it('returns a result that fits as it is, not truncated and without a full copy', () => {
    const content = { city: 'Paris', temp_c: 21 };
    const budget = size(content);
    expect(shapeResult(content, budget)).toEqual({ content, truncated: false });
  });

  it('trims a result one character over budget and keeps its full JSON', () => {
    const content = { text: 'x'.repeat(100) };
    const shaped = shapeResult(content, size(content) - 1);
    expect(shaped.truncated).toBe(true);
    expect(shaped.full).toBe(JSON.stringify(content));
    expect(size(shaped.content)).toBeLessThanOrEqual(size(content) - 1);
  });

  it('keeps the fields and shortens long strings and arrays with markers saying how much was left out', () => {
    const content = { id: 7, note: 'n'.repeat(5_000), rows: Array.from({ length: 500 }, (_, i) => ({ i })) };
    const shaped = shapeResult(content, 1_000);
    const out = shaped.content as { id: number; note: string; rows: unknown[] };
    expect(out.id).toBe(7);
    expect(out.note).toMatch(/^n+… \(\d+ more chars\)$/);
    expect(out.rows.at(-1)).toMatch(/^… \d+ more items$/);
    expect(out.rows[0]).toEqual({ i: 0 });
  });

  it('falls back to a plain preview when no trimming of the shape fits', () => {
    const content = Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`field_${i}`, i]));
    const shaped = shapeResult(content, 100);
    expect(shaped.content).toEqual({ preview: JSON.stringify(content).slice(0, 60) });
  });

  it('fits a preview of a result full of characters that serializing escapes again', () => {
    const content = Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`"${i}\\`, i]));
    const shaped = shapeResult(content, 200);
    const { preview } = shaped.content as { preview: string };
    expect(size(shaped.content)).toBeLessThanOrEqual(200);
    expect(JSON.stringify(content).startsWith(preview)).toBe(true);
    expect(preview.length).toBeGreaterThan(50);
  });

  it('reads an undefined result as null', () => {
    expect(shapeResult(undefined, 10)).toEqual({ content: undefined, truncated: false });
  });

  it('always fits the budget and keeps the full JSON whenever it trims (property)', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.jsonValue(), fc.dictionary(fc.string(), fc.integer(), { minKeys: 50 })),
        fc.integer({ min: 40, max: 2_000 }),
        (content, budget) => {
          const shaped = shapeResult(content, budget);
          expect(size(shaped.content ?? null)).toBeLessThanOrEqual(budget);
          if (shaped.truncated) expect(shaped.full).toBe(JSON.stringify(content));
          else expect(shaped.content).toBe(content);
        },
      ),
    );
  });
});
