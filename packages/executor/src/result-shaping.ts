/**
 * Fits a tool's result into its model-facing budget. Trimming keeps the shape (long strings cut, long
 * arrays shortened with a marker) so the model can still read fields; only if that cannot fit does the
 * content become a plain preview. The caller keeps the full JSON under a `ref`.
 */
export interface Shaped {
  content: unknown;
  truncated: boolean;
  /** The full serialized content, present only when truncated. */
  full?: string;
}

const ITEM_LIMITS = [50, 20, 10, 5, 2, 1];

export function shapeResult(content: unknown, budgetChars: number): Shaped {
  const full = JSON.stringify(content ?? null);
  if (full.length <= budgetChars) return { content, truncated: false };
  const stringLimits = [Math.floor(budgetChars / 2), Math.floor(budgetChars / 4), 200, 80];
  for (const maxString of stringLimits) {
    for (const maxItems of ITEM_LIMITS) {
      const trimmed = trim(content, maxString, maxItems);
      if (JSON.stringify(trimmed).length <= budgetChars) return { content: trimmed, truncated: true, full };
    }
  }
  return { content: preview(full, budgetChars), truncated: true, full };
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
