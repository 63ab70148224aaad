import type { ErrorObject } from 'ajv';
import { closestName } from '../tools/suggest.js';

/**
 * An ajv error of a configuration file in words, after the field's path: a field the schema does not know
 * is `unknown field "tols" (did you mean "tools"?)`, the guess taken from the fields the schema declares
 * there (ajv must be compiled with `verbose: true` for it to see them).
 */
export function describeSchemaError(e: ErrorObject): string {
  if (e.keyword === 'additionalProperties') {
    const field = String((e.params as { additionalProperty: string }).additionalProperty);
    const guess = closestName(field, declaredFields(e));
    return `unknown field "${field}"${guess ? ` (did you mean "${guess}"?)` : ''}`;
  }
  if (e.keyword === 'enum') {
    const allowed = (e.params as { allowedValues?: unknown[] }).allowedValues ?? [];
    return `must be one of ${allowed.map((v) => JSON.stringify(v)).join(', ')}`;
  }
  return e.message ?? 'is invalid';
}

/** The fields an unknown field's did-you-mean named, per object path, when that field is also missing. */
export function misspeltRequired(errors: readonly ErrorObject[]): Set<string> {
  const named = new Set<string>();
  for (const e of errors) {
    if (e.keyword !== 'additionalProperties') continue;
    const field = String((e.params as { additionalProperty: string }).additionalProperty);
    const guess = closestName(field, declaredFields(e));
    if (guess) named.add(`${e.instancePath}\n${guess}`);
  }
  return named;
}

/**
 * Whether `e` only repeats what a did-you-mean already says: a required field reported missing because it
 * was misspelt (`tols` for `tools`) is one problem, not two.
 */
export function repeatsMisspelt(e: ErrorObject, misspelt: ReadonlySet<string>): boolean {
  if (e.keyword !== 'required') return false;
  const missing = String((e.params as { missingProperty: string }).missingProperty);
  return misspelt.has(`${e.instancePath}\n${missing}`);
}

function declaredFields(e: ErrorObject): string[] {
  const properties = (e.parentSchema as { properties?: Record<string, unknown> } | undefined)?.properties;
  return Object.keys(properties ?? {});
}
