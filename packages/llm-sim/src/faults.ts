import { createHash } from 'node:crypto';
import { DEFAULT_TRANSPORT_FAULT_TIMES } from './constants.js';
import type {
  AppliedFault,
  ConnectionResetFault,
  Fault,
  HangFault,
  RateLimitFault,
  Scenario,
  ScenarioTurn,
  ServerErrorFault,
  StreamFault,
} from './types.js';

/** Faults that replace the answer instead of changing it. */
export type TransportFault = RateLimitFault | ServerErrorFault | ConnectionResetFault | HangFault;

/** What to do to one request, decided before answering it. */
export interface FaultPlan {
  /** Answer with this failure instead of the turn. */
  transport?: TransportFault;
  /** Break the streamed answer with this fault. */
  stream?: StreamFault;
  /** Delay before answering, in milliseconds. */
  latencyMs: number;
  /** Indexes of tool calls whose arguments are sent as broken JSON. */
  malformedCalls: number[];
  /** Indexes of tool calls whose names are replaced by a near miss. */
  hallucinatedCalls: number[];
  /** Pad content to this many characters. */
  oversizedChars?: number;
  applied: AppliedFault[];
}

/**
 * Per conversation and turn: how many requests arrived (drives `times` of failures and noise
 * retries) and how many were answered (drives `times` of content faults).
 */
export class FaultCounters {
  private readonly seen = new Map<string, number>();
  private readonly answered = new Map<string, number>();

  /** Counts a request and returns how many came before it. */
  arrive(key: string): number {
    const n = this.seen.get(key) ?? 0;
    this.seen.set(key, n + 1);
    return n;
  }

  answeredCount(key: string): number {
    return this.answered.get(key) ?? 0;
  }

  markAnswered(key: string): void {
    this.answered.set(key, this.answeredCount(key) + 1);
  }
}

/** A deterministic number in [0, 1) from the given parts. */
function draw(...parts: Array<string | number>): number {
  const hex = createHash('sha256').update(parts.join('\0')).digest('hex').slice(0, 12);
  return parseInt(hex, 16) / 2 ** 48;
}

function isTransport(fault: Fault): fault is TransportFault {
  return (
    fault.type === 'rate_limit' ||
    fault.type === 'server_error' ||
    fault.type === 'connection_reset' ||
    fault.type === 'hang'
  );
}

function isStream(fault: Fault): fault is StreamFault {
  return fault.type === 'stream_cut' || fault.type === 'stream_malformed' || fault.type === 'stream_stall';
}

function asList(fault: Fault | Fault[] | undefined): Fault[] {
  if (fault === undefined) return [];
  return Array.isArray(fault) ? fault : [fault];
}

/** Inputs of {@link planFaults}. */
export interface FaultInput {
  scenario: Scenario;
  /** The turn being played, or undefined for planning and past-the-end answers. */
  turn: ScenarioTurn | undefined;
  /** Counter slot: the turn index, or 'plan'. */
  slot: string;
  conversation: string;
  /** Requests at this slot that came before this one. */
  attempt: number;
  /** Answers already sent at this slot. */
  answered: number;
  toolCallCount: number;
  /** The request asked for a streamed answer: stream faults apply (and count) only then. */
  streaming?: boolean;
}

/**
 * Decides the faults for one request. Scripted failures (429, 5xx, reset, hang) consume attempts in
 * the order listed, scenario faults first: `[rate_limit, server_error]` fails the first request with
 * 429, the second with 500 and answers the third. Content faults apply while fewer than `times`
 * answers were sent. Noise draws are a hash of seed, conversation and slot (plus the attempt for
 * 429/500 so that a retry can succeed).
 */
