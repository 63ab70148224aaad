import { badParam, unsupportedParam } from './openai-error.js';
import { outputSchemaOfFormat } from './response-format.js';

/** What a chat completion request asks of the door. */
export interface ChatRequest {
  /** The agent (`model`). */
  agent: string;
  /** The last user message's text: the run's input. */
  input: string;
  stream: boolean;
  /** `stream_options.include_usage`: a last chunk with the usage. */
  includeUsage: boolean;
  /** `metadata.session_id`: the session the run continues. */
  sessionId?: string;
  /** `metadata` but the session id, kept with the run. */
  metadata: Record<string, string>;
  /** `response_format.json_schema.schema`: the run's output schema. */
  outputSchema?: Record<string, unknown>;
}

/** Fields taken and ignored: sampling settings and caps of a model the agent chooses itself. */
export const IGNORED_CHAT_FIELDS = [
  'temperature',
  'top_p',
  'max_tokens',
  'max_completion_tokens',
  'presence_penalty',
  'frequency_penalty',
  'seed',
  'user',
  'store',
  'service_tier',
  'reasoning_effort',
  'parallel_tool_calls',
] as const;

/** Fields of the OpenAI API the door refuses, whatever their value (but `null`). */
const REFUSED_FIELDS: Record<string, string> = {
  tools: 'is not supported: an agent calls its own tools',
  tool_choice: 'is not supported: an agent calls its own tools',
  functions: 'is not supported: an agent calls its own tools',
  function_call: 'is not supported: an agent calls its own tools',
  audio: 'is not supported: text only',
  prediction: 'is not supported',
  logit_bias: 'is not supported',
  top_logprobs: 'is not supported',
  stop: 'is not supported: an agent answers in full',
  web_search_options: 'is not supported',
};

const KNOWN = new Set<string>([
  'model',
  'messages',
  'stream',
  'stream_options',
  'metadata',
  'n',
  'logprobs',
  'modalities',
  'response_format',
  ...IGNORED_CHAT_FIELDS,
  ...Object.keys(REFUSED_FIELDS),
]);

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** The text of a message's `content`: a string, or text parts (any other part is refused, named). */
export function textOf(content: unknown, param: string): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw badParam(param, `${param} must be a string or an array of text parts`);
  return content
    .map((part: unknown, i) => {
      const type = isObject(part) ? part.type : undefined;
      if (type !== 'text' && type !== 'input_text')
        throw unsupportedParam(
          `${param}[${i}].type`,
          `is ${JSON.stringify(type)}: only text parts are supported`,
        );
      const text = (part as { text?: unknown }).text;
      if (typeof text !== 'string')
        throw badParam(`${param}[${i}].text`, `${param}[${i}].text must be a string`);
      return text;
    })
    .join('');
}

/**
 * The session id and the other metadata entries of a request's `metadata` (strings only). Earlier turns
 * are only taken with a session, whose stored history is what the agent sees.
 */
export function metadataOf(value: unknown): { sessionId?: string; metadata: Record<string, string> } {
  if (value === undefined || value === null) return { metadata: {} };
  if (!isObject(value)) throw badParam('metadata', 'metadata must be an object of strings');
  const metadata: Record<string, string> = {};
  let sessionId: string | undefined;
  for (const [key, v] of Object.entries(value)) {
    if (typeof v !== 'string') throw badParam(`metadata.${key}`, `metadata.${key} must be a string`);
    if (key === 'session_id') sessionId = v;
    else metadata[key] = v;
  }
  return { ...(sessionId === undefined ? {} : { sessionId }), metadata };
}

/**
 * A `POST /v1/chat/completions` body read as a run: 400 naming the first field the door cannot honour.
 * `system` and `developer` messages are taken and ignored (an agent's instructions are its own); the
 * last message must be the user's; earlier user, assistant or tool turns need `metadata.session_id`.
 */
export function readChatRequest(body: unknown): ChatRequest {
  if (!isObject(body)) throw badParam('body', 'the body must be a JSON object');
  for (const key of Object.keys(body)) {
    if (!KNOWN.has(key))
      throw badParam(key, `Unrecognized request argument supplied: ${key}`, 'unknown_parameter');
    if (key in REFUSED_FIELDS && body[key] !== null && body[key] !== undefined)
      throw unsupportedParam(key, REFUSED_FIELDS[key]);
  }
  const { model, messages, stream, stream_options, n, logprobs, modalities } = body;
  if (typeof model !== 'string' || model === '') throw badParam('model', 'model must name an agent');
  if (n !== undefined && n !== null && n !== 1)
    throw unsupportedParam('n', 'must be 1: a run has one answer');
  if (logprobs !== undefined && logprobs !== null && logprobs !== false) throw unsupportedParam('logprobs');
  if (
    modalities !== undefined &&
    modalities !== null &&
    !(Array.isArray(modalities) && modalities.every((m) => m === 'text'))
  )
    throw unsupportedParam('modalities', 'may only be ["text"]');
  const outputSchema = outputSchemaOfFormat(body.response_format, 'response_format', true);
  if (stream !== undefined && stream !== null && typeof stream !== 'boolean')
    throw badParam('stream', 'stream must be a boolean');
  if (stream_options !== undefined && stream_options !== null && !isObject(stream_options))
    throw badParam('stream_options', 'stream_options must be an object');
  const { sessionId, metadata } = metadataOf(body.metadata);
  if (!Array.isArray(messages)) throw badParam('messages', 'messages must be a non-empty array');
  const input = inputOf(messages, sessionId !== undefined, 'messages');
  return {
    agent: model,
    input,
    stream: stream === true,
    includeUsage: stream === true && isObject(stream_options) && stream_options.include_usage === true,
    ...(sessionId === undefined ? {} : { sessionId }),
    metadata,
    ...(outputSchema ? { outputSchema } : {}),
  };
}

/**
 * The run's input from a list of messages (`param` names the list in errors): the last must be a user
 * message with text; `system` and `developer` messages are ignored; earlier turns need a session.
 */
export function inputOf(messages: unknown[], hasSession: boolean, param: string): string {
  if (messages.length === 0) throw badParam(param, `${param} must be a non-empty array`);
  let input = '';
  messages.forEach((message: unknown, i) => {
    const at = `${param}[${i}]`;
    const role = isObject(message) ? message.role : undefined;
    const last = i === messages.length - 1;
    if (isObject(message) && message.type !== undefined && message.type !== 'message')
      throw unsupportedParam(`${at}.type`, `is ${JSON.stringify(message.type)}: only messages are supported`);
    if (role === 'system' || role === 'developer') {
      if (last) throw badParam(`${at}.role`, `${at}.role must be user: the last message is the run's input`);
      return;
    }
    if (!['user', 'assistant', 'tool'].includes(role as string))
      throw badParam(`${at}.role`, `${at}.role must be system, developer, user, assistant or tool`);
    if (last) {
      if (role !== 'user')
        throw badParam(`${at}.role`, `${at}.role must be user: the last message is the run's input`);
      input = textOf((message as { content?: unknown }).content, `${at}.content`);
    } else if (!hasSession)
      throw unsupportedParam(
        at,
        'is an earlier turn: earlier turns are not replayed; continue a conversation with metadata.session_id (the session holds its history)',
      );
  });
  if (input.trim() === '')
    throw badParam(
      `${param}[${messages.length - 1}].content`,
      `${param}[${messages.length - 1}].content must have text`,
    );
  return input;
}
