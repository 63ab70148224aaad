import { describe, expect, it } from 'vitest';
import { findPii, foldText, luhnValid, validCard, validCnId } from './pii-detectors.js';
import { builtinVerdict, checkedText } from './guardrail-verdicts.js';

const kinds = (text: string) =>
  findPii(foldText(text), ['email', 'phone', 'cn_id', 'card']).map((f) => f.detector);

describe('PII detectors', () => {
  it('accepts a resident ID whose check character is right and refuses one digit off or a bad birth date', () => {
    // 11010519491231002X is the standard's published example (Beijing, born 1949-12-31).
    expect(validCnId('11010519491231002X')).toBe(true);
    expect(validCnId('11010519491231002x')).toBe(true);
    expect(validCnId('110105194912310021')).toBe(false); // wrong check character
    expect(validCnId('11010519491331002X')).toBe(false); // month 13
    expect(validCnId('11010518491231002X')).toBe(false); // born before 1900 (and the check breaks)
  });

  it('runs Luhn over card numbers: the test Visa passes, one changed digit fails, repeated digits are not cards', () => {
    expect(luhnValid('4111111111111111')).toBe(true);
    expect(luhnValid('4111111111111112')).toBe(false);
    expect(validCard('5500005555555559')).toBe(true);
    expect(validCard('378282246310005')).toBe(true); // Amex, 15 digits
    expect(validCard('0000000000000000')).toBe(false);
    expect(validCard('9111111111111111')).toBe(false); // no card network starts with 9
  });

  it('finds e-mail, mobile and international phones, a valid ID and a valid card in free text', () => {
    expect(kinds('write to li.lei@example.com')).toEqual(['email']);
    expect(kinds('call 138 0013 8000 or +86 13800138001')).toEqual(['phone', 'phone']);
    expect(kinds('call +44 20 7946 0958 today')).toEqual(['phone']);
    expect(kinds('(415) 555-2671')).toEqual(['phone']);
    expect(kinds('身份证 11010519491231002X')).toEqual(['cn_id']);
    expect(kinds('card 4111 1111 1111 1111 exp 12/29')).toEqual(['card']);
    expect(kinds('card 4111-1111-1111-1111')).toEqual(['card']);
  });

  it('does not report numbers whose checksum fails, order ids or short numbers', () => {
    expect(kinds('card 4111 1111 1111 1112')).toEqual([]);
    expect(kinds('身份证 110105194912310021')).toEqual([]);
    expect(kinds('order ORD-100001, 3 items, total 1024.50, at 2025-03-01')).toEqual([]);
    expect(kinds('no contact details here')).toEqual([]);
  });

  it('sees PII written with full-width characters, zero-width spaces or JSON escapes', () => {
    expect(kinds('ｌｉ＠ｅｘａｍｐｌｅ．ｃｏｍ')).toEqual(['email']);
    expect(kinds('4111\u200b1111\u200b1111\u200b1111')).toEqual(['card']);
    expect(findPii(checkedText('{"to":"li\\u0040example.com"}'), ['email'])).toHaveLength(1);
  });

  it('masks what it found: the reason names the kind, never the whole value', () => {
    const v = builtinVerdict(
      { name: 'no_pii', pii: ['all'] },
      { stage: 'arguments', text: '{"email":"li.lei@example.com","card":"4111111111111111"}', ref: 'c1' },
    );
    expect(v.tripped).toBe(true);
    expect(v.reason).toContain('e-mail address l***@example.com');
    expect(v.reason).toContain('payment card number …1111');
    expect(v.reason).not.toContain('li.lei@');
    expect(v.reason).not.toContain('4111111111111111');
  });
});

describe('built-in checks', () => {
  const target = (text: string) => ({ stage: 'input' as const, text, ref: 'request' });

  it('trips max_length past the limit, counting characters rather than UTF-16 units', () => {
    expect(builtinVerdict({ name: 'len', max_length: 5 }, target('天气怎么样')).tripped).toBe(false);
    expect(builtinVerdict({ name: 'len', max_length: 5 }, target('上海天气怎么样')).reason).toMatch(
      /7 characters long, over the limit of 5/,
    );
  });

  it('trips blocked_terms case-insensitively and across full-width forms', () => {
    const spec = { name: 'terms', blocked_terms: ['AcmeCorp', '内部资料'] };
    expect(builtinVerdict(spec, target('compare with ＡＣＭＥcorp prices')).reason).toMatch(/"AcmeCorp"/);
    expect(builtinVerdict(spec, target('请发我内部资料')).tripped).toBe(true);
    expect(builtinVerdict(spec, target('compare prices')).tripped).toBe(false);
  });

  it('trips regex with its flags and reports where, not what, it matched', () => {
    const spec = { name: 'keys', regex: { pattern: 'sk-[a-z0-9]{8,}', flags: 'i' } };
    const v = builtinVerdict(spec, target('my key is SK-ABCDEF123456'));
    expect(v).toMatchObject({ tripped: true });
    expect(v.reason).not.toContain('ABCDEF');
    expect(builtinVerdict(spec, target('my key is secret')).tripped).toBe(false);
  });
});
