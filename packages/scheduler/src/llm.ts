import OpenAI from 'openai';
import type { ChatCompletion, ChatCompletionTool } from 'openai/resources/chat/completions';
import { constants } from '@agent-reach/shared';
import type { ChatMessage } from './runs/run-state.js';

export interface LlmOptions {
  /** OpenAI-compatible base URL (e.g. llm-sim's `http://127.0.0.1:4010/v1`). Default: the OpenAI API. */
  baseURL?: string;
  apiKey: string;
  model: string;
  /** Per-request timeout, in ms. Default 60 000. */
  timeoutMs?: number;
  /** Retries after the first try (429, 5xx, timeouts, connection errors). Default 4. */
  maxRetries?: number;
  /** Output-token cap per turn. Default 2000. */
  maxOutputTokens?: number;
}

export interface LlmClient {
  readonly model: string;
  /** One model turn with the given tools offered. */
  complete(
    messages: ChatMessage[],
    tools: ChatCompletionTool[],
    signal?: AbortSignal,
  ): Promise<ChatCompletion>;
  /** A JSON-object answer with no tools (used for plans). */
  completeJson(messages: ChatMessage[], signal?: AbortSignal): Promise<ChatCompletion>;
}

/**
 * The LLM client. Retries have one owner, the official `openai` SDK: it retries 408/409/429/5xx, timeouts
 * and connection errors with exponential backoff and jitter, honouring `retry-after`/`retry-after-ms`.
 * The loop never retries an LLM call itself.
 */
export function createLlmClient(options: LlmOptions): LlmClient {
  const client = new OpenAI({
    apiKey: options.apiKey,
    ...(options.baseURL ? { baseURL: options.baseURL } : {}),
    timeout: options.timeoutMs ?? constants.DEFAULT_LLM_TIMEOUT_MS,
    maxRetries: options.maxRetries ?? constants.DEFAULT_LLM_MAX_RETRIES,
  });
  const maxTokens = options.maxOutputTokens ?? constants.DEFAULT_MAX_OUTPUT_TOKENS;
  return {
    model: options.model,
    complete: (messages, tools, signal) =>
      client.chat.completions.create(
        {
          model: options.model,
          messages,
          ...(tools.length > 0 ? { tools, tool_choice: 'auto' as const } : {}),
          max_tokens: maxTokens,
        },
        signal ? { signal } : undefined,
      ),
    completeJson: (messages, signal) =>
      client.chat.completions.create(
        { model: options.model, messages, response_format: { type: 'json_object' }, max_tokens: maxTokens },
        signal ? { signal } : undefined,
      ),
  };
}
