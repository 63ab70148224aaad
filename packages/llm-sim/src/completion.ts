import { randomBytes } from 'node:crypto';
import { CHARS_PER_TOKEN } from './constants.js';
import type { ChatRequest } from './request-validation.js';

/** Why the simulated model stopped. */
export type FinishReason = 'stop' | 'tool_calls' | 'length' | 'content_filter';

/** A tool call as sent; scripts and random answers may leave out `id` or `type` on purpose. */
export interface SentToolCall {
  id?: string;
  type?: string;
  function: { name: string; arguments: string };
}

/** A ChatCompletion as the API sends it (non-streaming, one choice). */
export interface ChatCompletionBody {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  system_fingerprint: string;
  service_tier: 'default';
  choices: [
    {
      index: 0;
      message: {
        role: 'assistant';
        content: string | null;
        refusal: string | null;
        /** The reasoning text of a thinking model, when the turn scripts one. */
        reasoning_content?: string;
        annotations: [];
        tool_calls?: SentToolCall[];
      };
      finish_reason: FinishReason;
      logprobs: null;
    },
  ];
  usage: {
    prompt_tokens: number;
    completion_tokens: number;
    total_tokens: number;
    prompt_tokens_details: { cached_tokens: 0 };
    completion_tokens_details: { reasoning_tokens: 0 };
  };
}

/** Approximate token count: one token per {@link CHARS_PER_TOKEN} characters. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / CHARS_PER_TOKEN);
}

/** The completion-token limit of a request (`max_completion_tokens` wins over `max_tokens`). */
export function tokenLimit(request: ChatRequest): number | undefined {
  return request.max_completion_tokens ?? request.max_tokens ?? undefined;
}

/** The answer of a turn before it is wrapped into a ChatCompletion. */
export interface Answer {
  content: string | null;
  toolCalls: SentToolCall[];
  /** Sent as `message.refusal`. */
  refusal?: string;
  /** Sent as `message.reasoning_content`. */
  reasoning?: string;
  /** Overrides the finish reason the answer would get. */
  finishReason?: FinishReason;
}

/**
 * Builds the ChatCompletion. When the answer's content exceeds the token limit it is cut to the
 * limit, its tool calls are dropped (the model ran out of tokens before emitting them) and
 * finish_reason is 'length'.
 */
export function buildCompletion(request: ChatRequest, answer: Answer): ChatCompletionBody {
  let { content, toolCalls } = answer;
  let finishReason: FinishReason = answer.finishReason ?? (toolCalls.length > 0 ? 'tool_calls' : 'stop');
  const limit = tokenLimit(request);
  if (limit !== undefined && content !== null && estimateTokens(content) > limit) {
    content = content.slice(0, limit * CHARS_PER_TOKEN);
    toolCalls = [];
    finishReason = 'length';
  }
  const promptTokens = estimateTokens(JSON.stringify({ messages: request.messages, tools: request.tools }));
  const completionTokens = estimateTokens(
    (content ?? '') + (toolCalls.length > 0 ? JSON.stringify(toolCalls) : ''),
  );
  const message: ChatCompletionBody['choices'][0]['message'] = {
    role: 'assistant',
    content,
    refusal: answer.refusal ?? null,
    annotations: [],
    ...(answer.reasoning === undefined ? {} : { reasoning_content: answer.reasoning }),
  };
  if (toolCalls.length > 0) message.tool_calls = toolCalls;
  return {
    id: `chatcmpl-${randomBytes(15).toString('base64url')}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: request.model,
    system_fingerprint: 'fp_llm_sim',
    service_tier: 'default',
    choices: [{ index: 0, message, finish_reason: finishReason, logprobs: null }],
    usage: {
      prompt_tokens: promptTokens,
      completion_tokens: completionTokens,
      total_tokens: promptTokens + completionTokens,
      prompt_tokens_details: { cached_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 0 },
    },
  };
}
