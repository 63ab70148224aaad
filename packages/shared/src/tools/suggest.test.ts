import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { closestName } from './suggest.js';

const TOOLS = ['query_weather', 'query_order_status', 'write_markdown_file', 'get_full_result'];

describe('closestName', () => {
  it.each([
    ['query_wether', 'query_weather'],
    ['Query_Weather', 'query_weather'],
    ['get_weather', 'query_weather'],
    ['order_status', 'query_order_status'],
    ['write_file', 'write_markdown_file'],
    ['full_result', 'get_full_result'],
  ])('suggests %s → %s', (name, expected) => {
    expect(closestName(name, TOOLS)).toBe(expected);
  });

  it('suggests nothing for a name that is neither close nor shares a word', () => {
    expect(closestName('translate', TOOLS)).toBeUndefined();
  });

  it('ignores shared words of two letters or fewer', () => {
    expect(closestName('go_translate', ['go_query_order_status'])).toBeUndefined();
  });

  it('suggests nothing from no candidates', () => {
    expect(closestName('query_weather', [])).toBeUndefined();
  });

  it('finds a known name itself, and only ever suggests one of the candidates (property)', () => {
    const name = fc.stringMatching(/^[a-z_]{1,20}$/);
    fc.assert(
      fc.property(fc.uniqueArray(name, { minLength: 1, maxLength: 8 }), name, (candidates, asked) => {
        expect(closestName(candidates[0] as string, candidates)).toBe(candidates[0]);
        const guess = closestName(asked, candidates);
        if (guess !== undefined) expect(candidates).toContain(guess);
      }),
    );
  });
});