export function planFaults(input: FaultInput): FaultPlan {
  const { scenario, turn, attempt, answered, toolCallCount } = input;
  const plan: FaultPlan = {
    latencyMs: scenario.latency_ms ?? 0,
    malformedCalls: [],
    hallucinatedCalls: [],
    applied: [],
  };
  const scripted = (type: AppliedFault['type']) => plan.applied.push({ type, source: 'script' });
  let offset = 0;
  for (const fault of [...asList(scenario.fault), ...asList(turn?.fault)]) {
    if (isStream(fault)) {
      if (!input.streaming) continue;
      const times = fault.times ?? DEFAULT_TRANSPORT_FAULT_TIMES;
      const free = plan.transport === undefined && plan.stream === undefined;
      if (free && attempt >= offset && attempt < offset + times) {
        plan.stream = fault;
        scripted(fault.type);
      }
      offset += times;
      continue;
    }
    if (isTransport(fault)) {
      const times = fault.times ?? DEFAULT_TRANSPORT_FAULT_TIMES;
      if (
        plan.transport === undefined &&
        plan.stream === undefined &&
        attempt >= offset &&
        attempt < offset + times
      ) {
        plan.transport = fault;
        scripted(fault.type);
      }
      offset += times;
      continue;
    }
    if (answered >= (fault.times ?? Infinity)) continue;
    if (fault.type === 'latency') plan.latencyMs += fault.ms;
    if (fault.type === 'oversized_content')
      plan.oversizedChars = Math.max(plan.oversizedChars ?? 0, fault.chars);
    if (fault.type === 'malformed_arguments') {
      if ((fault.call ?? 0) >= toolCallCount) continue;
      plan.malformedCalls.push(fault.call ?? 0);
    }
    scripted(fault.type);
  }
  addNoise(plan, input);
  return plan;
}

function addNoise(plan: FaultPlan, input: FaultInput): void {
  const noise = input.scenario.noise;
  if (noise === undefined) return;
  const base = [noise.seed ?? 0, input.conversation, input.slot] as const;
  const noisy = (type: AppliedFault['type']) => plan.applied.push({ type, source: 'noise' });
  if (plan.transport === undefined && plan.stream === undefined) {
    if (draw(...base, 'rate_limit', input.attempt) < (noise.rate_limit ?? 0)) {
      plan.transport = { type: 'rate_limit' };
      noisy('rate_limit');
    } else if (draw(...base, 'server_error', input.attempt) < (noise.server_error ?? 0)) {
      plan.transport = { type: 'server_error' };
      noisy('server_error');
    }
  }
  const n = input.toolCallCount;
  if (n === 0) return;
  if (draw(...base, 'malformed_arguments') < (noise.malformed_arguments ?? 0)) {
    plan.malformedCalls.push(Math.floor(draw(...base, 'malformed_arguments', 'call') * n));
    noisy('malformed_arguments');
  }
  if (draw(...base, 'hallucinated_tool') < (noise.hallucinated_tool ?? 0)) {
    plan.hallucinatedCalls.push(Math.floor(draw(...base, 'hallucinated_tool', 'call') * n));
    noisy('hallucinated_tool');
  }
}

/** Cuts JSON text short so that it no longer parses, e.g. `{"city":"上` from `{"city":"上海"}`. */
export function corruptJson(text: string): string {
  let cut = text.slice(0, Math.max(1, Math.floor(text.length * 0.6)));
  for (;;) {
    try {
      JSON.parse(cut);
      cut += '{';
    } catch {
      return cut;
    }
  }
}

/** A plausible wrong tool name: without its `get_` prefix, else with its last vowel dropped. */
export function nearMissName(name: string): string {
  if (name.startsWith('get_') && name.length > 4) return name.slice(4);
  const vowel = name.slice(1).search(/[aeiou](?!.*[aeiou])/);
  const dropped = vowel >= 0 ? name.slice(0, vowel + 1) + name.slice(vowel + 2) : name.slice(0, -1);
  return dropped === '' ? `${name}_` : dropped;
}

/** Pads content with filler lines up to exactly `chars` characters (never shortens it). */
export function padContent(content: string, chars: number): string {
  if (content.length >= chars) return content;
  const filler = 'llm-sim oversized_content filler line to make this answer very large.\n';
  const head = content === '' ? '' : `${content}\n`;
  return (head + filler.repeat(Math.ceil((chars - head.length) / filler.length) + 1)).slice(0, chars);
}
