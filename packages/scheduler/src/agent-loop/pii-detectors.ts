import type { PiiDetector } from '@agent-reach/shared';

/** One piece of PII found: its detector and a masked form of it (the full value never leaves the check). */
export interface PiiFinding {
  detector: PiiDetector;
  masked: string;
}

/** HTML entities that write the characters PII is made of (numeric ones are decoded whatever they write). */
const NAMED_ENTITIES: Record<string, string> = {
  commat: '@',
  period: '.',
  hyphen: '-',
  dash: '-',
  plus: '+',
  nbsp: ' ',
  lpar: '(',
  rpar: ')',
};

/** A numeric character reference as its character; one that writes no character is left as written. */
function numericEntity(whole: string, hex: string | undefined, dec: string | undefined): string {
  const cp = hex !== undefined ? parseInt(hex, 16) : Number(dec);
  return Number.isInteger(cp) && cp > 0 && cp <= 0x10ffff ? String.fromCodePoint(cp) : whole;
}

/**
 * A decimal digit of any script as its ASCII digit. Unicode writes every script's digits as runs of ten
 * code points, 0 to 9, so the digit's value is its place in its run.
 */
function asciiDigit(digit: string): string {
  const cp = digit.codePointAt(0) as number;
  let first = cp;
  while (first - cp < 60 && /\p{Nd}/u.test(String.fromCodePoint(first - 1))) first -= 1;
  return String((cp - first) % 10);
}

/**
 * Text as the checks read it: HTML character references decoded (`&#64;`, `&#x40;`, `&commat;`), Unicode
 * NFKC (full-width digits and `＠` become ASCII), format characters dropped (zero-width spaces and joiners,
 * soft hyphens, bidi controls), every dash written `-`, the ideographic full stop written `.` and every
 * script's decimal digits written 0–9, so that `ｊｏｈｎ＠ｅｘａｍｐｌｅ．ｃｏｍ`, `li&#64;example。com` or a card
 * number split by U+200B or en dashes is still seen.
 */
export function foldText(text: string): string {
  return text
    .replace(/&#(?:[xX]([0-9a-fA-F]{1,6})|(\d{1,7}));/g, numericEntity)
    .replace(/&([a-z]+);/g, (whole, name: string) => NAMED_ENTITIES[name] ?? whole)
    .normalize('NFKC')
    .replace(/\p{Cf}/gu, '')
    .replace(/\p{Pd}/gu, '-')
    .replace(/\u3002/g, '.')
    .replace(/(?![0-9])\p{Nd}/gu, asciiDigit);
}

/**
 * Text as blocked terms are matched against it: folded, lower case, without accents or other combining
 * marks (`Pássword` and `passwórd` are `password`).
 */
export function foldTerms(text: string): string {
  return foldText(text).toLowerCase().normalize('NFD').replace(/\p{M}/gu, '').normalize('NFC');
}

/**
 * Addresses with letters of any script (internationalised addresses, and Latin look-alikes in Cyrillic).
 * Every part is bounded (RFC 5321: 64 for the local part, 63 a label), so a long run of letters is scanned
 * a bounded distance from each position, not to its end.
 */
const EMAIL =
  /[\p{L}\p{N}._%+-]{1,64}@[\p{L}\p{N}-]{1,63}(?:\.[\p{L}\p{N}-]{1,63}){0,8}\.\p{L}{2,24}(?![\p{L}\p{N}-])/gu;
/** Mainland China mobile numbers, with or without +86, spaced or not. */
const CN_MOBILE = /(?<![\d])(?:\+?86[ -]?)?1[3-9]\d[ -]?\d{4}[ -]?\d{4}(?!\d)/g;
/** International numbers written with a leading `+` and a country code. */
const INTERNATIONAL = /(?<![\w+])\+\d{1,3}(?:[ .-]?\(?\d{1,5}\)?){2,6}(?!\d)/g;
/** North American numbers written (555) 123-4567, 555-123-4567 or 555.123.4567. */
const NANP = /(?<!\d)(?:\(\d{3}\)\s?|\d{3}[.-])\d{3}[.-]\d{4}(?!\d)/g;
/** 18-character Chinese resident identity numbers (17 digits and a check character). */
const CN_ID = /(?<![0-9A-Za-z])\d{17}[\dXx](?![0-9A-Za-z])/g;
/** Runs of 13 to 19 digits, possibly grouped by spaces or dashes. */
const CARD = /(?<![\d])\d(?:[ -]?\d){12,18}(?!\d)/g;
/** 16 digits in four groups of four split by dots (a decimal or a version is not grouped so). */
const CARD_DOTTED = /(?<![\d.])\d{4}(?:\.\d{4}){3}(?!\.?\d)/g;

const CN_ID_WEIGHTS = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2];
const CN_ID_CHECK = '10X98765432';

