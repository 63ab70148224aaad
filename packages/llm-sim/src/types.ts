/** A scripted tool call; `name` and string values inside `arguments` may hold `{{…}}` templates. */
export interface ScriptedToolCall {
  /** Tool name the model "calls" (may be wrong on purpose: hallucinated tools are just scripts). */
  name: string;
  /**
   * Arguments. An object (or a template that resolves to one) is sent as its JSON text;
   * a string is sent verbatim, so a script can send broken JSON on purpose. Default `{}`.
   */
  arguments?: Record<string, unknown> | string;
  /**
   * The call's id as sent. Default: a stable id from conversation, turn and index. `''` sends an empty
   * id and `null` leaves the field out: the id bugs some OpenAI-compatible servers have.
   */
  id?: string | null;
  /** The call's `type` as sent. Default `'function'`; `null` leaves the field out. */
  type?: string | null;
}

/** Answer with HTTP 429 and a `retry-after` header. */
export interface RateLimitFault {
  type: 'rate_limit';
  /** Value of the `retry-after` header, in seconds. Default 1. */
  retry_after_s?: number;
  /** Fail only the first N requests at this turn of a conversation. Default 1. */
  times?: number;
}

/** Answer with an HTTP 5xx `server_error`. */
export interface ServerErrorFault {
  type: 'server_error';
  /** HTTP status, 500–599. Default 500. */
  status?: number;
  /** Fail only the first N requests at this turn of a conversation. Default 1. */
  times?: number;
}

/** Destroy the socket without answering. */
export interface ConnectionResetFault {
  type: 'connection_reset';
  /** Fail only the first N requests at this turn of a conversation. Default 1. */
  times?: number;
}

/** Never answer (until the client gives up or the simulator closes). */
export interface HangFault {
  type: 'hang';
  /** Fail only the first N requests at this turn of a conversation. Default 1. */
  times?: number;
}

/** Delay the answer. */
export interface LatencyFault {
  type: 'latency';
  /** Added delay in milliseconds. */
  ms: number;
  /** Delay only the first N answers at this turn of a conversation. Default: every answer. */
  times?: number;
}

/** Send one tool call's arguments as truncated, unparseable JSON. */
export interface MalformedArgumentsFault {
  type: 'malformed_arguments';
  /** Index of the tool call to corrupt. Default 0. */
  call?: number;
  /** Corrupt only the first N answers at this turn of a conversation. Default: every answer. */
  times?: number;
}

/** Pad the answer's content to a given size. */
export interface OversizedContentFault {
  type: 'oversized_content';
  /** Total content length in characters. */
  chars: number;
  /** Pad only the first N answers at this turn of a conversation. Default: every answer. */
  times?: number;
}

/**
 * Break a streamed answer (`stream: true`) after `after_chunks` chunks: `stream_cut` destroys the
 * connection, `stream_malformed` sends a chunk that is not JSON, `stream_stall` stops sending and keeps
 * the connection open until the client gives up. Ignored (and not counted) for non-streamed requests.
 */
export interface StreamFault {
  type: 'stream_cut' | 'stream_malformed' | 'stream_stall';
  /** Chunks sent before the fault. Default 2. */
  after_chunks?: number;
  /** Fail only the first N streamed requests at this turn of a conversation. Default 1. */
  times?: number;
}

/** A scripted fault, on one turn or on the whole scenario. */
export type Fault =
  | RateLimitFault
  | ServerErrorFault
  | ConnectionResetFault
  | HangFault
  | LatencyFault
  | MalformedArgumentsFault
  | OversizedContentFault
  | StreamFault;

/** Kinds of fault that can show up in a recorded request (scripted or drawn from noise). */
export type FaultType = Fault['type'] | 'hallucinated_tool';

/**
 * Random faults, each a probability in [0, 1] per request. Draws are deterministic: a hash of
 * seed + conversation + turn (+ attempt number for 429/500, so that a retry can succeed).
 */
