import { NOISY_DEFAULT_RATES } from './constants.js';
import type { Scenario } from './types.js';

/** One problem found in a scenario, at a field path such as `turns[1].tool_calls[0].name`. */
export interface ScenarioProblem {
  path: string;
  message: string;
}

/** Thrown when a scenario is invalid; lists every problem at once. */
export class ScenarioValidationError extends Error {
  readonly source: string;
  readonly problems: readonly ScenarioProblem[];

  constructor(source: string, problems: ScenarioProblem[]) {
    const lines = problems.map((p) => `  ${p.path === '' ? '(root)' : p.path}: ${p.message}`);
    super(`invalid scenario ${source}:\n${lines.join('\n')}`);
    this.name = 'ScenarioValidationError';
    this.source = source;
    this.problems = problems;
  }
}

type Obj = Record<string, unknown>;

const FAULT_FIELDS: Record<string, readonly string[]> = {
  rate_limit: ['retry_after_s', 'times'],
  server_error: ['status', 'times'],
  connection_reset: ['times'],
  hang: ['times'],
  latency: ['ms', 'times'],
  malformed_arguments: ['call', 'times'],
  oversized_content: ['chars', 'times'],
  stream_cut: ['after_chunks', 'times'],
  stream_malformed: ['after_chunks', 'times'],
  stream_stall: ['after_chunks', 'times'],
};
const SCENARIO_FIELDS = [
  'name',
  'description',
  'plan',
  'latency_ms',
  'noise',
  'fault',
  'turns',
  'random',
  'noisy',
  'schemas',
];
const NOISY_RATE_FIELDS = Object.keys(NOISY_DEFAULT_RATES);
const TURN_FIELDS = ['content', 'refusal', 'reasoning', 'finish_reason', 'tool_calls', 'fault', 'repeat'];
const CALL_FIELDS = ['name', 'arguments', 'id', 'type'];
const FINISH_REASONS = ['stop', 'tool_calls', 'length', 'content_filter'];
const RANDOM_FIELDS = [
  'seed',
  'final',
  'max_calls',
  'unknown_tool',
  'bad_id',
  'missing_type',
  'odd_finish',
  'refusal',
];
const NOISE_FIELDS = ['seed', 'rate_limit', 'server_error', 'malformed_arguments', 'hallucinated_tool'];

