/**
 * Text from runs (a caller's input, a model's answer, tool results, names from Redis) can carry
 * control characters that rewrite what a terminal shows: escape sequences, carriage returns, C1
 * controls, bidirectional overrides. Everything human-facing goes through these; `--json` and the
 * event stream stay exact JSON.
 */

/* eslint-disable no-control-regex -- matching control characters is the point */
// C0 but tab and newline, DEL, C1, and Unicode's invisible direction and line controls.
const UNSAFE =
  /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
const UNSAFE_INLINE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
/* eslint-enable no-control-regex */
const NAMED: Record<string, string> = { '\n': '\\n', '\t': '\\t', '\r': '\\r' };

function escape(c: string): string {
  const code = c.charCodeAt(0);
  return (
    NAMED[c] ??
    (code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`)
  );
}

/** One line of text for a terminal: every control character (newlines included) shown escaped. */
export function inline(text: string): string {
  return text.replace(UNSAFE_INLINE, escape);
}

/** Text for a terminal that may span lines: newlines and tabs kept, every other control escaped. */
export function multiline(text: string): string {
  return text.replace(UNSAFE, escape);
}

/** A copy of a value with every string in it made `inline`: for records rendered one per line. */
export function inlineStrings<T>(value: T): T {
  if (typeof value === 'string') return inline(value) as T;
  if (Array.isArray(value)) return value.map((v: unknown) => inlineStrings(v)) as T;
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = inlineStrings(v);
    return out as T;
  }
  return value;
}

/**
 * A value as one JSON line whose text a terminal cannot misread: JSON already escapes C0 controls;
 * C1 controls and direction overrides are written as `\u` escapes too, so the JSON means the same.
 */
export function jsonLine(value: unknown): string {
  return JSON.stringify(value).replace(
    /[\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}
