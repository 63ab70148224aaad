import { foldAliases, type ArgumentAliases, type FoldedAliases } from './reach-policy.js';

/**
 * A tool's aliases with a run's own over them (a variant's, carried by the call's job): for an argument
 * both name, the run's entry wins for an alias both define. A run's table that is not an object of
 * objects of strings (it crossed Redis) is ignored: aliases only rewrite values before validation, so
 * dropping them never lets anything through.
 */
export function withRunAliases(tool: FoldedAliases | undefined, run: unknown): FoldedAliases | undefined {
  const own = foldAliases(wellFormedAliases(run));
  if (own === undefined) return tool;
  if (tool === undefined) return own;
  const merged = new Map<string, ReadonlyMap<string, string>>(tool);
  for (const [field, table] of own) merged.set(field, new Map([...(tool.get(field) ?? []), ...table]));
  return merged;
}

function wellFormedAliases(value: unknown): ArgumentAliases | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const tables = Object.values(value as Record<string, unknown>);
  const ok = tables.every(
    (t) =>
      typeof t === 'object' &&
      t !== null &&
      !Array.isArray(t) &&
      Object.values(t as Record<string, unknown>).every((v) => typeof v === 'string'),
  );
  return ok ? (value as ArgumentAliases) : undefined;
}