function isObj(value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function join(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`;
  return path === '' ? key : `${path}.${key}`;
}

/** Collects problems while walking a raw scenario. */
class Checker {
  readonly problems: ScenarioProblem[] = [];

  fail(path: string, message: string): void {
    this.problems.push({ path, message });
  }

  object(value: unknown, path: string, allowed: readonly string[]): value is Obj {
    if (!isObj(value)) {
      this.fail(path, 'must be an object');
      return false;
    }
    for (const key of Object.keys(value)) {
      if (!allowed.includes(key))
        this.fail(join(path, key), `unknown field (allowed: ${allowed.join(', ')})`);
    }
    return true;
  }

  string(obj: Obj, key: string, path: string, required: boolean): void {
    const value = obj[key];
    if (value === undefined && !required) return;
    if (typeof value !== 'string' || value === '') this.fail(join(path, key), 'must be a non-empty string');
  }

  number(obj: Obj, key: string, path: string, opts: { min: number; max?: number; integer?: boolean }): void {
    const value = obj[key];
    if (value === undefined) return;
    const ok =
      typeof value === 'number' &&
      Number.isFinite(value) &&
      value >= opts.min &&
      (opts.max === undefined || value <= opts.max) &&
      (!opts.integer || Number.isInteger(value));
    if (!ok) {
      const kind = opts.integer ? 'an integer' : 'a number';
      const range = opts.max === undefined ? `>= ${opts.min}` : `between ${opts.min} and ${opts.max}`;
      this.fail(join(path, key), `must be ${kind} ${range}`);
    }
  }

  required(obj: Obj, key: string, path: string): boolean {
    if (obj[key] !== undefined) return true;
    this.fail(join(path, key), 'is required');
    return false;
  }
}

function checkFaults(c: Checker, value: unknown, path: string): void {
  if (value === undefined) return;
  const list = Array.isArray(value) ? value : [value];
  list.forEach((fault, i) => {
    const at = Array.isArray(value) ? join(path, i) : path;
    if (!isObj(fault)) return c.fail(at, 'must be an object with a type');
    const type = fault.type;
    const fields = typeof type === 'string' ? FAULT_FIELDS[type] : undefined;
    if (fields === undefined) {
      return c.fail(join(at, 'type'), `must be one of ${Object.keys(FAULT_FIELDS).join(', ')}`);
    }
    c.object(fault, at, ['type', ...fields]);
    c.number(fault, 'times', at, { min: 1, integer: true });
    c.number(fault, 'retry_after_s', at, { min: 0 });
    c.number(fault, 'status', at, { min: 500, max: 599, integer: true });
    c.number(fault, 'call', at, { min: 0, integer: true });
    c.number(fault, 'after_chunks', at, { min: 0, integer: true });
    if (type === 'latency' && c.required(fault, 'ms', at)) c.number(fault, 'ms', at, { min: 0 });
    if (type === 'oversized_content' && c.required(fault, 'chars', at)) {
      c.number(fault, 'chars', at, { min: 1, integer: true });
    }
  });
}

function checkToolCalls(c: Checker, value: unknown, path: string): void {
  if (!Array.isArray(value) || value.length === 0) return c.fail(path, 'must be a non-empty array');
  value.forEach((call: unknown, i) => {
    const at = join(path, i);
    if (!c.object(call, at, CALL_FIELDS)) return;
    c.string(call, 'name', at, true);
    for (const key of ['id', 'type']) {
      const v = call[key];
      if (v !== undefined && v !== null && typeof v !== 'string')
        c.fail(join(at, key), 'must be a string or null');
    }
    const args = call.arguments;
    if (args !== undefined && typeof args !== 'string' && !isObj(args)) {
      c.fail(join(at, 'arguments'), 'must be an object or a string');
    }
  });
}

function checkTurn(c: Checker, turn: unknown, path: string, isLast: boolean): void {
  if (!c.object(turn, path, TURN_FIELDS)) return;
  if (turn.content === undefined && turn.tool_calls === undefined && turn.refusal === undefined) {
    c.fail(path, 'needs content, tool_calls or refusal');
  }
  if (turn.content !== undefined && typeof turn.content !== 'string') {
    c.fail(join(path, 'content'), 'must be a string');
  }
  if (turn.refusal !== undefined) c.string(turn, 'refusal', path, false);
  if (turn.reasoning !== undefined) c.string(turn, 'reasoning', path, false);
  if (turn.finish_reason !== undefined && !FINISH_REASONS.includes(String(turn.finish_reason))) {
    c.fail(join(path, 'finish_reason'), `must be one of ${FINISH_REASONS.join(', ')}`);
  }
  if (turn.tool_calls !== undefined) checkToolCalls(c, turn.tool_calls, join(path, 'tool_calls'));
  checkFaults(c, turn.fault, join(path, 'fault'));
  if (turn.repeat !== undefined) {
    if (typeof turn.repeat !== 'boolean') c.fail(join(path, 'repeat'), 'must be a boolean');
    else if (turn.repeat && !isLast) c.fail(join(path, 'repeat'), 'is only allowed on the last turn');
  }
}

/**
 * Checks a raw scenario (parsed YAML/JSON or a literal) and returns a private copy of it.
 * Throws {@link ScenarioValidationError} naming `source` and every bad field.
 */
export function validateScenario(raw: unknown, source: string): Scenario {
  const c = new Checker();
  if (c.object(raw, '', SCENARIO_FIELDS)) {
    c.required(raw, 'name', '');
    c.string(raw, 'name', '', false);
    if (raw.description !== undefined && typeof raw.description !== 'string') {
      c.fail('description', 'must be a string');
    }
    if (raw.plan !== undefined) {
      if (!Array.isArray(raw.plan)) c.fail('plan', 'must be an array of strings or { title, tool? }');
      else {
        raw.plan.forEach((step: unknown, i) => {
          if (typeof step === 'string') return;
          if (!c.object(step, join('plan', i), ['title', 'tool'])) return;
          c.string(step, 'title', join('plan', i), true);
          c.string(step, 'tool', join('plan', i), false);
        });
      }
    }
    c.number(raw, 'latency_ms', '', { min: 0 });
    if (raw.noise !== undefined && c.object(raw.noise, 'noise', NOISE_FIELDS)) {
      c.number(raw.noise, 'seed', 'noise', { min: Number.MIN_SAFE_INTEGER });
      for (const key of NOISE_FIELDS.slice(1)) c.number(raw.noise, key, 'noise', { min: 0, max: 1 });
    }
    if (raw.random !== undefined && c.object(raw.random, 'random', RANDOM_FIELDS)) {
      c.number(raw.random, 'seed', 'random', { min: Number.MIN_SAFE_INTEGER });
      c.number(raw.random, 'max_calls', 'random', { min: 1, max: 64, integer: true });
      for (const key of RANDOM_FIELDS.filter((k) => k !== 'seed' && k !== 'max_calls')) {
        c.number(raw.random, key, 'random', { min: 0, max: 1 });
      }
    }
    if (raw.noisy !== undefined && c.object(raw.noisy, 'noisy', ['seed', 'rates'])) {
      c.number(raw.noisy, 'seed', 'noisy', { min: Number.MIN_SAFE_INTEGER });
      const rates = raw.noisy.rates;
      if (rates !== undefined && c.object(rates, 'noisy.rates', NOISY_RATE_FIELDS)) {
        for (const key of NOISY_RATE_FIELDS) c.number(rates, key, 'noisy.rates', { min: 0, max: 1 });
      }
      if (raw.random !== undefined) c.fail('noisy', 'cannot be combined with random');
    }
    checkFaults(c, raw.fault, 'fault');
    const schemas = raw.schemas;
    const names = typeof schemas === 'object' && schemas !== null ? Object.keys(schemas) : [];
    if (schemas !== undefined && c.object(schemas, 'schemas', names)) {
      for (const name of names) checkTurn(c, schemas[name], join('schemas', name), false);
    }
    if (c.required(raw, 'turns', '')) {
      if (!Array.isArray(raw.turns)) c.fail('turns', 'must be an array');
      else raw.turns.forEach((t, i, all) => checkTurn(c, t, join('turns', i), i === all.length - 1));
    }
  }
  if (c.problems.length > 0) throw new ScenarioValidationError(source, c.problems);
  return structuredClone(raw) as Scenario;
}