export interface Noise {
  /** Seed mixed into every draw. Default 0. */
  seed?: number;
  rate_limit?: number;
  server_error?: number;
  malformed_arguments?: number;
  hallucinated_tool?: number;
}

/** Why a scripted answer says the model stopped (`finish_reason`). */
export type ScriptedFinishReason = 'stop' | 'tool_calls' | 'length' | 'content_filter';

/** One scripted model answer. At least one of `content`, `tool_calls` and `refusal` is set. */
export interface ScenarioTurn {
  /** Assistant text; may hold `{{…}}` templates. */
  content?: string;
  /** Sent as `message.refusal`: the model declines to answer. */
  refusal?: string;
  /**
   * The model's reasoning text, sent as `message.reasoning_content` (the field DeepSeek, Qwen and vLLM
   * use for thinking models); the answer's `content` and calls are unchanged.
   */
  reasoning?: string;
  /** Overrides the answer's `finish_reason` (default: `tool_calls` with calls, else `stop`). */
  finish_reason?: ScriptedFinishReason;
  /** Tool calls made in this answer (several make a parallel-call turn). */
  tool_calls?: ScriptedToolCall[];
  /** Faults applied at this turn. */
  fault?: Fault | Fault[];
  /** Only on the last turn: replay it for every later turn (the "same call forever" failure). */
  repeat?: boolean;
}

/** A scripted conversation, selected by model name or the `x-llm-sim-scenario` header. */
export interface Scenario {
  /** Model name that selects this scenario. */
  name: string;
  description?: string;
  /**
   * Steps answered to planning requests (no tools, `response_format` `json_object` or a `json_schema` named
   * `plan`): titles, or titles with a tool. Other JSON Schema requests are answered from `turns`.
   */
  plan?: Array<string | { title: string; tool?: string }>;
  /** Delay before every answer, in milliseconds. Default 0. */
  latency_ms?: number;
  /** Random faults. */
  noise?: Noise;
  /** Faults applied at every turn (and to planning requests). */
  fault?: Fault | Fault[];
  /** Answers in order; the turn is chosen from the number of assistant messages in the request. */
  turns: ScenarioTurn[];
  /** Answer every (non-planning) turn with random, well-formed tool calls instead of `turns`. */
  random?: RandomAnswers;
  /**
   * Answer every turn as a capable but fallible model (see {@link NoisyModel}) instead of `turns`. The
   * models `sim-noisy` and `sim-noisy-<seed>` are this mode with the default rates.
   */
  noisy?: NoisyModel;
  /**
   * Answers to structured side requests, by the name of the JSON Schema they ask for (e.g.
   * `guardrail_verdict`, a guardrail agent's verdict): such a request is answered with this turn instead
   * of one of `turns`, whatever its turn index; templates read the request (`{{ user }}`: its user text).
   */
  schemas?: Record<string, ScenarioTurn>;
}

/**
 * The seeded noisy model: it picks the tools the request is about, fills their arguments from the user's
 * text and makes the seed documents' mistakes at rates that respond to what the request gives it. Draws
 * are a hash of seed, conversation, step and attempt: the same request always gets the same answer, and
 * two requests that differ only in their hints draw the same numbers (so their difference is the hints').
 */
export interface NoisyModel {
  /** Seed mixed into every draw. Default 0. */
  seed?: number;
  /** Probabilities in [0, 1]; each left out is the default of `NOISY_DEFAULT_RATES`. */
  rates?: NoisyRates;
}

