import { fileURLToPath } from 'node:url';
import type { NoisyRates } from './types.js';

/** Host the simulator binds to when none is given. */
export const DEFAULT_HOST = '127.0.0.1';
/** Port the CLI listens on when none is given (the library default is 0: a random free port). */
export const DEFAULT_CLI_PORT = 4010;
/** Largest request body accepted, in bytes (prompts with big tool outputs are large). */
export const MAX_BODY_BYTES = 32 * 1024 * 1024;

/** Header that selects a scenario by name, taking precedence over the request's `model`. */
export const SCENARIO_HEADER = 'x-llm-sim-scenario';
/** Header that names the conversation, instead of the hash of its first user message. */
export const CONVERSATION_HEADER = 'x-llm-sim-conversation';
/** Request headers never recorded. */
export const UNRECORDED_HEADERS: readonly string[] = ['authorization', 'api-key'];

/** Content answered once a scenario has run out of turns (and its last turn does not repeat). */
export const FINAL_CONTENT = 'Done.';
/** Characters counted as one token when approximating usage and `max_tokens`. */
export const CHARS_PER_TOKEN = 4;

/** `retry-after` of a rate-limit fault when the script gives none, in seconds. */
export const DEFAULT_RETRY_AFTER_S = 1;
/** How many requests a rate_limit / server_error / connection_reset / hang fault fails by default. */
export const DEFAULT_TRANSPORT_FAULT_TIMES = 1;
/** HTTP status of a server_error fault when the script gives none. */
export const DEFAULT_SERVER_ERROR_STATUS = 500;

/** Matches the count the platform's context compaction writes when it folds early turns away. */
export const FOLDED_TURNS_PATTERN = /"folded_turns"\s*:\s*(\d+)/g;
/** Valid function-tool names, as the real API checks them. */
export const TOOL_NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/;

/** The scenarios shipped with the package (`scenarios/` beside `src/` and `dist/`). */
export const BUNDLED_SCENARIOS_DIR = fileURLToPath(new URL('../scenarios', import.meta.url));

/** Characters of content, reasoning or tool arguments sent in one streamed chunk (at least). */
export const STREAM_PIECE_CHARS = 6;
/** Most chunks one text is streamed in: longer texts get longer pieces (a 5 MB argument is not 800 000 chunks). */
export const MAX_STREAM_PIECES = 64;
/** Chunks a stream fault lets through before it strikes, when the script gives none. */
export const DEFAULT_STREAM_FAULT_AFTER_CHUNKS = 2;

/** Model names answered by the noisy model with default rates: `sim-noisy`, `sim-noisy-<seed>`. */
export const NOISY_MODEL_PATTERN = /^sim-noisy(?:-(\d{1,15}))?$/;
/**
 * The noisy model's default mistake rates, calibrated on the seed documents' measurements: a call with
 * one enum argument is wrong about 34 % of the time without aliases or examples and 6 % with them (the
 * seeds' 35 % → 6 %); a three-step task completes about 42 % of the time without the task stack and
 * 86 % with it (the seeds' 40 % → 85 %).
 */
export const NOISY_DEFAULT_RATES: Required<NoisyRates> = {
  hallucinated_tool: 0.03,
  enum_drift: 0.3,
  enum_drift_hinted: 0.02,
  type_drift: 0.2,
  type_drift_hinted: 0.02,
  unknown_field: 0.03,
  unknown_field_hinted: 0.01,
  forgotten_step: 0.35,
  forgotten_step_with_stack: 0.07,
  self_heal: 0.95,
  self_heal_unnamed: 0.3,
};
/** The noisy model's name without a seed (seed 0), listed by `GET /v1/models`. */
export const NOISY_MODEL = 'sim-noisy';
