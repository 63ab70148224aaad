import { invalidRequest, type ErrorReply } from './api-errors.js';
import { TOOL_NAME_PATTERN } from './constants.js';

/** Roles a chat message may have. */
export type ChatRole = 'system' | 'developer' | 'user' | 'assistant' | 'tool';

/** A tool call inside an assistant message of the request. */
export interface ChatToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** A message of a validated request (content is a string, an array of parts, or null). */
export interface ChatMessage {
  role: ChatRole;
  content?: unknown;
  tool_calls?: ChatToolCall[];
  tool_call_id?: string;
}

/** A validated chat-completions request; fields the simulator ignores are kept as they came. */
export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  tools?: unknown[];
  response_format?: { type: string; json_schema?: { name?: string; schema?: unknown; strict?: boolean } };
  max_tokens?: number | null;
  max_completion_tokens?: number | null;
  [key: string]: unknown;
}

type Obj = Record<string, unknown>;
const ROLES: readonly string[] = ['system', 'developer', 'user', 'assistant', 'tool'];

/** Thrown inside this module to stop at the first problem; becomes a 400 answer. */
class Invalid extends Error {
  constructor(
    message: string,
    readonly param: string | null,
  ) {
    super(message);
  }
}

function isObj(value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function checkContent(m: Obj, at: string, nullable: boolean): void {
  const content = m.content;
  if ((content === null || content === undefined) && nullable) return;
  if (typeof content === 'string') return;
  if (!Array.isArray(content)) {
    throw new Invalid(`${at}.content must be a string or an array of content parts`, `${at}.content`);
  }
  content.forEach((part, k) => {
    if (!isObj(part) || typeof part.type !== 'string') {
      throw new Invalid(`${at}.content[${k}] must be an object with a string type`, `${at}.content[${k}]`);
    }
  });
}

function checkToolCalls(calls: unknown, at: string): void {
  if (!Array.isArray(calls) || calls.length === 0) {
    throw new Invalid(`${at}.tool_calls must be a non-empty array`, `${at}.tool_calls`);
  }
  const ids = new Set<string>();
  calls.forEach((call, k) => {
    const p = `${at}.tool_calls[${k}]`;
    if (!isObj(call) || typeof call.id !== 'string' || call.id === '') {
      throw new Invalid(`${p}.id must be a non-empty string`, `${p}.id`);
    }
    if (ids.has(call.id)) throw new Invalid(`${p}.id '${call.id}' is used twice in one message`, `${p}.id`);
    ids.add(call.id);
    if (call.type !== 'function') throw new Invalid(`${p}.type must be 'function'`, `${p}.type`);
    const fn = call.function;
    if (!isObj(fn) || typeof fn.name !== 'string' || typeof fn.arguments !== 'string') {
      throw new Invalid(`${p}.function must have a string name and a string arguments`, `${p}.function`);
    }
  });
}

function checkMessage(m: unknown, i: number): void {
  const at = `messages[${i}]`;
  if (!isObj(m)) throw new Invalid(`${at} must be an object`, at);
  if (typeof m.role !== 'string' || !ROLES.includes(m.role)) {
    const got = typeof m.role === 'string' ? `'${m.role}'` : String(m.role);
    throw new Invalid(`${at}.role must be one of ${ROLES.join(', ')} (got ${got})`, `${at}.role`);
  }
  if (m.role === 'assistant') {
    const hasCalls = m.tool_calls !== undefined && m.tool_calls !== null;
    if (hasCalls) checkToolCalls(m.tool_calls, at);
    if (!hasCalls && (m.content === undefined || m.content === null)) {
      throw new Invalid(`${at}.content is required unless tool_calls is set`, `${at}.content`);
    }
    checkContent(m, at, true);
    return;
  }
  if (m.role === 'tool' && (typeof m.tool_call_id !== 'string' || m.tool_call_id === '')) {
    throw new Invalid(`${at}.tool_call_id must be a non-empty string`, `${at}.tool_call_id`);
  }
  checkContent(m, at, false);
}

/** The tool calls of the latest assistant message, while tool messages answer them. */
interface OpenCalls {
  index: number;
  pending: string[];
  answered: Map<string, number>;
}

function closeCalls(open: OpenCalls | null, before: string): void {
  if (open === null || open.pending.length === 0) return;
  const ids = open.pending.map((id) => `'${id}'`).join(', ');
  const p = `messages[${open.index}].tool_calls`;
  throw new Invalid(`${p}: tool call(s) ${ids} not answered by tool messages before ${before}`, p);
}

function answerCall(open: OpenCalls | null, everAsked: Set<string>, id: string, i: number): void {
  const at = `messages[${i}]`;
  const param = `${at}.tool_call_id`;
  if (open === null) {
    if (everAsked.has(id)) {
      throw new Invalid(
        `${at}: the tool message answering '${id}' must directly follow the assistant message that made the call (or another tool message)`,
        `${at}.role`,
      );
    }
    throw new Invalid(
      `${param} '${id}' does not answer any tool_calls of an earlier assistant message`,
      param,
    );
  }
  const earlier = open.answered.get(id);
  if (earlier !== undefined)
    throw new Invalid(`${param} '${id}' was already answered by messages[${earlier}]`, param);
  if (!open.pending.includes(id)) {
    throw new Invalid(
      `${param} '${id}' does not answer any tool_calls of the preceding assistant message messages[${open.index}]`,
      param,
    );
  }
  open.pending = open.pending.filter((p) => p !== id);
  open.answered.set(id, i);
}

/** Every tool call must be answered, by tool messages that directly follow the asking message. */
function checkToolPairing(messages: ChatMessage[]): void {
  const everAsked = new Set<string>();
  let open: OpenCalls | null = null;
  for (const [i, m] of messages.entries()) {
    if (m.role === 'tool') {
      answerCall(open, everAsked, m.tool_call_id ?? '', i);
      continue;
    }
    closeCalls(open, `messages[${i}] (${m.role})`);
    open = null;
    if (m.role === 'assistant' && m.tool_calls !== undefined && m.tool_calls !== null) {
      const ids = m.tool_calls.map((c) => c.id);
      ids.forEach((id) => everAsked.add(id));
      open = { index: i, pending: ids, answered: new Map() };
    }
  }
  closeCalls(open, 'the end of messages');
}

function checkTools(tools: unknown): string[] {
  if (!Array.isArray(tools) || tools.length === 0)
    throw new Invalid('tools must be a non-empty array', 'tools');
  return tools.map((tool, i) => {
    const at = `tools[${i}]`;
    if (!isObj(tool)) throw new Invalid(`${at} must be an object`, at);
    if (tool.type !== 'function') throw new Invalid(`${at}.type must be 'function'`, `${at}.type`);
    const fn = tool.function;
    if (!isObj(fn)) throw new Invalid(`${at}.function must be an object`, `${at}.function`);
    if (typeof fn.name !== 'string' || !TOOL_NAME_PATTERN.test(fn.name)) {
      const got = typeof fn.name === 'string' ? `'${fn.name}'` : String(fn.name);
      throw new Invalid(
        `${at}.function.name must match ${TOOL_NAME_PATTERN.source} (got ${got})`,
        `${at}.function.name`,
      );
    }
    if (fn.description !== undefined && typeof fn.description !== 'string') {
      throw new Invalid(`${at}.function.description must be a string`, `${at}.function.description`);
    }
    if (fn.parameters !== undefined && (!isObj(fn.parameters) || fn.parameters.type !== 'object')) {
      throw new Invalid(
        `${at}.function.parameters must be a JSON Schema object with type 'object'`,
        `${at}.function.parameters`,
      );
    }
    return fn.name;
  });
}

function checkToolChoice(choice: unknown, toolNames: string[] | null): void {
  if (toolNames === null)
    throw new Invalid('tool_choice is only allowed when tools are specified', 'tool_choice');
  if (choice === 'none' || choice === 'auto' || choice === 'required') return;
  if (isObj(choice) && choice.type === 'function' && isObj(choice.function)) {
    const name = choice.function.name;
    if (typeof name === 'string' && toolNames.includes(name)) return;
    throw new Invalid(`tool_choice names function '${String(name)}', which is not in tools`, 'tool_choice');
  }
  throw new Invalid(
    "tool_choice must be 'none', 'auto', 'required' or { type: 'function', function: { name } }",
    'tool_choice',
  );
}

function checkOptions(b: Obj): void {
  if (b.stream !== undefined && b.stream !== null && typeof b.stream !== 'boolean')
    throw new Invalid('stream must be a boolean', 'stream');
  const so = b.stream_options;
  if (so !== undefined && so !== null) {
    if (b.stream !== true)
      throw new Invalid('stream_options is only allowed when stream is true', 'stream_options');
    if (!isObj(so)) throw new Invalid('stream_options must be an object', 'stream_options');
  }
  if (b.n !== undefined && b.n !== null && b.n !== 1)
    throw new Invalid('n must be 1: llm-sim answers one choice', 'n');
  for (const key of ['max_tokens', 'max_completion_tokens']) {
    const v = b[key];
    if (v !== undefined && v !== null && !(typeof v === 'number' && Number.isInteger(v) && v > 0)) {
      throw new Invalid(`${key} must be a positive integer (got ${JSON.stringify(v)})`, key);
    }
  }
  const rf = b.response_format;
  if (rf !== undefined && rf !== null) {
    if (!isObj(rf) || !['text', 'json_object', 'json_schema'].includes(String(rf.type))) {
      throw new Invalid(
        "response_format.type must be 'text', 'json_object' or 'json_schema'",
        'response_format.type',
      );
    }
    if (rf.type === 'json_schema' && !(isObj(rf.json_schema) && typeof rf.json_schema.name === 'string')) {
      throw new Invalid('response_format.json_schema.name is required', 'response_format.json_schema.name');
    }
  }
}

/** Checks a chat-completions body the way the real API does; a failure is a ready 400 answer. */
export function validateChatRequest(
  body: unknown,
): { ok: true; request: ChatRequest } | { ok: false; error: ErrorReply } {
  try {
    if (!isObj(body)) throw new Invalid('the request body must be a JSON object', null);
    if (typeof body.model !== 'string' || body.model === '') {
      throw new Invalid('you must provide a model parameter (a non-empty string)', 'model');
    }
    if (!Array.isArray(body.messages) || body.messages.length === 0) {
      throw new Invalid('messages must be a non-empty array', 'messages');
    }
    body.messages.forEach(checkMessage);
    checkToolPairing(body.messages as ChatMessage[]);
    const hasTools = body.tools !== undefined && body.tools !== null;
    const toolNames = hasTools ? checkTools(body.tools) : null;
    if (body.tool_choice !== undefined && body.tool_choice !== null)
      checkToolChoice(body.tool_choice, toolNames);
    checkOptions(body);
    return { ok: true, request: body as ChatRequest };
  } catch (err) {
    if (!(err instanceof Invalid)) throw err;
    return { ok: false, error: invalidRequest(err.message, err.param) };
  }
}
