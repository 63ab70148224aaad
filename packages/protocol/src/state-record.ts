/*
 * How a run's state (without its messages) is stored: a base, the whole state as one JSON object, then
 * one line per checkpoint since that base saying what changed. A checkpoint appends its line (Redis
 * APPEND) instead of writing the whole state again; the state is rebuilt by applying the lines in order,
 * and from time to time a checkpoint writes a new base instead (compaction).
 *
 *   <base JSON>\n<delta JSON>\n<delta JSON>...
 *
 * A delta is an object of up to three members, each optional, applied in this order:
 *   "-": [field, ...]              fields the state no longer has
 *   "$": {field: value, ...}       fields set to a new value (whole)
 *   "+": {field: [item, ...], ...} items appended to an array field that only grew
 *
 * Deltas are over the state's top-level fields, whatever they are, so a field added to the state later
 * needs nothing here. JSON text never holds a raw line feed, so lines split without ambiguity. A record of
 * the earlier format (one JSON object, no deltas) is a base alone and reads as before.
 */

/** A record's state lines folded into the state: the base with every delta applied, in order. */
export function foldStateRecord(record: string): Record<string, unknown> {
  const cut = record.indexOf('\n');
  if (cut < 0) return parseObject(record, 'base');
  const lines = record.split('\n');
  const state = parseObject(lines[0] as string, 'base');
  for (let i = 1; i < lines.length; i += 1)
    applyStateDelta(state, parseObject(lines[i] as string, `delta ${i}`));
  return state;
}

/** Applies one delta line to a state (in place). */
export function applyStateDelta(state: Record<string, unknown>, delta: Record<string, unknown>): void {
  const removed = delta['-'];
  if (Array.isArray(removed)) for (const field of removed) delete state[String(field)];
  const set = delta.$;
  if (isObject(set)) for (const [field, value] of Object.entries(set)) state[field] = value;
  const appended = delta['+'];
  if (isObject(appended)) {
    for (const [field, items] of Object.entries(appended)) {
      const current = state[field];
      if (!Array.isArray(current) || !Array.isArray(items)) {
        throw new StateRecordError(`delta appends to ${field}, which is not an array in the state`);
      }
      current.push(...(items as unknown[]));
    }
  }
}

/** A stored state that is not a base followed by deltas. */
export class StateRecordError extends Error {
  readonly code = 'STATE_RECORD_MALFORMED';
  constructor(message: string) {
    super(`stored run state: ${message}`);
    this.name = 'StateRecordError';
  }
}

function parseObject(line: string, what: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch (err) {
    throw new StateRecordError(`${what} is not JSON (${(err as Error).message})`);
  }
  if (!isObject(parsed)) throw new StateRecordError(`${what} is not a JSON object`);
  return parsed;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** When a writer writes a new base instead of a delta. */
export interface StateDeltaLimits {
  /** Deltas after a base at most. Default 1000. */
  maxDeltas?: number;
  /** A new base once the deltas since the last one hold more bytes than this many times the base. Default 2. */
  maxDeltaRatio?: number;
}

/**
 * Writes one run's state record as a base and deltas: `next` returns what to write for the state as it is
 * now, given what this writer wrote before (the record it is applied to holds exactly that): a base (a
 * JSON object, to be SET), a delta line starting with `\n` (to be APPENDed), or '' when nothing changed.
 * The writer's first write is a base, so a writer never depends on a record another process wrote.
 */
export class StateDeltaWriter {
  /** JSON of each scalar or object field as written. */
  #fields = new Map<string, string>();
  /** JSON of each item of each array field as written. */
  #arrays = new Map<string, string[]>();
  #written = false;
  #deltas = 0;
  #deltaBytes = 0;
  #baseBytes = 0;
  readonly #maxDeltas: number;
  readonly #maxDeltaRatio: number;

  constructor(limits: StateDeltaLimits = {}) {
    this.#maxDeltas = limits.maxDeltas ?? 1000;
    this.#maxDeltaRatio = limits.maxDeltaRatio ?? 2;
  }

  /** What to write for `state`; `base` forces a new base (the state's record is rewritten whole). */
  next(state: Record<string, unknown>, base = false): string {
    const fields = new Map<string, string>();
    const arrays = new Map<string, string[]>();
    for (const [field, value] of Object.entries(state)) {
      if (value === undefined) continue;
      if (Array.isArray(value))
        arrays.set(
          field,
          value.map((item) => JSON.stringify(item) ?? 'null'),
        );
      else fields.set(field, JSON.stringify(value));
    }
    const delta = !base && this.#written ? this.#delta(fields, arrays) : undefined;
    this.#fields = fields;
    this.#arrays = arrays;
    if (delta === '') return delta;
    if (delta !== undefined) {
      this.#deltas += 1;
      this.#deltaBytes += delta.length;
      if (this.#deltas <= this.#maxDeltas && this.#deltaBytes <= this.#baseBytes * this.#maxDeltaRatio) {
        return delta;
      }
    }
    const whole = baseJson(fields, arrays);
    this.#written = true;
    this.#deltas = 0;
    this.#deltaBytes = 0;
    this.#baseBytes = whole.length;
    return whole;
  }

  /** The delta line from what was written to `fields`/`arrays` ('' when they are the same). */
  #delta(fields: Map<string, string>, arrays: Map<string, string[]>): string {
    const removed: string[] = [];
    for (const field of this.#fields.keys()) if (!fields.has(field)) removed.push(field);
    for (const field of this.#arrays.keys()) if (!arrays.has(field)) removed.push(field);
    const set: string[] = [];
    const appended: string[] = [];
    for (const [field, json] of fields) {
      if (this.#fields.get(field) !== json) set.push(`${JSON.stringify(field)}:${json}`);
    }
    for (const [field, items] of arrays) {
      const before = this.#arrays.get(field);
      if (before && before.length <= items.length && before.every((item, i) => items[i] === item)) {
        if (items.length > before.length) {
          appended.push(`${JSON.stringify(field)}:[${items.slice(before.length).join(',')}]`);
        }
      } else {
        set.push(`${JSON.stringify(field)}:[${items.join(',')}]`);
      }
    }
    if (removed.length === 0 && set.length === 0 && appended.length === 0) return '';
    const parts: string[] = [];
    if (removed.length > 0) parts.push(`"-":${JSON.stringify(removed)}`);
    if (set.length > 0) parts.push(`"$":{${set.join(',')}}`);
    if (appended.length > 0) parts.push(`"+":{${appended.join(',')}}`);
    return `\n{${parts.join(',')}}`;
  }
}

/** The whole state as one JSON object, from its fields' JSON. */
function baseJson(fields: Map<string, string>, arrays: Map<string, string[]>): string {
  const parts: string[] = [];
  for (const [field, json] of fields) parts.push(`${JSON.stringify(field)}:${json}`);
  for (const [field, items] of arrays) parts.push(`${JSON.stringify(field)}:[${items.join(',')}]`);
  return `{${parts.join(',')}}`;
}
