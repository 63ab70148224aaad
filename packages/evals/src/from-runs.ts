import type { AgentReachClient, ListRunsFilter, Run } from '@agent-reach/client';
import { stringify } from 'yaml';
import { DEFAULT_FROM_RUNS_LIMIT, FROM_RUNS_PAGE } from './constants.js';
import { EvalInputError } from './errors.js';
import { runFacts } from './run-facts.js';

const FILTERS = [
  'agent',
  'status',
  'since',
  'until',
  'metadata',
  'trace_id',
  'tool',
  'error_kind',
  'limit',
] as const;

/**
 * A `--from-runs` filter: the query of `GET /v1/runs` (`agent=x&status=succeeded&metadata=k=v`, `,` also
 * separates), and `limit`, the most runs to take (default 200).
 */
export function parseRunFilter(text: string): { filter: ListRunsFilter; limit: number } {
  const filter: ListRunsFilter = {};
  let limit = DEFAULT_FROM_RUNS_LIMIT;
  for (const part of text.split(/[&,]/).filter(Boolean)) {
    const at = part.indexOf('=');
    const key = at < 0 ? part : part.slice(0, at);
    const value = at < 0 ? '' : decodeURIComponent(part.slice(at + 1));
    if (!(FILTERS as readonly string[]).includes(key))
      throw new EvalInputError([`--from-runs: unknown filter "${key}"; use ${FILTERS.join(', ')}`]);
    if (!value) throw new EvalInputError([`--from-runs: ${key} needs a value (${key}=...)`]);
    const number = (what: string) => {
      const n = /^\d+$/.test(value) ? Number(value) : Date.parse(value);
      if (!Number.isFinite(n) || n < 0)
        throw new EvalInputError([
          `--from-runs: ${what} must be ${key === 'limit' ? 'a positive integer' : 'an ISO date or epoch ms'}, got "${value}"`,
        ]);
      return n;
    };
    if (key === 'limit') limit = Math.max(1, number('limit'));
    else if (key === 'since' || key === 'until') filter[key] = number(key);
    else if (key === 'metadata') {
      const eq = value.indexOf('=');
      if (eq < 1) throw new EvalInputError([`--from-runs: metadata must be KEY=VALUE, got "${value}"`]);
      filter.metadata = { [value.slice(0, eq)]: value.slice(eq + 1) };
    } else if (key === 'trace_id') filter.traceId = value;
    else if (key === 'error_kind') filter.errorKind = value;
    else (filter as Record<string, string>)[key] = value;
  }
  return { filter, limit };
}

/** The case a recorded run becomes: its request, and the tool path it took and the status it ended with as expectations. */
export function caseOfRun(run: Run): Record<string, unknown> | undefined {
  if (!run.input) return undefined;
  const facts = runFacts(run);
  return {
    id: run.run_id,
    agent: run.agent,
    input: run.input,
    metadata: { source_run: run.run_id },
    expect: {
      ...(facts.reached.length ? { tools_in_order: facts.reached } : {}),
      status: run.status,
    },
  };
}

/**
 * A dataset (YAML text) from recorded runs, live or archived (the API lists both): replaying it as an
 * eval checks that a change still takes the tool paths production took. Runs not finished, or without
 * an input, are left out.
 */
export async function datasetFromRuns(
  client: AgentReachClient,
  text: string,
  name = 'from-runs',
): Promise<{ yaml: string; cases: number; skipped: number }> {
  const { filter, limit } = parseRunFilter(text);
  const cases: Record<string, unknown>[] = [];
  let skipped = 0;
  let cursor: string | undefined;
  do {
    const page = await client.listRuns({ ...filter, limit: FROM_RUNS_PAGE, ...(cursor ? { cursor } : {}) });
    for (const summary of page.runs) {
      if (cases.length >= limit) break;
      const run = await client.getRun(summary.run_id);
      const c = ['succeeded', 'failed', 'not_converged', 'cancelled'].includes(run.status)
        ? caseOfRun(run)
        : undefined;
      if (c) cases.push(c);
      else skipped++;
    }
    cursor = page.next_cursor;
  } while (cursor && cases.length < limit);
  const yaml = stringify({ name, cases }, { lineWidth: 0 });
  return { yaml, cases: cases.length, skipped };
}
