/** `{{ name.path }}` placeholders; a name is letters, digits, `_` and `-`, a path joins names with dots. */
const PLACEHOLDER = /\{\{\s*([A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*)\s*\}\}/g;

/**
 * Fills the placeholders of a template from `values`: `{{scheduled_at}}`, `{{payload.order.id}}`. A string
 * is put in as it is, another value as JSON; a path that leads nowhere becomes the empty string. Only own
 * properties are followed (no `__proto__`, no `constructor`).
 */
export function renderTemplate(template: string, values: Record<string, unknown>): string {
  return template.replace(PLACEHOLDER, (_match, path: string) => {
    let value: unknown = values;
    for (const part of path.split('.')) {
      if (value === null || typeof value !== 'object' || !Object.hasOwn(value, part)) return '';
      value = (value as Record<string, unknown>)[part];
    }
    if (value === undefined || value === null) return '';
    return typeof value === 'string' ? value : JSON.stringify(value);
  });
}