/** True for a Chinese resident ID with a real birth date and a valid ISO 7064 MOD 11-2 check character. */
export function validCnId(id: string): boolean {
  if (!/^\d{17}[\dXx]$/.test(id)) return false;
  const year = Number(id.slice(6, 10));
  const month = Number(id.slice(10, 12));
  const day = Number(id.slice(12, 14));
  const born = new Date(Date.UTC(year, month - 1, day));
  if (year < 1900 || born.getUTCMonth() !== month - 1 || born.getUTCDate() !== day) return false;
  if (born.getTime() > Date.now()) return false;
  const sum = CN_ID_WEIGHTS.reduce((acc, w, i) => acc + w * Number(id[i]), 0);
  return CN_ID_CHECK[sum % 11] === id[17]?.toUpperCase();
}

/** True for a number that passes the Luhn check (payment cards). */
export function luhnValid(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i += 1) {
    let d = Number(digits[digits.length - 1 - i]);
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 === 0;
}

/** A 13–19 digit number of a card network's range (2–6) that passes Luhn, not one digit repeated. */
export function validCard(digits: string): boolean {
  return (
    digits.length >= 13 &&
    digits.length <= 19 &&
    /^[2-6]/.test(digits) &&
    !/^(\d)\1+$/.test(digits) &&
    luhnValid(digits)
  );
}

const digitsOf = (s: string) => s.replace(/\D/g, '');
const lastFour = (s: string) => `…${digitsOf(s).slice(-4)}`;

function maskEmail(email: string): string {
  const [local = '', domain = ''] = email.split('@');
  return `${local.slice(0, 1)}***@${domain}`;
}

/** Every PII finding of the given detectors in `text` (already folded by `foldText`). */
export function findPii(text: string, detectors: readonly PiiDetector[]): PiiFinding[] {
  const found: PiiFinding[] = [];
  const on = new Set(detectors);
  if (on.has('email'))
    for (const m of text.matchAll(EMAIL)) found.push({ detector: 'email', masked: maskEmail(m[0]) });
  if (on.has('phone')) {
    const seen = new Set<string>();
    for (const re of [CN_MOBILE, INTERNATIONAL, NANP]) {
      for (const m of text.matchAll(re)) {
        const digits = digitsOf(m[0]);
        if (digits.length < 10 || digits.length > 15 || seen.has(digits)) continue;
        seen.add(digits);
        found.push({ detector: 'phone', masked: lastFour(m[0]) });
      }
    }
  }
  if (on.has('cn_id'))
    for (const m of text.matchAll(CN_ID))
      if (validCnId(m[0])) found.push({ detector: 'cn_id', masked: `${m[0].slice(0, 6)}…${m[0].slice(-2)}` });
  if (on.has('card'))
    for (const re of [CARD, CARD_DOTTED])
      for (const m of text.matchAll(re))
        if (validCard(digitsOf(m[0]))) found.push({ detector: 'card', masked: lastFour(m[0]) });
  return found;
}

const LABELS: Record<PiiDetector, string> = {
  email: 'e-mail address',
  phone: 'phone number',
  cn_id: 'resident ID number',
  card: 'payment card number',
};

/** The findings in words, masked: `e-mail address j***@example.com; payment card number …1111`. */
export function describePii(findings: readonly PiiFinding[]): string {
  return findings
    .slice(0, 5)
    .map((f) => `${LABELS[f.detector]} ${f.masked}`)
    .join('; ');
}
