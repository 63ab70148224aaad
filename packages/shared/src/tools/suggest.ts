import { distance } from 'fastest-levenshtein';

/**
 * The candidate closest to `name`, or undefined when none is plausibly what was meant.
 * Plausible: within half the name's length in edits, or sharing a word (`get_weather` → `query_weather`).
 */
export function closestName(name: string, candidates: Iterable<string>): string | undefined {
  const words = new Set(
    name
      .toLowerCase()
      .split(/[_-]+/)
      .filter((w) => w.length > 2),
  );
  let best: { name: string; score: number } | undefined;
  for (const candidate of candidates) {
    const d = distance(name.toLowerCase(), candidate.toLowerCase());
    const shared = candidate
      .toLowerCase()
      .split(/[_-]+/)
      .some((w) => words.has(w));
    const plausible = d <= Math.ceil(Math.max(name.length, candidate.length) / 2) || shared;
    if (!plausible) continue;
    const score = d - (shared ? 3 : 0);
    if (best === undefined || score < best.score) best = { name: candidate, score };
  }
  return best?.name;
}
