import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { countTokens, exceedsTokens } from './tokens.js';

describe('token counting', () => {
  // Counts js-tiktoken's own encode gives for the o200k_base encoding.
  it.each([
    ['Hello world', 2],
    ['查一下上海天气，然后写一份周末两日游建议存成 md 文件', 18],
    [JSON.stringify({ role: 'user', content: "It's 12345678 o'clock\n\n\t  x 😀😀 naïve café" }), 25],
    ['o'.repeat(100), 13],
    ['中文字符'.repeat(250), 500],
    ['Größe ÄÖÜ добрый день 日本語のテキスト 한국어 텍스트 ١٢٣ عربى', 25],
  ])('counts %j exactly as the o200k_base encoding does', (text, tokens) => {
    expect(countTokens(text)).toBe(tokens);
  });

  it('counts a 40 000-letter single word without merging it as one piece', () => {
    const tokens = countTokens('o'.repeat(40_000));
    // "oooooooo" is one token; a cut every 128 bytes costs nothing for this word.
    expect(tokens).toBe(5_000);
  });

  it('counts a 40 100-letter word inside a run input and says it exceeds a small budget', () => {
    const prompt = JSON.stringify([{ role: 'user', content: 'o'.repeat(40_100) }]);
    const size = exceedsTokens(prompt, 1_000);
    expect(size.exceeds).toBe(true);
    expect(size.tokens).toBeGreaterThan(1_000);
    expect(size.tokens).toBeLessThanOrEqual(Buffer.byteLength(prompt));
  });

  it('estimates a megabyte of text within its byte length and near its real size', () => {
    const sentence = 'The quick brown fox jumps over the lazy dog. ';
    const text = sentence.repeat(Math.ceil(1_000_000 / sentence.length));
    const exactPerSentence = countTokens(sentence.repeat(10)) / 10;
    const tokens = countTokens(text);
    expect(tokens).toBeLessThanOrEqual(Buffer.byteLength(text));
    expect(Math.abs(tokens / (exactPerSentence * (text.length / sentence.length)) - 1)).toBeLessThan(0.05);
  });

  it('answers a text of at most the threshold in bytes without counting, and counts one byte more', () => {
    expect(exceedsTokens('abc', 3)).toEqual({ exceeds: false });
    expect(exceedsTokens('abcd', 3)).toEqual({ exceeds: false, tokens: 1 });
    expect(exceedsTokens('a b c d', 3)).toEqual({ exceeds: true, tokens: 4 });
  });

  it('counts exactly up to 8 KiB and estimates one byte past it, close to the exact count', () => {
    const exact = `${'word '.repeat(1_638)}xx`;
    expect(Buffer.byteLength(exact)).toBe(8_192);
    const estimated = `${exact}x`;
    expect(countTokens(exact)).toBe(1_638 + 1);
    expect(Math.abs(countTokens(estimated) / countTokens(exact) - 1)).toBeLessThan(0.05);
  });

  it('never counts more tokens than UTF-8 bytes, nor none for a non-empty text (property)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 200 }), (text) => {
        const tokens = countTokens(text);
        expect(tokens).toBeLessThanOrEqual(Buffer.byteLength(text));
        if (text.length > 0) expect(tokens).toBeGreaterThan(0);
      }),
    );
  });

  it('counts special-token markup in user text as plain text instead of throwing', () => {
    expect(countTokens('please print <|endoftext|> literally')).toBeGreaterThan(5);
  });
});
