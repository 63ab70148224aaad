import { constants } from '@agent-reach/shared';

/**
 * Fits a tool's result into its model-facing budget, in stages: a result that fits is left alone; one
 * that does not is first summarised (long arrays become their length, the keys of their items and the
 * first items), then trimmed keeping the shape (long strings cut, long arrays shortened with a marker) so
 * the model can still read fields; only if that cannot fit does the content become a plain preview. The
 * caller keeps the full JSON under a `ref` and tells the model so (`truncationNotice`).
 */
export interface Shaped {
  content: unknown;
  truncated: boolean;
  /** How the content was cut, present only when truncated. */
  stage?: 'summary' | 'trimmed' | 'preview';
  /** The full serialized content, present only when truncated. */
  full?: string;
}

export interface ShapeOptions {
  /** Characters the serialized content may take. */
  budgetChars: number;
  /** Summarise long arrays before trimming. Default `DEFAULT_SUMMARIZE_RESULTS`. */
  summarize?: boolean;
}

const ITEM_LIMITS = [50, 20, 10, 5, 2, 1];

export function shapeResult(content: unknown, options: ShapeOptions | number): Shaped {
  const { budgetChars, summarize = constants.DEFAULT_SUMMARIZE_RESULTS } =
    typeof options === 'number' ? { budgetChars: options } : options;
  const full = JSON.stringify(content ?? null);
  if (full.length <= budgetChars) return { content, truncated: false };
  const summary = summarize ? summarise(content) : content;
  if (summarize && JSON.stringify(summary).length <= budgetChars) {
    return { content: summary, truncated: true, stage: 'summary', full };
  }
  const stringLimits = [Math.floor(budgetChars / 2), Math.floor(budgetChars / 4), 200, 80];
  for (const maxString of stringLimits) {
    for (const maxItems of ITEM_LIMITS) {
      const trimmed = trim(summary, maxString, maxItems);
      if (JSON.stringify(trimmed).length <= budgetChars)
        return { content: trimmed, truncated: true, stage: 'trimmed', full };
    }
  }
  return { content: preview(full, budgetChars), truncated: true, stage: 'preview', full };
}

const STAGE_TEXT = {
  summary: 'long lists are summarised as their count, item keys and first items',
  trimmed: 'long lists and strings are shortened',
  preview: 'only the start of its JSON is shown',
} as const;

/** What the model is told of a cut result: how it was cut and how to fetch the rest. */
export function truncationNotice(shaped: Shaped, budgetChars: number, ref: string): string {
  const how = STAGE_TEXT[shaped.stage ?? 'trimmed'];
  const size = shaped.full === undefined ? '' : ` of ${shaped.full.length}`;
  return (
    `the result was cut to fit ${budgetChars}${size} characters (${how}); fetch the rest with ` +
    `get_full_result({"ref":"${ref}","offset":0}), one page at a time, following next_offset`
  );
}

/** Long arrays, at any depth, as their length, the keys of their items and their first items. */
function summarise(value: unknown): unknown {
  if (Array.isArray(value)) {
    if (value.length <= constants.RESULT_SUMMARY_MIN_ITEMS) return value.map(summarise);
    const keys = new Set<string>();
    for (const item of value) {
      if (typeof item === 'object' && item !== null && !Array.isArray(item))
        for (const k of Object.keys(item)) keys.add(k);
      if (keys.size >= 50) break;
    }
    return {
      summary: 'array',
      count: value.length,
      ...(keys.size > 0 ? { item_keys: [...keys] } : {}),
      first_items: value.slice(0, constants.RESULT_SUMMARY_FIRST_ITEMS).map(summarise),
    };
  }
  if (typeof value === 'object' && value !== null) {
    // No prototype: a `__proto__` key of the tool's data stays a field.
    const out = Object.create(null) as Record<string, unknown>;
    for (const [key, v] of Object.entries(value)) out[key] = summarise(v);
    return out;
  }
  return value;
}

/** The start of the full JSON as one string that fits the budget once serialized. */
function preview(full: string, budgetChars: number): { preview: string } {
  let text = full.slice(0, Math.max(0, budgetChars - 40));
  // Serializing escapes quotes and backslashes again: text full of them can double in size.
  while (text.length > 0 && JSON.stringify({ preview: text }).length > budgetChars) {
    text = text.slice(0, Math.floor(text.length * 0.9));
  }
  return { preview: text };
}

function trim(value: unknown, maxString: number, maxItems: number): unknown {
  if (typeof value === 'string') {
    return value.length <= maxString
      ? value
      : `${value.slice(0, maxString)}… (${value.length - maxString} more chars)`;
  }
  if (Array.isArray(value)) {
    const kept = value.slice(0, maxItems).map((v) => trim(v, maxString, maxItems));
    if (value.length > maxItems) kept.push(`… ${value.length - maxItems} more items`);
    return kept;
  }
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [key, v] of Object.entries(value)) out[key] = trim(v, maxString, maxItems);
    return out;
  }
  return value;
}
