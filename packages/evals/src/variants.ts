import { readFile } from 'node:fs/promises';
import { EVAL_VARIANT_NAME_PATTERN } from '@agent-reach/protocol';
import { EvalInputError } from './errors.js';
import type { EvalVariant } from './types.js';

/**
 * A variant from `--variant NAME=OVERRIDES`: OVERRIDES is a JSON object, or a file (JSON or YAML) holding
 * one. What the overrides may hold is checked by the platform when the first run starts.
 */
export async function parseVariant(text: string): Promise<EvalVariant> {
  const at = text.indexOf('=');
  const name = at < 0 ? text : text.slice(0, at);
  const spec = at < 0 ? '' : text.slice(at + 1).trim();
  if (!EVAL_VARIANT_NAME_PATTERN.test(name))
    throw new EvalInputError([`--variant ${text}: the name must be 1-64 of A-Z a-z 0-9 _ . - before "="`]);
  if (!spec) return { name, overrides: {} };
  let overrides: unknown;
  if (spec.startsWith('{')) {
    try {
      overrides = JSON.parse(spec);
    } catch (err) {
      throw new EvalInputError([`--variant ${name}: the overrides are not JSON: ${(err as Error).message}`]);
    }
  } else {
    let content: string;
    try {
      content = await readFile(spec, 'utf8');
    } catch (err) {
      throw new EvalInputError([`--variant ${name}: cannot read ${spec}: ${(err as Error).message}`]);
    }
    try {
      const { parse } = await import('yaml');
      overrides = parse(content) as unknown;
    } catch (err) {
      throw new EvalInputError([
        `--variant ${name}: ${spec} is neither JSON nor YAML: ${(err as Error).message}`,
      ]);
    }
  }
  if (overrides === null || typeof overrides !== 'object' || Array.isArray(overrides))
    throw new EvalInputError([
      `--variant ${name}: the overrides must be an object, e.g. {"model": "gpt-4o"}`,
    ]);
  return { name, overrides: overrides as Record<string, unknown> };
}

/** The variants of the command line, `baseline` with no overrides when none is given; names unique. */
export async function parseVariants(texts: readonly string[]): Promise<EvalVariant[]> {
  if (texts.length === 0) return [{ name: 'baseline', overrides: {} }];
  const variants = await Promise.all(texts.map(parseVariant));
  const seen = new Set<string>();
  for (const v of variants) {
    if (seen.has(v.name))
      throw new EvalInputError([`--variant ${v.name}: given twice; variant names are unique`]);
    seen.add(v.name);
  }
  return variants;
}
