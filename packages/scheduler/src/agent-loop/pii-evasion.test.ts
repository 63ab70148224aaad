import { describe, expect, it } from 'vitest';
import { builtinVerdict, checkedText } from './guardrail-verdicts.js';
import { findPii } from './pii-detectors.js';

/** What the detectors find in `text` as a guardrail reads it. */
const kinds = (text: string) =>
  findPii(checkedText(text), ['email', 'phone', 'cn_id', 'card']).map((f) => f.detector);

const blocked = (terms: string[], text: string) =>
  builtinVerdict({ name: 'terms', blocked_terms: terms } as never, { stage: 'input', text, ref: 'r' })
    .tripped;

describe('PII written to evade the detectors', () => {
  it('sees card numbers grouped by dots, en dashes, non-breaking hyphens or written in other scripts’ digits', () => {
    expect(kinds('card 4111.1111.1111.1111')).toEqual(['card']);
    expect(kinds('card 4111\u20131111\u20131111\u20131111')).toEqual(['card']);
    expect(kinds('card 4111\u20111111\u20111111\u20111111')).toEqual(['card']);
    expect(
      kinds(
        'card \u0664\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661',
      ),
    ).toEqual(['card']);
    expect(
      kinds(
        'card \u096a\u0967\u0967\u0967 \u0967\u0967\u0967\u0967 \u0967\u0967\u0967\u0967 \u0967\u0967\u0967\u0967',
      ),
    ).toEqual(['card']);
  });

  it('sees e-mail addresses with an ideographic full stop, HTML entities, bidi controls or non-Latin letters', () => {
    expect(kinds('mail li@example\u3002com')).toEqual(['email']);
    expect(kinds('mail li&#64;example.com')).toEqual(['email']);
    expect(kinds('mail li&#x40;example&#46;com')).toEqual(['email']);
    expect(kinds('mail li&commat;example&period;com')).toEqual(['email']);
    expect(kinds('mail li\u202e@example.com')).toEqual(['email']);
    expect(kinds('mail j\u043ehn@ex\u0430mple.com')).toEqual(['email']);
    expect(kinds('card &#52;111 1111 1111 1111')).toEqual(['card']);
  });

  it('still leaves decimals, dotted versions and dates alone', () => {
    expect(kinds('pi is 3.14159265358979 and the build 4.1.1.1111')).toEqual([]);
    expect(kinds('from 2025\u201303\u201301 to 2025\u201304\u201301, total 1024.50')).toEqual([]);
    expect(kinds('&amp; &lt;b&gt; &#9731;')).toEqual([]);
  });

  it('checks a 1 MB input without scanning it once per character (a run of letters, digits or dots)', () => {
    // Each would take minutes with a pattern that scans to the end of the run from every position.
    for (const text of [
      'a'.repeat(1_000_000),
      '1'.repeat(1_000_000),
      'a.'.repeat(500_000),
      '1-'.repeat(500_000),
    ])
      expect(kinds(text)).toEqual([]);
    expect(kinds(`${'a'.repeat(1_000_000)} li@example.com`)).toEqual(['email']);
  }, 20_000);
});

describe('blocked terms written to evade the check', () => {
  it('trips on the term with accents, combining marks, case, width or zero-width characters added', () => {
    expect(blocked(['password'], 'my P\u00e1ssword is')).toBe(true);
    expect(blocked(['password'], 'passwo\u0301rd')).toBe(true);
    expect(blocked(['password'], '\uff30\uff21\uff33\uff33\uff37\uff2f\uff32\uff24')).toBe(true);
    expect(blocked(['password'], 'pass\u200dword')).toBe(true);
    expect(blocked(['caf\u00e9'], 'CAFE')).toBe(true);
    expect(blocked(['password'], 'passport')).toBe(false);
  });
});
