import type { TemplateContext } from './conversation.js';

const TEMPLATE = /\{\{\s*(.*?)\s*\}\}/g;
const WHOLE_TEMPLATE = /^\{\{\s*((?:(?!\}\}).)*?)\s*\}\}$/;
const QUOTED = /^(['"])(.*)\1$/;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function lookup(path: string, ctx: TemplateContext): unknown {
  const segments = path.replace(/\[(\d+)\]/g, '.$1').split('.');
  const [root, ...rest] = segments;
  const roots: Record<string, unknown> = { results: ctx.results, last: ctx.last, user: ctx.user };
  let value: unknown = root !== undefined && Object.hasOwn(roots, root) ? roots[root] : undefined;
  for (const seg of rest) {
    if (Array.isArray(value) && /^\d+$/.test(seg)) value = value[Number(seg)];
    else if (isRecord(value) && Object.hasOwn(value, seg)) value = value[seg];
    else return undefined;
  }
  return value;
}

/**
 * Evaluates `a.b ?? c.d ?? 'literal'`: the first alternative that resolves to something other
 * than null/undefined. Paths start at `results`, `last` or `user`.
 */
function evaluate(expression: string, ctx: TemplateContext): unknown {
  for (const alternative of expression.split('??')) {
    const alt = alternative.trim();
    const quoted = QUOTED.exec(alt);
    if (quoted) return quoted[2];
    const value = lookup(alt, ctx);
    if (value !== undefined && value !== null) return value;
  }
  return undefined;
}

function asText(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function resolveString(text: string, ctx: TemplateContext, at: string, warnings: string[]): unknown {
  const whole = WHOLE_TEMPLATE.exec(text);
  if (whole) {
    const expression = whole[1] ?? '';
    const value = evaluate(expression, ctx);
    if (value !== undefined) return value;
    warnings.push(`${at}: template {{${expression}}} did not resolve`);
    return '';
  }
  return text.replace(TEMPLATE, (_match, expression: string) => {
    const value = evaluate(expression, ctx);
    if (value !== undefined) return asText(value);
    warnings.push(`${at}: template {{${expression}}} did not resolve`);
    return '';
  });
}

/**
 * Replaces `{{…}}` templates in strings, recursively through arrays and objects. A template that is
 * a whole string value is replaced by the value itself (keeping numbers, objects…); inside longer
 * text it is replaced by its text (JSON for non-strings). Unresolved templates become '' and add a
 * warning naming `at` (the field path).
 */
export function resolveTemplates(
  value: unknown,
  ctx: TemplateContext,
  at: string,
  warnings: string[],
): unknown {
  if (typeof value === 'string') return resolveString(value, ctx, at, warnings);
  if (Array.isArray(value)) return value.map((v, i) => resolveTemplates(v, ctx, `${at}[${i}]`, warnings));
  if (isRecord(value)) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = resolveTemplates(v, ctx, `${at}.${k}`, warnings);
    return out;
  }
  return value;
}

/** Resolves templates in a string and always returns text (for content and tool names). */
export function resolveText(text: string, ctx: TemplateContext, at: string, warnings: string[]): string {
  return asText(resolveString(text, ctx, at, warnings));
}
