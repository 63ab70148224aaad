import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { shapeResult, truncationNotice } from './result-shaping.js';

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
    const shaped = shapeResult(content, { budgetChars: 1_000, summarize: false });
    expect(shaped.stage).toBe('trimmed');
    const out = shaped.content as { id: number; note: string; rows: unknown[] };
    expect(out.id).toBe(7);
    expect(out.note).toMatch(/^n+… \(\d+ more chars\)$/);
    expect(out.rows.at(-1)).toMatch(/^… \d+ more items$/);
    expect(out.rows[0]).toEqual({ i: 0 });
  });

  it('summarises long arrays as their count, item keys and first items before trimming anything', () => {
    const rows = Array.from({ length: 300 }, (_, i) => ({
      id: i,
      name: `item ${i}`,
      ...(i === 5 ? { extra: 1 } : {}),
    }));
    const content = { total: 300, rows, tags: ['a', 'b'] };
    const shaped = shapeResult(content, 1_000);
    expect(shaped).toMatchObject({ truncated: true, stage: 'summary', full: JSON.stringify(content) });
    expect(shaped.content).toEqual({
      total: 300,
      rows: {
        summary: 'array',
        count: 300,
        item_keys: ['id', 'name', 'extra'],
        first_items: [rows[0], rows[1], rows[2]],
      },
      tags: ['a', 'b'],
    });
  });

  it('trims the summary when the summary alone is still over the budget', () => {
    const content = { note: 'n'.repeat(5_000), rows: Array.from({ length: 300 }, (_, i) => ({ i })) };
    const shaped = shapeResult(content, 1_000);
    expect(shaped.stage).toBe('trimmed');
    const out = shaped.content as { note: string; rows: { count: number } };
    expect(out.rows.count).toBe(300);
    expect(out.note).toMatch(/^n+… \(\d+ more chars\)$/);
    expect(size(out)).toBeLessThanOrEqual(1_000);
  });

  it('tells the model how the result was cut, how big it was, and how to fetch the rest by its ref', () => {
    const shaped = shapeResult({ rows: Array.from({ length: 300 }, (_, i) => ({ i })) }, 500);
    const ref = 'ref_123e4567-e89b-12d3-a456-426614174000';
    expect(truncationNotice(shaped, 500, ref)).toBe(
      `the result was cut to fit 500 of ${shaped.full!.length} characters (long lists are summarised as ` +
        `their count, item keys and first items); fetch the rest with get_full_result({"ref":"${ref}",` +
        '"offset":0}), one page at a time, following next_offset',
    );
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
