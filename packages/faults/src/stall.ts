import { existsSync, readFileSync } from 'node:fs';
import type { StartRecord } from './fault-tools.js';
import { runOfRequest, type ModelRequest } from './fault-check.js';

/** How long the runs stood still after a fault, from what they did: tool executions started, model requests. */
export interface StallFigures {
  /** From the fault to the first tool execution started after it, in ms (undefined: none started). */
  firstToolStartMs: number | undefined;
  /** Per run that did anything after the fault: its longest pause that ended after the fault, in ms. */
  runStallsMs: number[];
}

/**
 * A run's pause is the time between two consecutive things it did (a tool execution starting, a model
 * request arriving); the part of a pause before the fault is not counted. Runs that did nothing after the
 * fault (ended before it) have no figure.
 */
export function stallFigures(input: {
  faultAt: number;
  startsFile: string;
  requests: ReadonlyArray<ModelRequest & { at?: string }>;
}): StallFigures {
  const { faultAt } = input;
  const activity = new Map<string, number[]>();
  const add = (runId: string, at: number) => {
    const list = activity.get(runId) ?? [];
    list.push(at);
    activity.set(runId, list);
  };
  let firstToolStart: number | undefined;
  if (existsSync(input.startsFile)) {
    for (const line of readFileSync(input.startsFile, 'utf8').split('\n')) {
      let record: StartRecord;
      try {
        record = JSON.parse(line) as StartRecord;
      } catch {
        continue;
      }
      add(record.runId, record.at);
      if (record.at >= faultAt && (firstToolStart === undefined || record.at < firstToolStart))
        firstToolStart = record.at;
    }
  }
  for (const r of input.requests) {
    const runId = runOfRequest(r.body);
    const at = r.at ? Date.parse(r.at) : NaN;
    if (runId !== undefined && Number.isFinite(at)) add(runId, at);
  }
  const runStallsMs: number[] = [];
  for (const times of activity.values()) {
    times.sort((a, b) => a - b);
    let longest: number | undefined;
    for (let i = 1; i < times.length; i++) {
      const at = times[i]!;
      if (at < faultAt) continue;
      const pause = at - Math.max(times[i - 1]!, faultAt);
      longest = Math.max(longest ?? 0, pause);
    }
    if (longest !== undefined) runStallsMs.push(longest);
  }
  runStallsMs.sort((a, b) => a - b);
  return {
    firstToolStartMs: firstToolStart === undefined ? undefined : firstToolStart - faultAt,
    runStallsMs,
  };
}

/** The figures as report lines: p50, p90 and max of the runs' stalls. */
export function stallReport(s: StallFigures): Record<string, string | number> {
  const q = (p: number) =>
    s.runStallsMs[Math.min(s.runStallsMs.length - 1, Math.floor(p * s.runStallsMs.length))];
  return {
    'fault → first tool execution started ms': s.firstToolStartMs ?? 'none',
    'runs active after the fault': s.runStallsMs.length,
    'run stall after the fault p50 / p90 / max ms':
      s.runStallsMs.length === 0 ? 'none' : `${q(0.5)} / ${q(0.9)} / ${s.runStallsMs.at(-1)}`,
  };
}
