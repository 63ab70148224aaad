import { inputOf, metadataOf } from './chat-request.js';
import { outputSchemaOfFormat } from './response-format.js';
import { badParam, unsupportedParam } from './openai-error.js';

/** What a Responses API request asks of the door. */
export interface ResponsesRequest {
  agent: string;
  input: string;
  stream: boolean;
  sessionId?: string;
  metadata: Record<string, string>;
  /** `text.format.schema` of a `json_schema` format: the run's output schema. */
  outputSchema?: Record<string, unknown>;
}

/** Fields taken and ignored: an agent's model, its instructions and its settings are its own. */
export const IGNORED_RESPONSES_FIELDS = [
  'instructions',
  'temperature',
  'top_p',
  'max_output_tokens',
  'user',
  'store',
  'service_tier',
  'reasoning',
  'truncation',
  'parallel_tool_calls',
  'include',
  'safety_identifier',
  'prompt_cache_key',
] as const;

/** Fields the door refuses, whatever their value (but `null`, `false` or an empty list). */
const REFUSED_FIELDS: Record<string, string> = {
  tools: 'is not supported: an agent calls its own tools',
  tool_choice: 'is not supported: an agent calls its own tools',
  previous_response_id: 'is not supported: continue a conversation with metadata.session_id',
  conversation: 'is not supported: continue a conversation with metadata.session_id',
  background: 'is not supported: every run is durable; follow it with GET /v1/runs/:id',
  prompt: 'is not supported',
  max_tool_calls: 'is not supported',
  top_logprobs: 'is not supported',
};

const KNOWN = new Set<string>([
  'model',
  'input',
  'stream',
  'metadata',
  'text',
  ...IGNORED_RESPONSES_FIELDS,
  ...Object.keys(REFUSED_FIELDS),
]);

const unset = (v: unknown) =>
  v === undefined || v === null || v === false || (Array.isArray(v) && v.length === 0);

/** A `POST /v1/responses` body read as a run: 400 naming the first field the door cannot honour. */
export function readResponsesRequest(body: unknown): ResponsesRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw badParam('body', 'the body must be a JSON object');
  const b = body as Record<string, unknown>;
  for (const key of Object.keys(b)) {
    if (!KNOWN.has(key))
      throw badParam(key, `Unrecognized request argument supplied: ${key}`, 'unknown_parameter');
    if (key in REFUSED_FIELDS && !unset(b[key])) throw unsupportedParam(key, REFUSED_FIELDS[key]);
  }
  if (typeof b.model !== 'string' || b.model === '') throw badParam('model', 'model must name an agent');
  if (b.stream !== undefined && b.stream !== null && typeof b.stream !== 'boolean')
    throw badParam('stream', 'stream must be a boolean');
  const outputSchema =
    b.text === undefined || b.text === null
      ? undefined
      : outputSchemaOfFormat((b.text as { format?: unknown }).format, 'text.format', false);
  const { sessionId, metadata } = metadataOf(b.metadata);
  let input: string;
  if (typeof b.input === 'string') {
    if (b.input.trim() === '') throw badParam('input', 'input must have text');
    input = b.input;
  } else if (Array.isArray(b.input)) input = inputOf(b.input, sessionId !== undefined, 'input');
  else throw badParam('input', 'input must be a string or a list of messages');
  return {
    agent: b.model,
    input,
    stream: b.stream === true,
    ...(sessionId === undefined ? {} : { sessionId }),
    metadata,
    ...(outputSchema ? { outputSchema } : {}),
  };
}
