import { isDeepStrictEqual } from 'node:util';
import type { Ajv } from './ajv.js';
import type { Matcher, MatchersByPath, MatcherSpec } from './types.js';

const MISSING = Symbol('missing');

/** The value at a dotted path (`a.b.0`; `$` is the value itself), or MISSING. */
export function valueAt(value: unknown, path: string): unknown {
  if (path === '$') return value;
  let v: unknown = value;
  for (const key of path.split('.')) {
    if (v === null || typeof v !== 'object' || !Object.hasOwn(v, key)) return MISSING;
    v = (v as Record<string, unknown>)[key];
  }
  return v;
}

const show = (v: unknown) => (v === MISSING ? 'missing' : (JSON.stringify(v)?.slice(0, 200) ?? String(v)));

/** Why a value fails a matcher (a scalar: equals it), or undefined when every part of it holds. */
export function matchProblem(value: unknown, matcher: MatcherSpec, ajv: Ajv): string | undefined {
  const m: Matcher = matcher !== null && typeof matcher === 'object' ? matcher : { equals: matcher };
  if (value === MISSING) return 'is missing';
  if ('equals' in m && !isDeepStrictEqual(value, m.equals))
    return `is ${show(value)}, expected ${show(m.equals)}`;
  if (m.regex !== undefined) {
    const text = typeof value === 'string' ? value : JSON.stringify(value);
    if (!new RegExp(m.regex, 'u').test(text)) return `is ${show(value)}, which does not match /${m.regex}/`;
  }
  if (m.min !== undefined || m.max !== undefined) {
    if (typeof value !== 'number') return `is ${show(value)}, not a number`;
    if (m.min !== undefined && value < m.min) return `is ${value}, below ${m.min}`;
    if (m.max !== undefined && value > m.max) return `is ${value}, above ${m.max}`;
  }
  if (m.schema !== undefined) {
    const validate = ajv.compile(m.schema);
    if (!validate(value))
      return `is ${show(value)}, which does not match its schema: ${ajv.errorsText(validate.errors)}`;
  }
  return undefined;
}

/** Why a value fails matchers by path: `path: problem` each, empty when all hold. */
export function matchersProblems(value: unknown, ms: MatchersByPath, ajv: Ajv): string[] {
  return Object.entries(ms).flatMap(([p, m]) => {
    const problem = matchProblem(valueAt(value, p), m, ajv);
    return problem ? [`${p} ${problem}`] : [];
  });
}