/** The noisy model's mistake rates (per tool call, per argument or per step, as each says). */
export interface NoisyRates {
  /** A call names a near miss of the intended tool (`get_weather` for `query_weather`). Default 0.03. */
  hallucinated_tool?: number;
  /** An enum argument is sent in a form outside the enum (`广州省` for `广州`), no alias hint. Default 0.3. */
  enum_drift?: number;
  /** The same when the schema or description shows aliases or examples for it. Default 0.02. */
  enum_drift_hinted?: number;
  /** A number or boolean argument is sent as a string (`"3"`, `"true"`), no examples. Default 0.2. */
  type_drift?: number;
  /** The same when the tool shows examples. Default 0.02. */
  type_drift_hinted?: number;
  /** A call carries a field the schema does not have, no examples. Default 0.03. */
  unknown_field?: number;
  /** The same when the tool shows examples. Default 0.01. */
  unknown_field_hinted?: number;
  /** After a step of a multi-step task, the model answers instead of doing the next one. Default 0.35. */
  forgotten_step?: number;
  /** The same when the system prompt carries the task stack. Default 0.07. */
  forgotten_step_with_stack?: number;
  /** A failed call is corrected next turn when the error names the problem. Default 0.95. */
  self_heal?: number;
  /** The same when the error does not say what is wrong. Default 0.3. */
  self_heal_unnamed?: number;
}

/** Kinds of mistake the noisy model makes. */
export type NoisyMistakeKind =
  'hallucinated_tool' | 'enum_drift' | 'type_drift' | 'unknown_field' | 'forgotten_step' | 'repeated_mistake';

/** One mistake the noisy model made in an answer, as recorded with the request. */
export interface NoisyMistake {
  kind: NoisyMistakeKind;
  /** The tool the model meant to call. */
  tool: string;
  /** The argument concerned, for argument mistakes. */
  field?: string;
  /** What was sent instead (a tool name or a value). */
  sent?: unknown;
}

/**
 * Random but well-formed answers, for fuzzing an agent loop: tool calls naming offered tools (and
 * some unknown ones) with random JSON arguments, awkward ids, odd finish reasons, refusals. Draws are
 * deterministic: a hash of seed + conversation + turn. Probabilities are in [0, 1].
 */
export interface RandomAnswers {
  /** Seed mixed into every draw. Default 0. */
  seed?: number;
  /** Chance that a turn is a final text answer. Default 0.2. */
  final?: number;
  /** Most tool calls in one turn (at least one is made). Default 4. */
  max_calls?: number;
  /** Chance that a call names a tool that was not offered. Default 0.15. */
  unknown_tool?: number;
  /**
   * Chance that a call's id is an awkward one: missing, empty, a duplicate of an id in this answer or
   * an earlier one, or shaped like an id the platform generates (`call_t<turn>_<i>`). Default 0.3.
   */
  bad_id?: number;
  /** Chance that a call has no `type` field. Default 0.1. */
  missing_type?: number;
  /** Chance that `finish_reason` is drawn from every value instead of fitting the answer. Default 0.1. */
  odd_finish?: number;
  /** Chance that the answer is a refusal. Default 0.03. */
  refusal?: number;
}

/** A fault that was applied to a request. */
export interface AppliedFault {
  type: FaultType;
  source: 'script' | 'noise';
}

/** One chat-completions request as the simulator saw and answered it. */
export interface RecordedRequest {
  /** ISO timestamp of arrival. */
  at: string;
  /** Scenario that answered, or null when none was selected. */
  scenario: string | null;
  /** Turn index played, or null for planning and rejected requests. */
  turn: number | null;
  /** Request headers, lower-cased, without credentials. */
  headers: Record<string, string>;
  /** Parsed request body (undefined when it was not valid JSON). */
  body: unknown;
  /** HTTP status sent, or null when no answer was sent (connection reset, hang). */
  status: number | null;
  /** Response body sent, or null when none was sent. */
  response: unknown;
  faults?: AppliedFault[];
  /** Problems met while playing the turn, e.g. templates that did not resolve. */
  warnings?: string[];
  /** Mistakes the noisy model made in this answer (noisy scenarios only; absent when none). */
  mistakes?: NoisyMistake[];
}
