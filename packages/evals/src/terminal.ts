/**
 * Text of runs (a model's answer or arguments in a failure, a judge's reason) can carry control characters
 * that rewrite what a terminal shows. The table and Markdown reports show them escaped; JSON and JUnit
 * stay exact.
 */

/* eslint-disable no-control-regex -- matching control characters is the point */
// C0 (newline too), DEL, C1, and Unicode's invisible direction and line controls.
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
/* eslint-enable no-control-regex */

/** One line of text with every control character shown escaped (`\x1b`, `\n`, `\u202e`). */
export function inline(text: string): string {
  return text.replace(UNSAFE, (c) => {
    const code = c.charCodeAt(0);
    if (c === '\n') return '\\n';
    return code <= 0xff
      ? `\\x${code.toString(16).padStart(2, '0')}`
      : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}
