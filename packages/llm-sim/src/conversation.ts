import { createHash } from 'node:crypto';
import { FOLDED_TURNS_PATTERN } from './constants.js';
import type { ChatMessage, ChatRequest } from './request-validation.js';

/** What `{{…}}` templates can read from a conversation. */
export interface TemplateContext {
  /** Parsed content of the latest tool message answering a call, by the called tool's name. */
  results: Record<string, unknown>;
  /** Parsed content of the latest tool message, if any. */
  last: unknown;
  /** Text of the latest user message ('' when none). */
  user: string;
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** The text of a message's content: the string itself, or its text parts joined. */
export function messageText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((part: unknown) => {
      const text = typeof part === 'object' && part !== null ? (part as { text?: unknown }).text : undefined;
      return typeof text === 'string' ? text : '';
    })
    .join('');
}

/**
 * Index of the turn to play, derived from the request alone so a repeated request gets the same
 * answer: one per assistant message, plus every `"folded_turns": N` that compaction left in the
 * system, developer or user messages.
 */
export function turnIndex(messages: readonly ChatMessage[]): number {
  let turn = 0;
  for (const m of messages) {
    if (m.role === 'assistant') turn += 1;
    if (m.role === 'system' || m.role === 'developer' || m.role === 'user') {
      for (const match of messageText(m.content).matchAll(FOLDED_TURNS_PATTERN)) turn += Number(match[1]);
    }
  }
  return turn;
}

/** Identifies a conversation: the given name, else a hash of the scenario and the first user message. */
export function conversationKey(scenario: string, messages: readonly ChatMessage[], given?: string): string {
  if (given !== undefined && given !== '') return given;
  const firstUser = messages.find((m) => m.role === 'user');
  return sha256(`${scenario}\0${messageText(firstUser?.content)}`).slice(0, 32);
}

/** A tool-call id that is the same for the same conversation, turn and call index. */
export function toolCallId(conversation: string, turn: number, index: number): string {
  return `call_${sha256(`${conversation}\0${turn}\0${index}`).slice(0, 24)}`;
}

/**
 * True for planning requests: JSON output asked for (`json_object`, or a `json_schema` named `plan`) and no
 * tools offered. A request for another JSON Schema is a structured-output turn, played from `turns`.
 */
export function isPlanRequest(request: ChatRequest): boolean {
  const format = request.response_format;
  const noTools = request.tools === undefined || request.tools === null || request.tools.length === 0;
  const planFormat =
    format?.type === 'json_object' || (format?.type === 'json_schema' && format.json_schema?.name === 'plan');
  return planFormat && noTools;
}

function parseToolContent(content: unknown): unknown {
  const text = messageText(content);
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** Collects tool outputs (matched to their calls by `tool_call_id`) and the latest user text. */
export function templateContext(messages: readonly ChatMessage[]): TemplateContext {
  const nameOfCall = new Map<string, string>();
  const out: TemplateContext = { results: {}, last: undefined, user: '' };
  for (const m of messages) {
    if (m.role === 'user') out.user = messageText(m.content);
    for (const call of m.tool_calls ?? []) nameOfCall.set(call.id, call.function.name);
    if (m.role !== 'tool') continue;
    const value = parseToolContent(m.content);
    out.last = value;
    const name = nameOfCall.get(m.tool_call_id ?? '');
    if (name !== undefined) out.results[name] = value;
  }
  return out;
}
